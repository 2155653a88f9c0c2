package io.ringmq.pipeline.auth;

import io.ringmq.protocol.ReasonCode;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;

import static io.ringmq.pipeline.auth.ScramClient.ascii;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * SCRAM-SHA-256 as an MQTT 5.0 enhanced-authentication method: RFC 7677's test vector, full exchanges against a
 * client written apart, unknown users that look like known ones, and malformed messages that fail cleanly.
 */
class ScramSha256Test
{
    private static final String RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO";
    private static final String RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    private static final String RFC_NONCE = RFC_CLIENT_NONCE + RFC_SERVER_NONCE;
    private static final String RFC_SALT = "W22ZaJ0SNY7soEsUEjb6gQ==";
    private static final String RFC_CLIENT_FINAL =
        "c=biws,r=" + RFC_NONCE + ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    private static final String RFC_SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
    private static final byte[] SECRET = ascii("a fixed secret for unknown users");

    private final Map<String, ScramCredential> users = new HashMap<>();
    private final ScramSha256 rfcMethod = new ScramSha256(users::get, SECRET, 4096, () -> RFC_SERVER_NONCE);

    ScramSha256Test()
    {
        users.put("user", ScramCredential.create("pencil", Base64.getDecoder().decode(RFC_SALT), 4096));
    }

    @Test
    @DisplayName("RFC 7677 section 3: the test vector, byte for byte")
    void rfc7677TestVector()
    {
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(exchange.step(ascii("n,,n=user,r=" + RFC_CLIENT_NONCE))).isEqualTo(AuthExchange.CONTINUE);
        assertThat(text(exchange.serverData())).isEqualTo("r=" + RFC_NONCE + ",s=" + RFC_SALT + ",i=4096");

        final ScramClient client = new ScramClient("user", "pencil", RFC_CLIENT_NONCE);
        client.first();
        assertThat(text(client.last(exchange.serverData()))).as("the test's client agrees with the RFC")
            .isEqualTo(RFC_CLIENT_FINAL);

        assertThat(exchange.step(ascii(RFC_CLIENT_FINAL))).isEqualTo(AuthExchange.SUCCESS);
        assertThat(text(exchange.serverData())).isEqualTo(RFC_SERVER_FINAL);
        assertThat(exchange.userName()).isEqualTo("user");
        assertThat(exchange.isDone()).isTrue();
        assertThat(exchange.stepCount()).isEqualTo(2);
    }

    @Test
    @DisplayName("a full exchange with random nonces, the server's signature verified by the client")
    void fullExchange()
    {
        users.put("alice", ScramCredential.create("correct horse", 4096));
        final ScramSha256 method = new ScramSha256(users::get);
        assertThat(method.name()).isEqualTo("SCRAM-SHA-256");
        final ScramClient client = new ScramClient("alice", "correct horse", "cNonce123");
        final AuthExchange exchange = method.newExchange();

        assertThat(ScramClient.run(client, exchange)).isEqualTo(AuthExchange.SUCCESS);
        assertThat(client.verifies(exchange.serverData())).isTrue();
        assertThat(exchange.userName()).isEqualTo("alice");
    }

    @Test
    @DisplayName("the Authentication Data read in place from a packet buffer")
    void stepsFromABuffer()
    {
        final ScramClient client = new ScramClient("user", "pencil", RFC_CLIENT_NONCE);
        final AuthExchange exchange = rfcMethod.newExchange();
        final byte[] first = client.first();
        final UnsafeBuffer packet = new UnsafeBuffer(new byte[first.length + 10]);
        packet.putBytes(7, first);
        assertThat(exchange.step(packet, 7, first.length)).isEqualTo(AuthExchange.CONTINUE);
        final byte[] last = client.last(exchange.serverData());
        assertThat(exchange.step(new UnsafeBuffer(last), 0, last.length)).isEqualTo(AuthExchange.SUCCESS);
        assertThat(text(exchange.serverData())).isEqualTo(RFC_SERVER_FINAL);
    }

