package io.ringmq.pipeline.status;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The broker's counters: the metrics, and the way to see that a limit was hit. Any thread may add; anyone may
 * read. Printed at shutdown.
 */
public final class BrokerCounters
{
    public static final int CONNECTIONS_ACCEPTED = 0;
    public static final int CONNECTIONS_CLOSED = 1;
    public static final int CONNECTIONS_REFUSED_LIMIT = 2;
    public static final int PROTOCOL_ERRORS = 3;
    public static final int CONNECT_TIMEOUTS = 4;
    public static final int KEEP_ALIVE_TIMEOUTS = 5;
    public static final int PACKETS_IN = 6;
    public static final int PUBLISH_IN = 7;
    public static final int PUBLISH_OUT = 8;
    public static final int QOS0_DROPPED_SLOW_SUBSCRIBER = 9;
    public static final int QUEUE_FULL_DROPPED = 10;
    public static final int INGRESS_RING_FULL = 11;
    public static final int OUTBOUND_RING_FULL = 12;
    public static final int SOCKET_WRITE_BLOCKED = 13;
    /** Errors no client input should cause: a stage or agent threw; each distinct cause is logged once. */
    public static final int UNEXPECTED_ERRORS = 14;
    public static final int AUTH_FAILURES = 15;
    public static final int PACKET_TOO_LARGE = 16;
    public static final int CONNECTIONS_TAKEN_OVER = 17;
    public static final int INFLIGHT_FULL_QUEUED = 18;
    /** A first packet that was not CONNECT, or a CONNECT over {@code --max-connect-size}: the socket closed. */
    public static final int PRE_CONNECT_REFUSED = 19;
    public static final int CONNECTIONS_REFUSED_PER_ADDRESS = 20;
    public static final int CONNECTIONS_REFUSED_MEMORY = 21;
    public static final int QOS0_SHED_MEMORY = 22;
    public static final int TOPIC_TOO_MANY_LEVELS = 23;
    public static final int TOPIC_TOO_LONG = 24;

    private static final String[] NAMES =
    {
        "connections accepted", "connections closed", "connections refused (max-connections)", "protocol errors",
        "connect timeouts", "keep-alive timeouts", "packets in", "PUBLISH in", "PUBLISH out",
        "QoS 0 dropped (slow subscriber)", "messages dropped (max-queued)", "ingress ring full (reads paused)",
        "outbound ring full", "socket writes blocked", "unexpected errors (stages and agents)", "authentication failures",
        "packets too large", "sessions taken over", "messages queued (max-inflight)",
        "first packets refused (not CONNECT, or over max-connect-size)",
        "connections refused (max-connections-per-address)", "connections refused (memory-budget)",
        "QoS 0 shed (memory-budget)", "PUBLISH refused (max-topic-levels)", "PUBLISH refused (max-topic-length)"
    };

    private final AtomicLongArray values = new AtomicLongArray(NAMES.length);

    public void increment(final int counter)
    {
        values.getAndIncrement(counter);
    }

    public void add(final int counter, final long delta)
    {
        values.getAndAdd(counter, delta);
    }

    public long get(final int counter)
    {
        return values.get(counter);
    }

    /**
     * @return one line per counter, "name: value", non-zero counters only unless {@code all}.
     */
    public String describe(final boolean all)
    {
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < NAMES.length; i++)
        {
            final long value = values.get(i);
            if (all || value != 0)
            {
                sb.append(NAMES[i]).append(": ").append(value).append('\n');
            }
        }
        return sb.toString();
    }
}
