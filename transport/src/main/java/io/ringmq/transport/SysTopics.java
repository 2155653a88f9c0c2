package io.ringmq.transport;

import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.ExpandableArrayBuffer;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The {@code $SYS} tree, with Mosquitto's topic names and meanings, published retained every
 * {@code --sys-interval} through the ingress ring as the broker's own PUBLISHes
 * ({@link IngressEvent#SYSTEM_CONNECTION}): routed, stored and delivered like any other message, so a dashboard
 * written for Mosquitto reads ringmq. Values come from the counters (and the gauges the routing stage sets), never
 * from a stage's structures. Runs in I/O agent 0's duty cycle; nothing here is on the hot path.
 * <pre>
 *   $SYS/broker/version | uptime | clients/{connected,disconnected,total,maximum,expired}
 *   $SYS/broker/messages/{received,sent}  publish/messages/{received,sent,dropped}  bytes/{received,sent}
 *   $SYS/broker/subscriptions/count  retained messages/count  heap/{current,maximum}
 *   $SYS/broker/load/{messages,publish,bytes}/{received,sent}/{1min,5min,15min}  load/connections/{1min,...}
 *   $SYS/broker/ringmq/&lt;counter&gt;   every counter and gauge, by its key
 * </pre>
 */
final class SysTopics
{
    /** Something that takes one packet: the agent's ingress proxy. */
    interface Publisher
    {
        /**
         * @return false when it cannot take it now (the ring is full): this round skips it.
         */
        boolean publish(ExpandableArrayBuffer packet, int length);
    }

    private static final String PREFIX = "$SYS/broker/";
    private static final int[] MINUTES = {1, 5, 15};
    private static final String[] LOADS = {"messages/received", "messages/sent", "publish/messages/received",
        "publish/messages/sent", "bytes/received", "bytes/sent", "connections"};
    private static final int[] LOAD_COUNTERS = {BrokerCounters.PACKETS_IN, BrokerCounters.PACKETS_OUT,
        BrokerCounters.PUBLISH_IN, BrokerCounters.PUBLISH_OUT, BrokerCounters.BYTES_IN, BrokerCounters.BYTES_OUT,
        BrokerCounters.CONNECTIONS_ACCEPTED};
    private static final int[] DROPS = {BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER, BrokerCounters.QUEUE_FULL_DROPPED,
        BrokerCounters.QUEUED_BYTES_DROPPED, BrokerCounters.QOS0_SHED_MEMORY};

    private final BrokerCounters counters;
    private long intervalMs;
    private final long startMs;
    private final Publisher publisher;
    private final PublishEncoder encoder = new PublishEncoder();
    private final ExpandableArrayBuffer packet = new ExpandableArrayBuffer(256);
    private final double[][] load = new double[LOADS.length][MINUTES.length];
    private final long[] lastLoadValue = new long[LOADS.length];
    private final java.util.List<String> roundTopics = new java.util.ArrayList<>();
    private final java.util.List<String> roundValues = new java.util.ArrayList<>();
    private int resumeAt;
    private long nextMs;
    private long lastMs;
    private long maximumConnected;

    /**
     * @param intervalMs how often the tree is published; 0 turns it off.
     */
    SysTopics(final BrokerCounters counters, final long intervalMs, final long nowMs, final Publisher publisher)
    {
        this.counters = counters;
        this.intervalMs = intervalMs;
        this.startMs = nowMs;
        this.lastMs = nowMs;
        this.nextMs = nowMs; // the first round goes out at once: version and uptime are there from the start
        this.publisher = publisher;
        for (int i = 0; i < LOADS.length; i++)
        {
            lastLoadValue[i] = counters.get(LOAD_COUNTERS[i]);
        }
    }

    /**
     * @return how many topics were published (0 when it is not time yet, or $SYS is off).
     */
    int poll(final long nowMs)
    {
        if (intervalMs <= 0)
        {
            return 0;
        }
        if (resumeAt < roundTopics.size())
        {
            return publishRound(); // a round the ring could not take whole goes on where it stopped
        }
        if (nowMs < nextMs)
        {
            return 0;
        }
        nextMs = nowMs + intervalMs;
        updateLoads(nowMs);
        roundTopics.clear();
        roundValues.clear();
        resumeAt = 0;
        collectRound(nowMs);
        return publishRound();
    }

    /**
     * Publishes the round from where it stopped, until the ring is full.
     *
     * @return how many topics went out.
     */
    private int publishRound()
    {
        int published = 0;
        while (resumeAt < roundTopics.size())
        {
            if (!send(roundTopics.get(resumeAt), roundValues.get(resumeAt)))
            {
                break; // the ring is full: the rest on the next duty cycle
            }
            resumeAt++;
            published++;
        }
        return published;
    }

    private void collectRound(final long nowMs)
    {
        final long connected = counters.get(BrokerCounters.CLIENTS_CONNECTED);
        final long total = counters.get(BrokerCounters.SESSIONS_CURRENT);
        maximumConnected = Math.max(maximumConnected, connected);
        add("version", "ringmq " + Main.Version.VERSION);
        add("uptime", (nowMs - startMs) / 1000 + " seconds");
        add("clients/connected", connected);
        add("clients/total", total);
        add("clients/disconnected", Math.max(0, total - connected));
        add("clients/maximum", maximumConnected);
        add("clients/expired", counters.get(BrokerCounters.SESSIONS_EXPIRED));
        add("messages/received", counters.get(BrokerCounters.PACKETS_IN));
        add("messages/sent", counters.get(BrokerCounters.PACKETS_OUT));
        add("publish/messages/received", counters.get(BrokerCounters.PUBLISH_IN));
        add("publish/messages/sent", counters.get(BrokerCounters.PUBLISH_OUT));
        long dropped = 0;
        for (final int drop : DROPS)
        {
            dropped += counters.get(drop);
        }
        add("publish/messages/dropped", dropped);
        add("bytes/received", counters.get(BrokerCounters.BYTES_IN));
        add("bytes/sent", counters.get(BrokerCounters.BYTES_OUT));
        add("subscriptions/count", counters.get(BrokerCounters.SUBSCRIPTIONS_CURRENT));
        add("retained messages/count", counters.get(BrokerCounters.RETAINED_CURRENT));
        final Runtime runtime = Runtime.getRuntime();
        add("heap/current", runtime.totalMemory() - runtime.freeMemory());
        add("heap/maximum", runtime.maxMemory());
        for (int i = 0; i < LOADS.length; i++)
        {
            for (int m = 0; m < MINUTES.length; m++)
            {
                add("load/" + LOADS[i] + "/" + MINUTES[m] + "min",
                    String.format(Locale.ROOT, "%.2f", load[i][m]));
            }
        }
        for (int counter = 0; counter < BrokerCounters.count(); counter++)
        {
            add("ringmq/" + BrokerCounters.key(counter), counters.get(counter));
        }
    }

    /**
     * Moves each load average (a rate per minute, smoothed exponentially over 1, 5 and 15 minutes, as
     * Mosquitto's) by what happened since the last round.
     */
    private void updateLoads(final long nowMs)
    {
        final long elapsedMs = nowMs - lastMs;
        lastMs = nowMs;
        if (elapsedMs <= 0)
        {
            return;
        }
        for (int i = 0; i < LOADS.length; i++)
        {
            final long value = counters.get(LOAD_COUNTERS[i]);
            final double perMinute = (value - lastLoadValue[i]) * 60_000.0 / elapsedMs;
            lastLoadValue[i] = value;
            for (int m = 0; m < MINUTES.length; m++)
            {
                final double weight = 1 - Math.exp(-elapsedMs / (MINUTES[m] * 60_000.0));
                load[i][m] += (perMinute - load[i][m]) * weight;
            }
        }
    }

    private void add(final String topic, final long value)
    {
        add(topic, Long.toString(value));
    }

    /**
     * Adds a topic and its value to the round.
     */
    private void add(final String topic, final String value)
    {
        roundTopics.add(PREFIX + topic);
        roundValues.add(value);
    }

    /**
     * @return true when the ring took it.
     */
    private boolean send(final String topic, final String value)
    {
        encoder.reset().version(MqttVersion.V3_1_1).qos(0).retain(true).topic(topic)
            .payload(value.getBytes(StandardCharsets.UTF_8));
        packet.checkLimit(encoder.encodedLength());
        final int length = encoder.encode(packet, 0);
        return publisher.publish(packet, length);
    }

    /**
     * A new interval (a reload; agent 0's thread): a round goes out at the next duty cycle, then one per interval.
     */
    void intervalMs(final long intervalMs)
    {
        if (intervalMs != this.intervalMs)
        {
            this.intervalMs = intervalMs;
            this.nextMs = Long.MIN_VALUE;
        }
    }
}