    @Test
    @DisplayName("a user name with ',' and '=' travels escaped as =2C and =3D and is decoded for the lookup")
    void escapedUserName()
    {
        users.put("a,b=c", ScramCredential.create("pw", 4096));
        final ScramClient client = new ScramClient("a,b=c", "pw", "n0nce");
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(text(client.first())).isEqualTo("n,,n=a=2Cb=3Dc,r=n0nce");
        assertThat(ScramClient.run(client, exchange)).isEqualTo(AuthExchange.SUCCESS);
        assertThat(exchange.userName()).isEqualTo("a,b=c");
    }

    @Test
    @DisplayName("gs2 header \"y,,\" (client could bind, server does not offer it) is accepted with c=eSws")
    void clientSupportsButDoesNotUseChannelBinding()
    {
        final ScramClient client = new ScramClient("user", "pencil", "abc", "y,,");
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(exchange.step(client.first())).isEqualTo(AuthExchange.CONTINUE);
        final byte[] last = client.last(exchange.serverData());
        assertThat(text(last)).startsWith("c=eSws,");
        assertThat(exchange.step(last)).isEqualTo(AuthExchange.SUCCESS);
    }

    @Test
    @DisplayName("an authzid equal to the user is accepted; a different one is refused")
    void authorizationIdentity()
    {
        final ScramClient same = new ScramClient("user", "pencil", "abc", "n,a=user,");
        final AuthExchange ok = rfcMethod.newExchange();
        assertThat(ScramClient.run(same, ok)).isEqualTo(AuthExchange.SUCCESS);

        final AuthExchange other = rfcMethod.newExchange();
        assertThat(other.step(ascii("n,a=admin,n=user,r=abc"))).isEqualTo(ReasonCode.NOT_AUTHORIZED);
    }

    @Test
    @DisplayName("a CONNECT without data gets an empty AUTH 0x18, then the client-first comes in an AUTH")
    void emptyInitialResponse()
    {
        final ScramClient client = new ScramClient("user", "pencil", "abc");
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(exchange.step((byte[])null)).isEqualTo(AuthExchange.CONTINUE);
        assertThat(exchange.serverData()).isEmpty();
        assertThat(ScramClient.run(client, exchange)).isEqualTo(AuthExchange.SUCCESS);

        final AuthExchange twice = rfcMethod.newExchange();
        assertThat(twice.step(new byte[0])).isEqualTo(AuthExchange.CONTINUE);
        assertThat(twice.step(new byte[0])).as("only the first step may be empty").isEqualTo(ReasonCode.NOT_AUTHORIZED);
    }

    @Test
    @DisplayName("a wrong password fails with 0x86 and no server-final")
    void wrongPassword()
    {
        final ScramClient client = new ScramClient("user", "pencil!", "abc");
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(ScramClient.run(client, exchange)).isEqualTo(ReasonCode.BAD_USER_NAME_OR_PASSWORD);
        assertThat(exchange.serverData()).isNull();
        assertThat(exchange.userName()).isNull();
        assertThat(exchange.isDone()).isTrue();
    }

    @Test
    @DisplayName("an unknown user runs the whole exchange with the same message shapes and fails as a wrong password")
    void unknownUserLooksLikeAKnownOne()
    {
        final String known = serverFirst("user", "abc");
        final String unknown = serverFirst("mallory", "abc");
        final String pattern = "r=abc" + Pattern.quote(RFC_SERVER_NONCE) + ",s=[A-Za-z0-9+/]{22}==,i=4096";
        assertThat(known).matches(pattern);
        assertThat(unknown).matches(pattern);
        assertThat(serverFirst("mallory", "xyz")).as("the same fake salt for the same name")
            .endsWith(unknown.substring(unknown.indexOf(",s=")));
        assertThat(serverFirst("trudy", "abc")).as("another name, another salt").isNotEqualTo(unknown);
        assertThat(new ScramSha256(users::get, ascii("another secret"), 4096, () -> RFC_SERVER_NONCE)
            .fakeCredential("mallory").salt()).as("the salt depends on the secret")
            .isNotEqualTo(rfcMethod.fakeCredential("mallory").salt());

        final ScramClient client = new ScramClient("mallory", "pencil", "abc");
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(ScramClient.run(client, exchange)).isEqualTo(ReasonCode.BAD_USER_NAME_OR_PASSWORD);
        assertThat(exchange.serverData()).isNull();
    }

