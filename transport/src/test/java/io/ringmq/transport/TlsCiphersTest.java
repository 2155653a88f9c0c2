package io.ringmq.transport;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Mosquitto TLS listener's {@code ciphers} and {@code ciphers_tls1.3}, from a config file, with the JDK's TLS
 * client: {@code ciphers} (OpenSSL's names) restricts TLS 1.2 and leaves TLS 1.3 on, as OpenSSL does;
 * {@code ciphers_tls1.3} restricts TLS 1.3.
 */
@Timeout(60)
class TlsCiphersTest
{
    @TempDir
    Path directory;
    private Broker broker;

    @AfterEach
    void stop()
    {
        if (null != broker)
        {
            broker.close();
        }
    }

    private int launch(final String... cipherLines) throws Exception
    {
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, String.join("\n", "listener 0 127.0.0.1", "allow_anonymous true",
            "certfile " + TlsContextFactoryTest.tls("server-cert.pem"),
            "keyfile " + TlsContextFactoryTest.tls("server-key.pem"), String.join("\n", cipherLines), ""),
            StandardCharsets.UTF_8);
        broker = Broker.launch(Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0"}));
        return broker.ports()[0];
    }

    /**
     * @return "protocol suite" of a handshake offering only {@code protocol}.
     */
    private static String handshake(final int port, final String protocol) throws Exception
    {
        try (SSLSocket socket = (SSLSocket)TlsSocketLayerTest.clientContext(null).getSocketFactory()
            .createSocket("127.0.0.1", port))
        {
            socket.setSoTimeout(10_000);
            socket.setEnabledProtocols(new String[]{protocol});
            socket.startHandshake();
            return socket.getSession().getProtocol() + " " + socket.getSession().getCipherSuite();
        }
    }

    @Test
    @DisplayName("ciphers ECDHE-RSA-AES128-GCM-SHA256: TLS 1.2 clients get that suite, TLS 1.3 clients still connect")
    void ciphersLeaveTls13On() throws Exception
    {
        final int port = launch("ciphers ECDHE-RSA-AES128-GCM-SHA256");
        assertThat(handshake(port, "TLSv1.2")).isEqualTo("TLSv1.2 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
        assertThat(handshake(port, "TLSv1.3")).startsWith("TLSv1.3 TLS_");
    }

    @Test
    @DisplayName("ciphers_tls1.3 TLS_CHACHA20_POLY1305_SHA256: a TLS 1.3 client gets it")
    void ciphersTls13() throws Exception
    {
        final int port = launch("ciphers_tls1.3 TLS_CHACHA20_POLY1305_SHA256");
        assertThat(handshake(port, "TLSv1.3")).isEqualTo("TLSv1.3 TLS_CHACHA20_POLY1305_SHA256");
    }
}
