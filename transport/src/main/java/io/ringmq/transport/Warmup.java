package io.ringmq.transport;

import org.agrona.CloseHelper;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;

/**
 * Drives the broker's real paths before it takes its first client: a fixed number of loopback MQTT connections
 * through its own accept, I/O agent, pipeline and delivery code, so that the classes are loaded and the JIT has
 * compiled them when the first connect storm comes (on a cold JVM the first thousand CONNECTs of a storm run in the
 * interpreter, behind class loading; see docs/perf/README.md for the figures).
 * <p>
 * Each connection, MQTT 3.1.1 and 5.0 in turn, clean and with an empty client id (the broker assigns one, so no
 * session the store recovered can be taken over): CONNECT, CONNACK; SUBSCRIBE at QoS 1 to a topic of its own under
 * {@code $ringmq-warmup-<nonce>/}, a first level new to each run: a {@code $} topic, so no filter that starts with a
 * wildcard matches it [MQTT-4.7.2-1], and one no recovered filter names (a fixed prefix such as
 * {@code $ringmq/warmup/} was matched by a recovered {@code $ringmq/#}, which then had every message queued);
 * PUBLISH at QoS 0 and QoS 1 to it, PINGREQ; SUBACK, PUBACK, both PUBLISHes back (the QoS 1 one acknowledged),
 * PINGRESP; UNSUBSCRIBE, UNSUBACK; DISCONNECT. Nothing is retained and no will is set: a clean session leaves
 * nothing behind. Runs on the caller's thread with a selector of its own, at most {@link #PARALLEL} connections at a
 * time (fewer under a low {@code --max-connections}: none is refused, so no limit is reported),
 * and gives up at its deadline: a broker that cannot warm up still starts.
 */
final class Warmup
{
    /** What the command line drives by default: every per-connection method past C1's compile threshold (200 calls). */
    static final int DEFAULT_CONNECTIONS = 500;
    /** Connections in progress at once. */
    static final int PARALLEL = 32;
    /** The most a warm-up may take, whatever its count: the broker starts then, warm or not. */
    static final long DEADLINE_NS = TimeUnit.SECONDS.toNanos(5);
    /** The most the broker waits after it for the warm-up's last sessions to be gone. */
    static final long SETTLE_NS = TimeUnit.SECONDS.toNanos(2);
    /** The topic prefix of the warm-up's own messages, before its run's nonce. */
    static final String TOPIC_PREFIX = "$ringmq-warmup-";


    /**
     * What a warm-up did.
     *
     * @param completed connections that went through every step.
     * @param failed    connections refused, dropped or cut short by the deadline.
     * @param elapsedNs how long it took.
     */
    record Result(int completed, int failed, long elapsedNs)
    {
        @Override
        public String toString()
        {
            return "warm-up " + completed + " connections" + (failed > 0 ? " (" + failed + " failed)" : "") + " in " +
                TimeUnit.NANOSECONDS.toMillis(elapsedNs) + " ms";
        }
    }


    private Warmup()
    {
    }

    /**
     * Runs {@code connections} connections against {@code port} on the loopback address.
     *
     * @param deadlineNs how long it may take at most.
     */
    static Result run(final int port, final int connections, final long deadlineNs)
    {
        return run(port, connections, PARALLEL, deadlineNs, java.util.concurrent.ConcurrentHashMap.newKeySet());
    }