    @Test
    @DisplayName("a user whose entry is $7$ (no SCRAM keys) is treated as unknown")
    void userWithoutScramCredential()
    {
        final Map<String, PasswordHash> file = Map.of("bob", PasswordHash.create("pw", 1000));
        final ScramSha256 method = new ScramSha256(
            (name) -> file.containsKey(name) ? file.get(name).scram() : null, SECRET, 4096, () -> "s");
        final ScramClient client = new ScramClient("bob", "pw", "abc");
        final AuthExchange exchange = method.newExchange();
        assertThat(ScramClient.run(client, exchange)).isEqualTo(ReasonCode.BAD_USER_NAME_OR_PASSWORD);
    }

    @ParameterizedTest(name = "client-first \"{0}\"")
    @ValueSource(strings = {
        "p=tls-server-end-point,,n=user,r=abc", // channel binding
        "n", "n,", "n,,", "x,,n=user,r=abc", "nn,n=user,r=abc", "n,b=user,n=user,r=abc",
        "n,,r=abc", "n,,n=user", "n,,n=user,r=", "n,,n=,r=abc", "n,,r=abc,n=user",
        "n,,m=ext,n=user,r=abc", // a mandatory extension
        "n,,n=us=2Xer,r=abc", "n,,n=user=,r=abc", // bad escapes
        "n,,n=user,r=abc,", "n,,n=user,r=abc,1=x", "n,,n=user,r=abc,xy", // bad extensions
        "n,,n=user,r=a\tb", "n,,n=\u00fcser,r=abc", "n,,n=user,r=abc\u0000"
    })
    @DisplayName("a malformed client-first fails cleanly")
    void malformedClientFirst(final String message)
    {
        final AuthExchange exchange = rfcMethod.newExchange();
        final int code = exchange.step(message.getBytes(StandardCharsets.UTF_8));
        assertThat(code).isGreaterThanOrEqualTo(ReasonCode.UNSPECIFIED_ERROR);
        assertThat(exchange.outcome()).isEqualTo(code);
        assertThat(exchange.serverData()).isNull();
        assertThat(exchange.step(ascii("n,,n=user,r=abc"))).as("failure is sticky")
            .isEqualTo(ReasonCode.NOT_AUTHORIZED);
    }

    @Test
    @DisplayName("an extension after the nonce is ignored")
    void clientFirstExtension()
    {
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(exchange.step(ascii("n,,n=user,r=abc,x=whatever"))).isEqualTo(AuthExchange.CONTINUE);
    }

    @ParameterizedTest(name = "client-final \"{0}\"")
    @ValueSource(strings = {
        "", "c=biws,r=NONCE", "c=biws,r=NONCE,p=", "c=biws,r=NONCE,p=!!!not base64!!!",
        "c=biws,r=NONCE,p=AAAA", // a proof of the wrong length
        "c=biws,r=abcWRONG,p=PROOF", "c=biws,r=abc,p=PROOF", "c=biws,p=PROOF", "r=NONCE,p=PROOF",
        "c=eSws,r=NONCE,p=PROOF", // the gs2 header was "n,,", not "y,,"
        "c=cD10bHMtdW5pcXVlLCw=,r=NONCE,p=PROOF", // "p=tls-unique,,"
        "c=***,r=NONCE,p=PROOF", "c=biws,r=NONCE,1=x,p=PROOF", "c=biws,r=NONCE,p=PROOF,x=trailing",
        "p=PROOF,c=biws,r=NONCE"
    })
    @DisplayName("a malformed client-final fails cleanly")
    void malformedClientFinal(final String template)
    {
        final ScramClient client = new ScramClient("user", "pencil", "abc");
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(exchange.step(client.first())).isEqualTo(AuthExchange.CONTINUE);
        final String good = text(client.last(exchange.serverData()));
        final String proof = good.substring(good.indexOf(",p=") + 3);
        final String message = template.replace("NONCE", "abc" + RFC_SERVER_NONCE).replace("PROOF", proof);
        final int code = exchange.step(ascii(message));
        assertThat(code).isGreaterThanOrEqualTo(ReasonCode.UNSPECIFIED_ERROR);
        assertThat(exchange.serverData()).isNull();
        assertThat(exchange.userName()).isNull();
    }

