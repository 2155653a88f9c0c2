package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * Dials one {@link Driver}'s clients: non-blocking connects registered with the driver's selector, at most this
 * driver's share of {@code -dial-concurrency} awaiting their CONNACK at once and, with {@code -conn-rate}, no faster
 * than its share of that rate. A connection queues its CONNECT as soon as TCP is up. It records each client's time
 * from dial to CONNACK ({@link #connectTime}) and the span from the first dial to the last CONNACK
 * ({@link #dialSeconds}).
 *
 * <p>Owned by its driver's thread; {@link #connectTime} and {@link #dialSeconds} are read once that thread has
 * stopped.
 */
final class Dialer
{
    final Histogram connectTime = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    private final Settings settings;
    private final Selector selector;
    private final Driver driver;
    private final FlushList flushList;
    private final ArrayDeque<Client> toDial = new ArrayDeque<>();
    private int concurrency;
    private final int drivers;
    private long firstDialNs;
    private volatile long lastConnackNs;
    /** Clients dialled whose CONNACK has not come yet (nor their connection ended). */
    private int dialing;
    private long dialed;

    /**
     * @param drivers the scenario's drivers, each with a dialer: this one takes its share of the dials in progress
     *                and of the connection rate (pubsub runs {@code -threads} subscriber drivers and
     *                {@code -pub-threads} more for the publishers, pub only the publishers' drivers).
     */
    Dialer(final Settings settings, final Selector selector, final Driver driver, final FlushList flushList,
        final int drivers)
    {
        this.settings = settings;
        this.selector = selector;
        this.driver = driver;
        this.flushList = flushList;
        this.drivers = drivers;
        this.concurrency = Math.max(1, settings.dialConcurrency / drivers);
    }

    /**
     * Before the drivers start: this dialer's share of {@code -dial-concurrency} follows its share of the clients
     * (pubsub's publisher driver dials a few, its subscriber drivers the many), at least one.
     */
    void share(final int clients, final int totalClients)
    {
        concurrency = (int)Math.max(1, (long)settings.dialConcurrency * clients / Math.max(1, totalClients));
    }

    /**
     * Queues {@code client} to be dialled, after those queued before it.
     */
    void add(final Client client)
    {
        toDial.add(client);
    }

    /**
     * Dials the clients queued, as many as the concurrency and the connection rate allow now.
     *
     * @return clients dialled.
     */
    int dial(final long now) throws IOException
    {
        int work = 0;
        if (firstDialNs == 0 && !toDial.isEmpty())
        {
            firstDialNs = now;
        }
        while (dialing < concurrency && !toDial.isEmpty())
        {
            if (settings.connRate > 0 && dialed >= (now - firstDialNs) * settings.connRate / drivers / 1e9 + 1)
            {
                break; // conn-rate: keep to the target rate
            }
            dialed++;
            final Client client = toDial.poll();
            client.dialStartNs = System.nanoTime();
            try
            {
                // inside the try: a source address without a free port (or none at all) fails this dial, counted,
                // not the driver thread with every connection it holds
                client.channel.configureBlocking(false);
                client.channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                if (settings.sourceAddresses > 1)
                {
                    client.channel.bind(new InetSocketAddress("127.0.0." + (1 + client.id % settings.sourceAddresses),
                        0));
                }
                final boolean connected = client.channel.connect(client.publisher ?
                    new InetSocketAddress(settings.host, settings.port) :
                    new InetSocketAddress(settings.subHost, settings.subPort));
                client.key = client.channel.register(selector, connected ? SelectionKey.OP_READ :
                    SelectionKey.OP_CONNECT, client);
                dialing++;
                if (connected)
                {
                    onTcpConnected(client);
                }
            }
            catch (final IOException | java.nio.channels.UnresolvedAddressException ex)
            {
                driver.fail(client); // a host that does not resolve fails every dial, counted, not the thread
            }
            work++;
        }
        return work;
    }

    /**
     * TCP is up: queues the client's CONNECT.
     */
    void onTcpConnected(final Client client)
    {
        client.queueConnect("lt-" + (client.publisher ? "p" : "s") + "-" + client.id + "-" + settings.runId, settings);
        flushList.add(client);
    }

    /**
     * A CONNACK came: the client's dial is over; an accepted one's connect time is recorded.
     *
     * @return whether the broker accepted the connection.
     */
    boolean onConnack(final Client client, final int code)
    {
        dialing--;
        client.connectedNs = System.nanoTime();
        if (code != 0)
        {
            return false;
        }
        connectTime.recordValue(Math.min(connectTime.getHighestTrackableValue(), client.connectedNs -
            client.dialStartNs));
        lastConnackNs = client.connectedNs;
        return true;
    }

    /**
     * {@code client}'s connection ended: if that was before its CONNACK, its dial is over.
     */
    void onClose(final Client client)
    {
        if (client.connectedNs < 0 && null != client.key)
        {
            dialing--; // ended before its CONNACK
        }
    }

    double dialSeconds()
    {
        return firstDialNs == 0 ? 0 : Math.max(0, lastConnackNs - firstDialNs) / 1e9;
    }
}
