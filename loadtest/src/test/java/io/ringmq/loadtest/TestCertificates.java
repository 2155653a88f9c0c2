package io.ringmq.loadtest;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.TrustManagerFactory;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throwaway PKI for TLS tests, made with the JDK's own {@code keytool} (no openssl needed on CI): a CA, a server
 * certificate it signs for 127.0.0.1 and localhost, a client certificate it signs, and a second, unrelated CA. Written
 * as PEM files (as Mosquitto and the generator take them) and kept as key stores for in-test servers.
 */
final class TestCertificates
{
    static final char[] PASSWORD = "changeit".toCharArray();

    final Path dir;
    final Path caPem;
    final Path otherCaPem;
    final Path serverCertPem;
    final Path serverKeyPem;
    final Path clientCertPem;
    final Path clientKeyPem;
    final KeyStore serverKeys;
    final KeyStore trustedCa;

    TestCertificates(final Path dir) throws Exception
    {
        this.dir = dir;
        keytool("-genkeypair", "-keystore", "ca.p12", "-alias", "ca", "-dname", "CN=ringmq test CA", "-ext", "bc:c");
        keytool("-genkeypair", "-keystore", "other.p12", "-alias", "ca", "-dname", "CN=some other CA", "-ext", "bc:c");
        keytool("-genkeypair", "-keystore", "server.p12", "-alias", "server", "-dname", "CN=127.0.0.1");
        keytool("-genkeypair", "-keystore", "client.p12", "-alias", "client", "-dname", "CN=loadtest");
        caPem = exportPem("ca.p12", "ca", "ca.pem");
        otherCaPem = exportPem("other.p12", "ca", "other-ca.pem");
        serverCertPem = sign("server", "san=ip:127.0.0.1,dns:localhost");
        clientCertPem = sign("client", "eku=clientAuth");
        serverKeyPem = keyPem("server.p12", "server", "server-key.pem");
        clientKeyPem = keyPem("client.p12", "client", "client-key.pem");
        serverKeys = KeyStore.getInstance("PKCS12");
        serverKeys.load(null, null);
        serverKeys.setKeyEntry("server", load("server.p12").getKey("server", PASSWORD), PASSWORD,
            new Certificate[]{PemFiles.certificates(serverCertPem)[0], PemFiles.certificates(caPem)[0]});
        trustedCa = KeyStore.getInstance("PKCS12");
        trustedCa.load(null, null);
        trustedCa.setCertificateEntry("ca", PemFiles.certificates(caPem)[0]);
    }

    /**
     * @param clientAuth whether the server requires a client certificate signed by the CA.
     * @return a TLS server socket on an ephemeral loopback port with the server certificate.
     */
    SSLServerSocket serverSocket(final boolean clientAuth) throws Exception
    {
        final KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(serverKeys, PASSWORD);
        final TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trustedCa);
        final SSLContext context = SSLContext.getInstance("TLS");
        context.init(keys.getKeyManagers(), trust.getTrustManagers(), null);
        final SSLServerSocket server = (SSLServerSocket)context.getServerSocketFactory().createServerSocket(0, 200,
            InetAddress.getLoopbackAddress());
        server.setNeedClientAuth(clientAuth);
        return server;
    }

    private Path sign(final String alias, final String extension) throws Exception
    {
        keytool("-certreq", "-keystore", alias + ".p12", "-alias", alias, "-file", alias + ".csr");
        keytool("-gencert", "-keystore", "ca.p12", "-alias", "ca", "-infile", alias + ".csr", "-outfile",
            alias + ".pem", "-rfc", "-ext", extension, "-validity", "2");
        return dir.resolve(alias + ".pem");
    }

    private Path exportPem(final String store, final String alias, final String file) throws Exception
    {
        keytool("-exportcert", "-keystore", store, "-alias", alias, "-rfc", "-file", file);
        return dir.resolve(file);
    }

    private Path keyPem(final String store, final String alias, final String file) throws Exception
    {
        final PrivateKey key = (PrivateKey)load(store).getKey(alias, PASSWORD);
        final String pem = "-----BEGIN PRIVATE KEY-----\n" +
            Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(key.getEncoded()) +
            "\n-----END PRIVATE KEY-----\n";
        return Files.writeString(dir.resolve(file), pem, StandardCharsets.US_ASCII);
    }

    private KeyStore load(final String store) throws Exception
    {
        final KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(dir.resolve(store)))
        {
            keys.load(in, PASSWORD);
        }
        return keys;
    }

    private void keytool(final String... args) throws IOException, InterruptedException
    {
        final List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        command.addAll(List.of("-storetype", "PKCS12", "-storepass", new String(PASSWORD), "-noprompt"));
        if ("-genkeypair".equals(args[0]))
        {
            command.addAll(List.of("-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2"));
        }
        final Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        final byte[] output = process.getInputStream().readAllBytes();
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0)
        {
            process.destroyForcibly();
            throw new IOException("keytool " + String.join(" ", args) + ": " +
                new String(output, StandardCharsets.UTF_8));
        }
    }
}