    @Test
    @DisplayName("data over the limit fails before it is copied, from an array or a buffer")
    void oversizedData()
    {
        final byte[] huge = new byte[ScramSha256Exchange.MAX_DATA_LENGTH + 1];
        Arrays.fill(huge, (byte)'a');
        assertThat(rfcMethod.newExchange().step(huge)).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(rfcMethod.newExchange().step(new UnsafeBuffer(new byte[16]), 0, Integer.MAX_VALUE))
            .isEqualTo(ReasonCode.NOT_AUTHORIZED);

        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(exchange.step(ascii("n,,n=user,r=abc"))).isEqualTo(AuthExchange.CONTINUE);
        assertThat(exchange.step(huge)).isEqualTo(ReasonCode.NOT_AUTHORIZED);
    }

    @Test
    @DisplayName("a step after success, and a client that keeps sending AUTH, fail")
    void extraSteps()
    {
        final ScramClient client = new ScramClient("user", "pencil", "abc");
        final AuthExchange done = rfcMethod.newExchange();
        done.step(client.first());
        assertThat(done.step(client.last(done.serverData()))).isEqualTo(AuthExchange.SUCCESS);
        assertThat(done.step(ascii("c=biws"))).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(done.userName()).as("a failed step takes the success back").isNull();

        final AuthExchange endless = new AuthExchange(4, 16)
        {
            protected int onStep(final int step, final byte[] data)
            {
                return proceed(data);
            }
        };
        for (int i = 0; i < 4; i++)
        {
            assertThat(endless.step(ascii("more"))).isEqualTo(AuthExchange.CONTINUE);
        }
        assertThat(endless.step(ascii("more"))).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(endless.stepCount()).isEqualTo(5);
    }

    @Test
    @DisplayName("a method that throws, or answers without succeed/proceed/fail, fails closed")
    void misbehavingMethod()
    {
        final AuthExchange throwing = new AuthExchange(2, 16)
        {
            protected int onStep(final int step, final byte[] data)
            {
                throw new IllegalStateException("boom");
            }
        };
        assertThat(throwing.step(ascii("x"))).isEqualTo(ReasonCode.NOT_AUTHORIZED);

        final AuthExchange lying = new AuthExchange(2, 16)
        {
            protected int onStep(final int step, final byte[] data)
            {
                return AuthExchange.SUCCESS;
            }
        };
        assertThat(lying.step(ascii("x"))).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(lying.userName()).isNull();
    }

    @Test
    @DisplayName("methods are found by their exact name; an unknown one is null (CONNACK 0x8C)")
    void methodsByName()
    {
        final AuthMethods methods = new AuthMethods(rfcMethod);
        assertThat(methods.find("SCRAM-SHA-256")).isSameAs(rfcMethod);
        assertThat(methods.newExchange("SCRAM-SHA-256")).isNotNull();
        assertThat(methods.find("scram-sha-256")).isNull();
        assertThat(methods.newExchange("SCRAM-SHA-1")).isNull();
        assertThat(methods.find(null)).isNull();
        assertThat(AuthMethods.NONE.isEmpty()).isTrue();
        assertThat(AuthMethods.NONE.find("SCRAM-SHA-256")).isNull();
        assertThatThrownBy(() -> new AuthMethods(rfcMethod, new ScramSha256(users::get)))
            .isInstanceOf(IllegalArgumentException.class);
    }

    private String serverFirst(final String user, final String clientNonce)
    {
        final AuthExchange exchange = rfcMethod.newExchange();
        assertThat(exchange.step(ascii("n,,n=" + user + ",r=" + clientNonce))).isEqualTo(AuthExchange.CONTINUE);
        return text(exchange.serverData());
    }

    private static String text(final byte[] bytes)
    {
        return new String(bytes, StandardCharsets.US_ASCII);
    }
}
