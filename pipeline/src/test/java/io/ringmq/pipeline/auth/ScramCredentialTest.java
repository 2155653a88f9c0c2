package io.ringmq.pipeline.auth;

import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;

import static io.ringmq.pipeline.auth.ScramClient.ascii;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * SCRAM-SHA-256 credentials in a password file beside Mosquitto's {@code $7$} entries, and the plain-password
 * check against them.
 */
class ScramCredentialTest
{
    private static final String KEY = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="; // 32 bytes

    @TempDir
    Path directory;

    @Test
    @DisplayName("RFC 7677's credential: derived, encoded, parsed back, and the plain password checked")
    void rfcCredential()
    {
        final byte[] salt = Base64.getDecoder().decode("W22ZaJ0SNY7soEsUEjb6gQ==");
        final ScramCredential credential = ScramCredential.create("pencil", salt, 4096);
        final String encoded = credential.encode();
        assertThat(encoded).startsWith("$scram-sha-256$4096$W22ZaJ0SNY7soEsUEjb6gQ==$");
        final ScramCredential parsed = ScramCredential.parse(encoded);
        assertThat(parsed.encode()).isEqualTo(encoded);
        assertThat(parsed.iterations()).isEqualTo(4096);
        assertThat(parsed.matches(ascii("pencil"))).isTrue();
        assertThat(parsed.matches(ascii("pencil2"))).isFalse();
        assertThat(parsed.matches(new byte[0])).isFalse();
        assertThat(parsed.matches("p\u00e9ncil".getBytes(StandardCharsets.UTF_8))).isFalse();
    }

    @Test
    @DisplayName("one file carries $7$ and $scram-sha-256$ entries; each user's own kind round-trips")
    void passwordFileRoundTrip() throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "bob", "hunter2", 1000);
        PasswordFile.write(file, "alice", PasswordHash.createScram("s3cret", ScramCredential.DEFAULT_ITERATIONS));
        final String aliceLine = Files.readAllLines(file).get(1);
        assertThat(aliceLine).matches("alice:\\$scram-sha-256\\$4096\\$[A-Za-z0-9+/=]+\\$[A-Za-z0-9+/=]{44}\\$"
            + "[A-Za-z0-9+/=]{44}");

        final PasswordFile loaded = PasswordFile.load(file);
        assertThat(loaded.size()).isEqualTo(2);
        assertThat(loaded.hashOf("alice").encode()).isEqualTo(aliceLine.substring("alice:".length()));
        assertThat(loaded.scramOf("alice")).isNotNull();
        assertThat(loaded.scramOf("bob")).as("a $7$ entry has no SCRAM keys").isNull();
        assertThat(loaded.scramOf("nobody")).isNull();
        assertThat(loaded.hashOf("bob").matches(ascii("hunter2"))).isTrue();
        assertThat(loaded.hashOf("alice").matches(ascii("s3cret"))).isTrue();
        assertThat(loaded.hashOf("alice").matches(ascii("hunter2"))).isFalse();

        PasswordFile.write(file, "alice", PasswordHash.createScram("changed", 4096));
        final PasswordFile reloaded = PasswordFile.load(file);
        assertThat(reloaded.size()).as("replaced, not added").isEqualTo(2);
        assertThat(reloaded.hashOf("alice").encode()).as("a fresh salt").isNotEqualTo(aliceLine.substring(6));
        assertThat(reloaded.hashOf("alice").matches(ascii("changed"))).isTrue();
    }

    @Test
    @DisplayName("a SCRAM user logs in with a plain CONNECT password, and by SCRAM from the same file")
    void plainAndScramLogin() throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", PasswordHash.createScram("s3cret", 4096));
        final Authenticator authenticator =
            new Authenticator(Authenticator.AnonymousPolicy.NONE, null, null, PasswordFile.load(file));
        assertThat(authenticator.authenticate(false, "alice", ascii("s3cret")))
            .isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        assertThat(authenticator.acceptedByFile()).isTrue();
        assertThat(authenticator.authenticate(false, "alice", ascii("wrong")))
            .isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);

        final ScramSha256 method = new ScramSha256(ScramSha256.fromPasswordFile(authenticator::passwordFile));
        final ScramClient client = new ScramClient("alice", "s3cret", "xyz");
        final AuthExchange exchange = method.newExchange();
        assertThat(ScramClient.run(client, exchange)).isEqualTo(AuthExchange.SUCCESS);
        assertThat(client.verifies(exchange.serverData())).isTrue();

        authenticator.passwordFile(null);
        final AuthExchange noFile = method.newExchange();
        assertThat(ScramClient.run(client, noFile)).isEqualTo(ReasonCode.BAD_USER_NAME_OR_PASSWORD);
    }

    @ParameterizedTest(name = "\"{0}\"")
    @ValueSource(strings = {
        "$scram-sha-256$", "$scram-sha-256$4096$c2FsdA==$", "$scram-sha-256$x$c2FsdA==$AA==$AA==",
        "$scram-sha-256$0$c2FsdA==$" + KEY + "$" + KEY, // no iterations
        "$scram-sha-256$4096$$" + KEY + "$" + KEY, // no salt
        "$scram-sha-256$4096$c2FsdA==$AA==$AA==", // keys of the wrong length
        "$scram-sha-256$4096$c2FsdA==$!!$" + KEY,
        "$scram-sha-256$4096$c2FsdA==$" + KEY + "$" + KEY + "$"
    })
    @DisplayName("a malformed SCRAM entry is refused with IllegalArgumentException, as PasswordFile reports it")
    void malformedEntry(final String entry)
    {
        assertThatThrownBy(() -> PasswordHash.parse(entry)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("a malformed SCRAM line names its line in the file")
    void malformedLine() throws Exception
    {
        final Path file = directory.resolve("passwd");
        Files.writeString(file, "# users\nalice:$scram-sha-256$4096$c2FsdA==$AA==$AA==\n");
        assertThatThrownBy(() -> PasswordFile.load(file)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("line 2");
    }

    @Test
    @DisplayName("SASLprep of ASCII only: non-ASCII SCRAM passwords and user names are refused when written")
    void asciiOnly()
    {
        final Path file = directory.resolve("passwd");
        assertThatThrownBy(() -> PasswordHash.createScram("p\u00e9ncil", 4096))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PasswordHash.createScram("", 4096)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PasswordFile.write(file, "j\u00fcrgen", PasswordHash.createScram("pw", 4096)))
            .isInstanceOf(IllegalArgumentException.class);
        assertThat(Files.exists(file)).isFalse();
    }
}
