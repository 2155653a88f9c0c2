package io.ringmq.loadtest;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * A few {@link Client}s on one selector, driven by the caller's thread: {@link CrashLoss}'s phases, which need a
 * handful of connections and no pacing, not {@link Driver}'s threads. Connections are dialled blocking (with a
 * timeout), then read and written without blocking; one that ends without being asked is counted, by whether it had
 * become ready.
 */
final class ClientLoop implements AutoCloseable
{
    final List<Client> clients = new ArrayList<>();
    private final Selector selector;
    private final Client.Handler handler;
    int readyCount;
    int failedCount;
    /** Connections that were ready and then ended without the caller asking (the broker was killed). */
    int lostCount;

    ClientLoop(final Client.Handler handler) throws IOException
    {
        this.handler = handler;
        this.selector = Selector.open();
    }

    /**
     * Dials {@code settings}' broker, waiting at most {@code timeoutMs}, and queues and sends a CONNECT.
     *
     * @throws IOException when the broker does not accept the connection.
     */
    Client open(final int id, final boolean publisher, final String clientId, final Settings settings,
        final int timeoutMs) throws IOException
    {
        final SocketChannel channel = SocketChannel.open();
        try
        {
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            channel.socket().connect(new InetSocketAddress(settings.host, settings.port), timeoutMs);
            channel.configureBlocking(false);
        }
        catch (final IOException ex)
        {
            channel.close();
            throw ex;
        }
        final Client client = new Client(id, publisher, channel, settings);
        client.key = channel.register(selector, SelectionKey.OP_READ, client);
        client.queueConnect(clientId, settings);
        clients.add(client);
        flush(client);
        return client;
    }

    /**
     * Waits up to {@code timeoutMs} for input, hands every packet that came to the handler, and sends what was queued.
     */
    void poll(final long timeoutMs) throws IOException
    {
        selector.select(timeoutMs);
        final Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
        while (keys.hasNext())
        {
            final SelectionKey key = keys.next();
            keys.remove();
            final Client client = (Client)key.attachment();
            try
            {
                if (key.isValid() && key.isReadable() && !client.read(handler))
                {
                    dropped(client);
                }
            }
            catch (final IOException ex)
            {
                dropped(client);
            }
        }
        for (final Client client : clients)
        {
            if (client.pendingOut() > 0)
            {
                flush(client);
            }
        }
    }

    /**
     * Sends what {@code client} has queued; a write that fails counts the connection as ended.
     */
    void flush(final Client client)
    {
        if (client.state == Client.State.CLOSED)
        {
            return;
        }
        try
        {
            client.flush();
        }
        catch (final IOException ex)
        {
            dropped(client);
        }
    }

    void ready(final Client client)
    {
        client.state = Client.State.READY;
        readyCount++;
    }

    /**
     * The broker refused {@code client} (CONNACK or SUBACK): it is closed and counted as failed.
     */
    void fail(final Client client)
    {
        failedCount++;
        close(client);
    }

    /**
     * DISCONNECTs every ready client (a session without clean start stays on the broker [MQTT-3.1.2-4]).
     */
    void disconnectAll()
    {
        for (final Client client : clients)
        {
            if (client.state == Client.State.READY)
            {
                client.queueDisconnect();
                flush(client);
            }
        }
    }

    int endedCount()
    {
        return failedCount + lostCount;
    }

    private void dropped(final Client client)
    {
        if (client.state == Client.State.CLOSED)
        {
            return;
        }
        if (client.state == Client.State.READY)
        {
            lostCount++;
            readyCount--;
        }
        else
        {
            failedCount++;
        }
        close(client);
    }

    private static void close(final Client client)
    {
        client.state = Client.State.CLOSED;
        try
        {
            client.channel.close();
        }
        catch (final IOException ignore)
        {
            // closing anyway
        }
    }

    public void close() throws IOException
    {
        for (final Client client : clients)
        {
            client.channel.close();
        }
        selector.close();
    }
}
