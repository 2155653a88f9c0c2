package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.ErrorLog;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishFlyweight;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The three stages in-process, without sockets: events go onto the real ingress ring as an I/O agent would put
 * them (through the slot's own writer, big packets through agent 0's message log; a valid PUBLISH without a Topic
 * Alias located, {@link IngressEvent#located}, unless {@link #locatePublishes} is off), one {@link StageAgent} is
 * stepped by hand until every stage has seen them, and what the broker would send is recorded.
 */
final class PipelineHarness
{
    final PipelineTest.RecordingOutbound outbound;
    final BrokerCounters counters = new BrokerCounters();
    final Pipeline pipeline;
    final StageAgent agent;
    private final BrokerContext context;
    private long addressKey = io.ringmq.pipeline.auth.AddressKeys.NONE;
    /**
     * Whether a PUBLISH goes in located, as the I/O agent hands one it validated in place; off, every PUBLISH takes
     * the stages' own path (as a resolved Topic Alias or a broker's {@code $SYS} message does).
     */
    boolean locatePublishes = true;
    private final PublishFlyweight layout = new PublishFlyweight();

    PipelineHarness(final BrokerContext context, final Authenticator authenticator)
    {
        this(context, authenticator, new PipelineTest.RecordingOutbound());
    }

    PipelineHarness(final BrokerContext context, final Authenticator authenticator,
        final PipelineTest.RecordingOutbound outbound)
    {
        this(context, authenticator, outbound, outbound);
    }

    /**
     * @param front    what the shards write to (a wrapper of {@code outbound} that may fail, say).
     * @param outbound what records the packets sent.
     */
    PipelineHarness(final BrokerContext context, final Authenticator authenticator, final Outbound front,
        final PipelineTest.RecordingOutbound outbound)
    {
        this(context, authenticator, front, outbound, io.ringmq.pipeline.persistence.MemoryStore.none());
    }

    /**
     * @param store where the pipeline keeps and recovers persistent state (a test restarts a broker by making a new
     *              harness on the same store).
     */
    PipelineHarness(final BrokerContext context, final Authenticator authenticator,
        final io.ringmq.pipeline.persistence.DurableStore store)
    {
        this(context, authenticator, new PipelineTest.RecordingOutbound(), null, store);
    }

    /**
     * @param front    what the shards write to (a wrapper of {@code outbound}).
     * @param outbound what records the packets sent.
     * @param store    where the pipeline keeps persistent state.
     */
    PipelineHarness(final BrokerContext context, final Authenticator authenticator, final Outbound front,
        final PipelineTest.RecordingOutbound outbound, final io.ringmq.pipeline.persistence.DurableStore store)
    {
        context.conclude();
        this.context = context;
        this.outbound = null != outbound ? outbound : (PipelineTest.RecordingOutbound)front;
        pipeline = new Pipeline(context, authenticator, front, ConnectionControl.NONE, counters,
            new ErrorLog(counters), store);
        agent = pipeline.allStages("test");
        this.outbound.drains = pipeline.routing().retainedDrains();
    }

    /**
     * What the client address of the packets put or offered from now on counts as ({@link IngressEvent#addressKey}).
     */
    void addressKey(final long addressKey)
    {
        this.addressKey = addressKey;
    }

    void offer(final long connectionId, final boolean loopback, final byte[] packet, final int kind)
    {
        offer(0, connectionId, loopback, packet, kind);
    }

    /**
     * Puts a packet (or an end) from I/O agent {@code agent} on the ring and steps the stages.
     */
    void offer(final int agent, final long connectionId, final boolean loopback, final byte[] packet,
        final int kind)
    {
        offer(agent, connectionId, loopback, packet, kind, MqttVersion.V3_1_1, 0, IngressEvent.NONE);
    }

    /**
     * As {@link #offer(int, long, boolean, byte[], int)} in a protocol version; an end with a reason code and a
     * DISCONNECT's Session Expiry Interval ({@link IngressEvent#NONE} for none).
     */
    void offer(final int agent, final long connectionId, final boolean loopback, final byte[] packet,
        final int kind, final int version, final int reasonCode, final long sessionExpiryInterval)
    {
        put(agent, connectionId, loopback, packet, kind, version, reasonCode, sessionExpiryInterval);
        step();
    }

    /**
     * As {@link #offer(int, long, boolean, byte[], int, int, int, long)} without stepping the stages (their own
     * threads may be running them); one producer thread only.
     */
    void put(final int agent, final long connectionId, final boolean loopback, final byte[] packet,
        final int kind, final int version, final int reasonCode, final long sessionExpiryInterval)
    {
        final long sequence = pipeline.ring().next();
        final IngressEvent event = pipeline.ring().get(sequence);
        if (kind == IngressEvent.PACKET)
        {
            final MessageLog log = pipeline.messageLog(agent);
            final long logEnd = packet.length > event.inlineCapacity() ?
                log.append(new UnsafeBuffer(packet), 0, packet.length) : -1;
            event.packet(agent, connectionId, version, loopback, (packet[0] & 0xFF) >>> 4,
                new UnsafeBuffer(packet), packet.length, log, logEnd);
            event.addressKey = addressKey;
            if (locatePublishes && event.packetType == PacketType.PUBLISH)
            {
                locate(event, version);
            }
        }
        else
        {
            event.end(kind, agent, connectionId, version, reasonCode, sessionExpiryInterval);
        }
        pipeline.ring().publish(sequence);
    }

    /**
     * Locates a PUBLISH as the I/O agent does ({@code InboundPublishes}): one that validates and carries no Topic
     * Alias; any other is left for the stages to find (a malformed one: a test of their own checks).
     */
    private void locate(final IngressEvent event, final int version)
    {
        if (layout.wrap(event.packet, 0, event.packetLength, version) != event.packetLength ||
            version == MqttVersion.V5 && layout.properties().has(PropertyId.TOPIC_ALIAS))
        {
            return;
        }
        event.located(layout.topic().offset(), layout.topic().length(), layout.payload().offset(),
            layout.payload().length());
    }

    /**
     * Puts a packet from I/O agent {@code agent} on the ring without stepping the stages.
     */
    void offerOnly(final int agent, final long connectionId, final byte[] packet)
    {
        final long sequence = pipeline.ring().next();
        final IngressEvent event = pipeline.ring().get(sequence);
        event.packet(agent, connectionId, MqttVersion.V3_1_1, true, (packet[0] & 0xFF) >>> 4, new UnsafeBuffer(packet),
            packet.length, pipeline.messageLog(agent), -1);
        event.addressKey = addressKey;
        pipeline.ring().publish(sequence);
    }

    /**
     * @return whether a shard asked for the connection to be closed.
     */
    boolean closed(final long connectionId)
    {
        return outbound.closed.stream().anyMatch(c -> c[1] == connectionId);
    }

    void packet(final long connectionId, final byte[] packet)
    {
        offer(connectionId, true, packet, IngressEvent.PACKET);
    }

    /**
     * Steps the stages until none has work left.
     */
    void step()
    {
        while (agent.doWork() > 0)
        {
            // until every stage has seen everything
        }
        for (int i = 0; i < 3; i++)
        {
            agent.doWork(); // a few idle cycles too: a shard waiting for a hand-over polls again
        }
    }

    /**
     * Lets the delivery shards write the ends of messages their journals batched
     * ({@link io.ringmq.pipeline.persistence.ShardJournal}), as a running broker does within its fsync interval:
     * waits that long (by the journal's clock), then runs the stages' duty cycles.
     */
    void settle()
    {
        final long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(context.persistence().fsyncIntervalMs());
        while (System.nanoTime() - until < 0)
        {
            LockSupport.parkNanos(until - System.nanoTime());
        }
        step();
    }
}
