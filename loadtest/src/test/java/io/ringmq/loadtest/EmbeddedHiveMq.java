package io.ringmq.loadtest;

import com.hivemq.embedded.EmbeddedHiveMQ;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * HiveMQ Community Edition run in-process on a loopback port, for what the load generator can do and ringmq cannot
 * yet: MQTT 5 shared subscriptions ({@code -mode fanin}). It comes from Maven Central like every other test
 * dependency, so the test runs wherever the build does. Embedded, HiveMQ lets anonymous clients in; persistence is in
 * memory, and its configuration lives in a folder of the caller's.
 */
final class EmbeddedHiveMq implements AutoCloseable
{
    private static final long START_TIMEOUT_S = 60;

    private final EmbeddedHiveMQ hivemq;
    private final int port;

    private EmbeddedHiveMq(final EmbeddedHiveMQ hivemq, final int port)
    {
        this.hivemq = hivemq;
        this.port = port;
    }

    /**
     * Starts a broker and returns once it listens.
     *
     * @param folder an empty folder for its configuration, data and (no) extensions.
     */
    static EmbeddedHiveMq start(final Path folder) throws Exception
    {
        final int port = freeLoopbackPort();
        final Path config = Files.createDirectories(folder.resolve("conf"));
        Files.writeString(config.resolve("config.xml"),
            "<?xml version=\"1.0\"?>\n" +
            "<hivemq>\n" +
            "  <listeners>\n" +
            "    <tcp-listener><port>" + port + "</port><bind-address>127.0.0.1</bind-address></tcp-listener>\n" +
            "  </listeners>\n" +
            "  <persistence><mode>in-memory</mode></persistence>\n" +
            "</hivemq>\n");
        final EmbeddedHiveMQ hivemq = EmbeddedHiveMQ.builder()
            .withConfigurationFolder(config)
            .withDataFolder(Files.createDirectories(folder.resolve("data")))
            .withExtensionsFolder(Files.createDirectories(folder.resolve("extensions")))
            .withoutLoggingBootstrap()
            .build();
        try
        {
            hivemq.start().get(START_TIMEOUT_S, TimeUnit.SECONDS); // the future completes once the listener is bound
        }
        catch (final Exception ex)
        {
            hivemq.close();
            throw ex;
        }
        return new EmbeddedHiveMq(hivemq, port);
    }

    int port()
    {
        return port;
    }

    @Override
    public void close() throws Exception
    {
        hivemq.close();
    }

    private static int freeLoopbackPort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
    }
}