    /**
     * @param parallel connections in progress at once.
     */
    static Result run(final int port, final int connections, final int parallel, final long deadlineNs,
        final java.util.Set<Integer> ownPorts)
    {
        final long startNs = System.nanoTime();
        final long endNs = startNs + deadlineNs;
        final InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
        final String topicPrefix = topicPrefix();
        int started = 0;
        int completed = 0;
        int failed = 0;
        int open = 0;
        try (Selector selector = Selector.open())
        {
            try
            {
                while ((started < connections || open > 0) && endNs - System.nanoTime() > 0)
                {
                    while (started < connections && open < parallel)
                    {
                        try
                        {
                            open(selector, address, started, topicPrefix, ownPorts);
                            open++;
                        }
                        catch (final IOException ex)
                        {
                            failed++;
                        }
                        started++;
                    }
                    selector.select(10);
                    final Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                    while (keys.hasNext())
                    {
                        final SelectionKey key = keys.next();
                        keys.remove();
                        final WarmupConnection client = (WarmupConnection)key.attachment();
                        final int outcome = WarmupConnection.step(key, client);
                        if (0 != outcome)
                        {
                            close(client.channel, ownPorts);
                            open--;
                            if (outcome > 0)
                            {
                                completed++;
                            }
                            else
                            {
                                failed++;
                            }
                        }
                    }
                    final int stalled = endRoundsPastGrace(selector, System.nanoTime(), ownPorts);
                    open -= stalled;
                    failed += stalled;
                }
            }
            finally
            {
                for (final SelectionKey key : selector.keys())
                {
                    close(key.channel(), ownPorts); // cut short by the deadline or a failed select
                }
            }
        }
        catch (final IOException ex)
        {
            // no selector, or it failed: what was open is closed, and counted as failed below
        }
        return new Result(completed, failed + open + (connections - started), System.nanoTime() - startNs);
    }

    /**
     * Ends the first round of every connection acknowledged and past its grace: its messages will not come (an ACL).
     *
     * @return the connections that failed doing so (closed).
     */
    private static int endRoundsPastGrace(final Selector selector, final long nowNs,
        final java.util.Set<Integer> ownPorts)
    {
        int failed = 0;
        for (final SelectionKey key : selector.keys())
        {
            final WarmupConnection client = (WarmupConnection)key.attachment();
            if (key.isValid() && 1 == client.step && client.acks >= WarmupConnection.ROUND_ACKS)
            {
                try
                {
                    WarmupConnection.roundDone(client, nowNs);
                }
                catch (final IOException ex)
                {
                    close(client.channel, ownPorts);
                    failed++;
                }
            }
        }
        return failed;
    }

    /**
     * Closes one of the warm-up's sockets; its port no longer admits anyone on the warm-up's listener.
     */
    private static void close(final java.nio.channels.Channel channel, final java.util.Set<Integer> ownPorts)
    {
        try
        {
            if (channel instanceof SocketChannel && channel.isOpen())
            {
                final java.net.SocketAddress local = ((SocketChannel)channel).getLocalAddress();
                if (local instanceof InetSocketAddress)
                {
                    ownPorts.remove(((InetSocketAddress)local).getPort());
                }
            }
        }
        catch (final IOException ex)
        {
            // closed already: its port went with it
        }
        CloseHelper.quietClose(channel);
    }

    /**
     * @return the first topic level of a run's messages and its separator: {@link #TOPIC_PREFIX} and a nonce, so
     * that no subscription the store recovered names it.
     */
    static String topicPrefix()
    {
        return TOPIC_PREFIX + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong()) + '/';
    }

    private static void open(final Selector selector, final InetSocketAddress address, final int index,
        final String topicPrefix, final java.util.Set<Integer> ownPorts) throws IOException
    {
        final SocketChannel channel = SocketChannel.open();
        try
        {
            channel.configureBlocking(false);
            // bound first, so the listener knows its port before it connects: it admits the warm-up's sockets only
            channel.bind(new InetSocketAddress(address.getAddress(), 0));
            ownPorts.add(((InetSocketAddress)channel.getLocalAddress()).getPort());
            final WarmupConnection client = new WarmupConnection(index, channel, topicPrefix);
            final int interest = channel.connect(address) ? SelectionKey.OP_READ : SelectionKey.OP_CONNECT;
            channel.register(selector, interest, client);
            if (SelectionKey.OP_READ == interest)
            {
                WarmupConnection.connect(client);
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            close(channel, ownPorts);
            throw ex;
        }
    }
}
