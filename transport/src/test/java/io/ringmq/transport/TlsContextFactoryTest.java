package io.ringmq.transport;

import io.ringmq.pipeline.ListenerSettings;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLEngine;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link PemFiles} and {@link TlsContextFactory}: every key and certificate format Mosquitto takes, and every bad
 * file or setting as an {@link IllegalArgumentException} naming the directive, the file and what is wrong.
 */
class TlsContextFactoryTest
{
    private final List<String> warnings = new ArrayList<>();

    static Path tls(final String name)
    {
        try
        {
            return Path.of(TlsContextFactoryTest.class.getResource("/tls/" + name).toURI());
        }
        catch (final URISyntaxException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    static ListenerSettings rsa()
    {
        return new ListenerSettings(0, null).certFile(tls("server-cert.pem")).keyFile(tls("server-key.pem"));
    }

    @Test
    void pkcs8RsaKeyLoads()
    {
        final TlsContext context = TlsContextFactory.create(rsa(), warnings::add);

        assertThat(context.protocols()).containsExactly("TLSv1.3", "TLSv1.2");
        assertThat(context.clientAuth()).isEqualTo(TlsContext.CLIENT_AUTH_NONE);
        assertThat(warnings).isEmpty();
    }

    @Test
    void pkcs1RsaKeyIsWrappedInPkcs8()
    {
        final PrivateKey pkcs1 = PemFiles.privateKey("keyfile", tls("server-key-pkcs1.pem"));
        final PrivateKey pkcs8 = PemFiles.privateKey("keyfile", tls("server-key.pem"));

        assertThat(pkcs1.getAlgorithm()).isEqualTo("RSA");
        assertThat(pkcs1.getEncoded()).isEqualTo(pkcs8.getEncoded());
        TlsContextFactory.create(rsa().keyFile(tls("server-key-pkcs1.pem")), warnings::add);
    }

    @Test
    void sec1EcKeyIsWrappedInPkcs8()
    {
        final PrivateKey key = PemFiles.privateKey("keyfile", tls("server-ec-key.pem"));

        assertThat(key.getAlgorithm()).isEqualTo("EC");
        TlsContextFactory.create(new ListenerSettings(0, null).certFile(tls("server-ec-cert.pem"))
            .keyFile(tls("server-ec-key.pem")), warnings::add);
        assertThat(warnings).isEmpty();
    }

    @Test
    void chainFileLoadsServerCertificateFirst()
    {
        assertThat(PemFiles.certificates("certfile", tls("server-chain.pem"))).hasSize(2);
        TlsContextFactory.create(rsa().certFile(tls("server-chain.pem")), warnings::add);
    }

    @Test
    void caFileMakesClientCertificateOptional()
    {
        final TlsContext context = TlsContextFactory.create(rsa().caFile(tls("ca.pem")), warnings::add);

        assertThat(context.clientAuth()).isEqualTo(TlsContext.CLIENT_AUTH_WANTED);
        final SSLEngine engine = context.newEngine();
        assertThat(engine.getWantClientAuth()).isTrue();
        assertThat(engine.getUseClientMode()).isFalse();
    }

    @Test
    void requireCertificateWithCaPathNeedsClientCertificate()
    {
        final TlsContext context = TlsContextFactory.create(rsa().caPath(tls("capath")).requireCertificate(true),
            warnings::add);

        assertThat(context.clientAuth()).isEqualTo(TlsContext.CLIENT_AUTH_NEEDED);
        assertThat(context.newEngine().getNeedClientAuth()).isTrue();
    }

    @Test
    void tlsVersionMinimum()
    {
        assertThat(TlsContextFactory.create(rsa().tlsVersion("tlsv1.3"), warnings::add).newEngine()
            .getEnabledProtocols()).containsExactly("TLSv1.3");
        assertThat(TlsContextFactory.create(rsa().tlsVersion("tlsv1.2"), warnings::add).newEngine()
            .getEnabledProtocols()).containsExactlyInAnyOrder("TLSv1.3", "TLSv1.2");
        assertThat(warnings).isEmpty();
    }

    @Test
    void tlsVersionOlderThan12IsRaisedWithWarning()
    {
        assertThat(TlsContextFactory.create(rsa().tlsVersion("tlsv1.1"), warnings::add).protocols())
            .containsExactly("TLSv1.3", "TLSv1.2");
        assertThat(warnings).singleElement().asString().contains("tls_version tlsv1.1");
    }

    @Test
    void ciphersByIanaName()
    {
        final SSLEngine engine = TlsContextFactory.create(rsa().ciphers("TLS_AES_128_GCM_SHA256:" +
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"), warnings::add).newEngine();

        assertThat(engine.getEnabledCipherSuites())
            .containsExactly("TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
    }

    @Test
    @DisplayName("ciphers names TLS 1.2 suites, by OpenSSL's names too, and leaves TLS 1.3 at the JDK's defaults, as "
        + "OpenSSL does (before, a migrated ciphers line turned TLS 1.3 off)")
    void ciphersByOpenSslNameKeepTls13()
    {
        final String[] enabled = TlsContextFactory.create(rsa().ciphers("ECDHE-RSA-AES128-GCM-SHA256:" +
            "ECDHE-RSA-CHACHA20-POLY1305"), warnings::add).newEngine().getEnabledCipherSuites();
        assertThat(enabled).contains("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384")
            .doesNotContain("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384");
        assertThat(java.util.Arrays.stream(enabled).filter(s -> s.contains("_WITH_")))
            .containsExactly("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256");
        assertThat(warnings).isEmpty();
    }

    @Test
    @DisplayName("ciphers_tls1.3 names TLS 1.3's suites and leaves TLS 1.2 at the JDK's defaults; a TLS 1.2 name in "
        + "it, or an unknown one, stops the start")
    void ciphersTls13()
    {
        final String[] enabled = TlsContextFactory.create(rsa().ciphersTls13("TLS_AES_256_GCM_SHA384"), warnings::add)
            .newEngine().getEnabledCipherSuites();
        assertThat(java.util.Arrays.stream(enabled).filter(CipherSuites::isTls13)).containsExactly(
            "TLS_AES_256_GCM_SHA384");
        assertThat(enabled).contains("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
        assertBad(rsa().ciphersTls13("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"), "ciphers_tls1.3", "not a TLS 1.3 suite");
        assertBad(rsa().ciphersTls13("TLS_AES_128_CCM_8_SHA256"), "ciphers_tls1.3", "TLS_AES_128_CCM_8_SHA256");
    }

    @Test
    @DisplayName("Mosquitto's sample list DEFAULT:!aNULL:!eNULL:!LOW:!EXPORT:!SSLv2:@STRENGTH is read as the JDK's "
        + "default TLS 1.2 suites without any of those classes, with a warning; a list that excludes what the JDK's "
        + "defaults hold (DHE), or selects less (MEDIUM), stops the start: never served wider than written")
    void openSslListLanguage()
    {
        final String[] enabled = TlsContextFactory.create(rsa().ciphers("DEFAULT:!aNULL:!eNULL:!LOW:!EXPORT:!SSLv2:" +
            "@STRENGTH"), warnings::add).newEngine().getEnabledCipherSuites();
        assertThat(enabled).contains("TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
            .noneMatch(s -> s.contains("_anon_") || s.contains("_NULL_") || s.contains("3DES") || s.contains("RC4"));
        assertThat(warnings).singleElement().asString().contains("read as the JDK's default TLS 1.2 suites");
        assertBad(rsa().ciphers("HIGH:!DHE"), "ciphers", "excluding DHE");
        assertBad(rsa().ciphers("MEDIUM"), "ciphers", "MEDIUM");
        assertBad(rsa().ciphers("!aNULL"), "ciphers", "selects no suite");
    }

    @Test
    void expiredCertificateLoadsWithWarning()
    {
        TlsContextFactory.create(rsa().certFile(tls("expired-cert.pem")), warnings::add);

        assertThat(warnings).singleElement().asString()
            .contains("certfile", "expired-cert.pem", "expired on 2001-01-01");
    }

    @Test
    void missingFileIsNamed()
    {
        assertBad(rsa().certFile(tls("ca.pem").resolveSibling("nope.pem")), "certfile", "nope.pem",
            "cannot be read");
        assertBad(rsa().keyFile(tls("ca.pem").resolveSibling("nokey.pem")), "keyfile", "nokey.pem", "cannot be read");
        assertBad(rsa().caFile(tls("ca.pem").resolveSibling("noca.pem")), "cafile", "noca.pem", "cannot be read");
    }

    @Test
    void certFileAndKeyFileAreBothNeeded()
    {
        assertBad(new ListenerSettings(0, null).certFile(tls("server-cert.pem")), "certfile", "keyfile");
        assertBad(new ListenerSettings(0, null).keyFile(tls("server-key.pem")), "certfile", "keyfile");
    }

    @Test
    void wrongPemTypeIsNamed()
    {
        assertBad(rsa().certFile(tls("server-key.pem")), "certfile", "server-key.pem", "holds no certificate",
            "PRIVATE KEY");
        assertBad(rsa().keyFile(tls("server-cert.pem")), "keyfile", "server-cert.pem", "holds no private key",
            "CERTIFICATE");
        assertBad(rsa().caFile(tls("alice-key.pem")), "cafile", "alice-key.pem", "holds no certificate");
    }

    @Test
    void encryptedKeyIsClearError()
    {
        assertBad(rsa().keyFile(tls("encrypted-key.pem")), "keyfile", "encrypted-key.pem", "encrypted");
        assertBad(rsa().keyFile(tls("encrypted-key-pkcs1.pem")), "keyfile", "encrypted-key-pkcs1.pem",
            "encrypted");
    }

    @Test
    void keyNotMatchingCertificateIsNamed()
    {
        assertBad(rsa().keyFile(tls("alice-key.pem")), "keyfile", "alice-key.pem", "does not match", "certfile",
            "CN=localhost");
        assertBad(rsa().keyFile(tls("server-ec-key.pem")), "keyfile", "does not match", "EC", "RSA");
    }

    @Test
    void requireCertificateWithoutCaIsError()
    {
        assertBad(rsa().requireCertificate(true), "require_certificate", "cafile or capath");
    }

    @Test
    void badTlsVersionAndCiphersAreErrors()
    {
        assertBad(rsa().tlsVersion("sslv3"), "tls_version sslv3");
        assertBad(rsa().ciphers("ECDHE-RSA-AES128-GCM-SHA257"), "ciphers", "ECDHE-RSA-AES128-GCM-SHA257",
            "OpenSSL names", "IANA names");
    }

    @Test
    void capathMustBeDirectoryWithCertificates(@TempDir final Path dir) throws IOException
    {
        assertBad(rsa().caPath(tls("ca.pem")), "capath", "ca.pem", "not a directory");
        assertBad(rsa().caPath(dir), "capath", "holds no PEM certificate");
        Files.writeString(dir.resolve("notes.txt"), "not a certificate");
        Files.copy(tls("ca.pem"), dir.resolve("9d3c1f2e.0"));

        assertThat(TlsContextFactory.create(rsa().caPath(dir), warnings::add).clientAuth())
            .isEqualTo(TlsContext.CLIENT_AUTH_WANTED);
        assertThat(warnings).singleElement().asString().contains("notes.txt", "skipped");
    }

    @Test
    void hostilePemFilesAreErrors(@TempDir final Path dir) throws IOException
    {
        final String cert = Files.readString(tls("server-cert.pem"));
        assertBad(rsa().certFile(write(dir, "empty.pem", "")), "certfile", "empty.pem", "not a PEM file");
        assertBad(rsa().certFile(write(dir, "garbage.pem", "\u0000\u0001binary")), "not a PEM file");
        assertBad(rsa().certFile(write(dir, "truncated.pem", cert.substring(0, cert.length() / 2))), "certfile",
            "truncated.pem", "END CERTIFICATE");
        assertBad(rsa().certFile(write(dir, "base64.pem", "-----BEGIN CERTIFICATE-----\n@@@@\n" +
            "-----END CERTIFICATE-----\n")), "not base64");
        assertBad(rsa().certFile(write(dir, "damaged.pem", "-----BEGIN CERTIFICATE-----\nAAAAAAAA\n" +
            "-----END CERTIFICATE-----\n")), "certfile", "damaged.pem", "cannot be parsed");
        assertBad(rsa().keyFile(write(dir, "damaged-key.pem", "-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n" +
            "-----END PRIVATE KEY-----\n")), "keyfile", "damaged-key.pem", "cannot read");
        assertBad(rsa().keyFile(write(dir, "damaged-ec.pem", "-----BEGIN EC PRIVATE KEY-----\nMAMCAQE=\n" +
            "-----END EC PRIVATE KEY-----\n")), "keyfile", "damaged-ec.pem", "EC PRIVATE KEY");
        assertBad(rsa().certFile(write(dir, "broken.pem", "-----BEGIN CERTIFICATE")), "broken BEGIN");
        final StringBuilder huge = new StringBuilder("-----BEGIN EC PRIVATE KEY-----\n");
        huge.append("MIQ/////AgEB").append("\n-----END EC PRIVATE KEY-----\n");
        assertBad(rsa().keyFile(write(dir, "hugelen.pem", huge.toString())), "keyfile", "EC PRIVATE KEY");
    }

    @Test
    void crlfFilesAndCombinedCertificateAndKeyFileLoad(@TempDir final Path dir) throws IOException
    {
        final Path crlfKey = write(dir, "crlf-key.pem", Files.readString(tls("server-key-pkcs1.pem"))
            .replace("\n", "\r\n"));
        final Path crlfEncrypted = write(dir, "crlf-encrypted.pem", Files.readString(tls("encrypted-key-pkcs1.pem"))
            .replace("\n", "\r\n"));
        final Path combined = write(dir, "combined.pem", Files.readString(tls("server-key.pem")) +
            Files.readString(tls("server-chain.pem")));

        TlsContextFactory.create(rsa().keyFile(crlfKey), warnings::add);
        TlsContextFactory.create(new ListenerSettings(0, null).certFile(combined).keyFile(combined), warnings::add);
        assertThat(PemFiles.certificates("certfile", combined)).hasSize(2);
        assertBad(rsa().keyFile(crlfEncrypted), "keyfile", "crlf-encrypted.pem", "encrypted");
        assertThat(warnings).isEmpty();
    }

    private static Path write(final Path dir, final String name, final String text) throws IOException
    {
        return Files.write(dir.resolve(name), text.getBytes(StandardCharsets.ISO_8859_1));
    }

    private void assertBad(final ListenerSettings settings, final String... parts)
    {
        assertThatThrownBy(() -> TlsContextFactory.create(settings, warnings::add))
            .isInstanceOf(IllegalArgumentException.class)
            .message().contains(parts);
    }
}
