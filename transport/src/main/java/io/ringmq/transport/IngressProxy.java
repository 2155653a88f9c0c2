package io.ringmq.transport;

import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.auth.CredentialRequest;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.Slice;
import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayDeque;

/**
 * An I/O agent's side of the ingress ring. A packet claims a slot without blocking: a full ring answers "not now"
 * and the agent stops reading that connection until there is room (backpressure; nothing is dropped). The end of
 * a connection must always reach the pipeline, so an end that finds the ring full waits here and is retried every
 * duty cycle, in order.
 */
final class IngressProxy
{
    private final RingBuffer<IngressEvent> ring;
    private final MessageLog log;
    private final int agentIndex;
    private final int inlineCapacity;
    private final ArrayDeque<long[]> pendingEnds = new ArrayDeque<>();
    private boolean published;
    private boolean logFull;
    private long nowNs;
    /**
     * Between {@link #beginBatch} and {@link #endBatch}: PUBLISHes for the message log ({@link #publish}) that lie
     * one after another in what was read and land one after another in the log are copied in one go, and their
     * slots published then (under C1 each {@code Unsafe.copyMemory} is a native call, about half the cost of
     * copying a KiB). The run: where its bytes start (array and address, as in {@link DirectBuffer}), its log index
     * and length, and its first and last slots.
     */
    private boolean batching;
    private final boolean batchCopies;
    private byte[] runArray;
    private long runAddress;
    private int runIndex;
    private int runLength;
    private long runFirst;
    private long runLast;
    private final UnsafeBuffer runSource = new UnsafeBuffer(0, 0);

    IngressProxy(final RingBuffer<IngressEvent> ring, final MessageLog log, final int agentIndex)
    {
        this(ring, log, agentIndex, true);
    }

    /**
     * @param batchCopies whether PUBLISHes handed inside a batch may be copied in runs ({@link #beginBatch}).
     */
    IngressProxy(final RingBuffer<IngressEvent> ring, final MessageLog log, final int agentIndex,
        final boolean batchCopies)
    {
        this.batchCopies = batchCopies;
        this.ring = ring;
        this.log = log;
        this.agentIndex = agentIndex;
        this.inlineCapacity = ring.get(0).inlineCapacity();
    }

    /**
     * @param nowNs the clock of the agent's duty cycle, read once per cycle: the ingress time of what it reads.
     */
    void nowNs(final long nowNs)
    {
        this.nowNs = nowNs;
    }

    /**
     * Copies one validated packet into a slot, or into the message log when it is larger than a slot holds.
     * It never overtakes the end of a connection still waiting for room, so a client's new CONNECT cannot reach
     * the pipeline before the loss of its previous connection.
     *
     * @return false when the ring or the log is full (the caller pauses the connection and tries again later).
     */
    boolean packet(final long connectionId, final int version, final boolean loopback, final int packetType,
        final DirectBuffer bytes, final int length)
    {
        return packet(connectionId, version, loopback, packetType, bytes, length, AddressKeys.NONE);
    }

    /**
     * As {@link #packet(long, int, boolean, int, DirectBuffer, int)}, with what its client's address counts as (a
     * SUBSCRIBE's: the routing stage shares the retained walks of one address's sessions, {@link IngressEvent#addressKey}).
     */
    boolean packet(final long connectionId, final int version, final boolean loopback, final int packetType,
        final DirectBuffer bytes, final int length, final long addressKey)
    {
        return hand(connectionId, version, loopback, packetType, bytes, length, CredentialRequest.NO_VERDICT, 2, null,
            null, false, false, addressKey);
    }

    /**
     * @return the most bytes a packet may have to travel in its slot, without a message log entry.
     */
    int inlineCapacity()
    {
        return inlineCapacity;
    }

    /**
     * As {@link #packet(long, int, boolean, int, DirectBuffer, int)}, for a CONNECT with the credential workers'
     * verdict on it ({@link CredentialRequest#NO_VERDICT} when it needed none) and the highest QoS its connection
     * may use (its CONNACK says so, and its subscriptions are granted at most it), and its listener's mount point
     * (null: none).
     */
    boolean connect(final long connectionId, final int version, final boolean loopback, final DirectBuffer bytes,
        final int length, final long credentialVerdict, final int maxQos, final byte[] mountPoint)
    {
        return connect(connectionId, version, loopback, bytes, length, credentialVerdict, maxQos, mountPoint, false,
            AddressKeys.NONE);
    }

    /**
     * As {@link #connect(long, int, boolean, DirectBuffer, int, long, int, byte[])}; {@code bridge}: a CONNECT of the
     * broker's own bridge, from its loopback listener ({@link IngressEvent#bridge}); {@code addressKey}: what its
     * client's address counts as, for an enhanced authentication ({@link IngressEvent#addressKey}).
     */
    boolean connect(final long connectionId, final int version, final boolean loopback, final DirectBuffer bytes,
        final int length, final long credentialVerdict, final int maxQos, final byte[] mountPoint, final boolean bridge,
        final long addressKey)
    {
        return hand(connectionId, version, loopback, PacketType.CONNECT, bytes, length, credentialVerdict, maxQos,
            mountPoint, null, false, bridge, addressKey);
    }

    /**
     * As {@link #packet(long, int, boolean, int, DirectBuffer, int)}, for a PUBLISH whose flyweight wraps
     * {@code bytes} from offset 0: where its topic and payload lie goes into the slot with it
     * ({@link IngressEvent#located}), so the stages need not find them again. Inside a batch its bytes may be copied
     * only at {@link #endBatch}, {@link #flush} or the next slot published: they are the bytes as read, which stay
     * where they are until then.
     */
    boolean publish(final long connectionId, final int version, final boolean loopback, final DirectBuffer bytes,
        final int length, final PublishFlyweight layout)
    {
        return hand(connectionId, version, loopback, PacketType.PUBLISH, bytes, length, CredentialRequest.NO_VERDICT,
            2, null, layout, batching && batchCopies, false, AddressKeys.NONE);
    }

    private boolean hand(final long connectionId, final int version, final boolean loopback, final int packetType,
        final DirectBuffer bytes, final int length, final long credentialVerdict, final int maxQos,
        final byte[] mountPoint, final PublishFlyweight layout, final boolean defer, final boolean bridge,
        final long addressKey)
    {
        if (!pendingEnds.isEmpty())
        {
            retryEnds();
            if (!pendingEnds.isEmpty())
            {
                return false; // behind an end that is still waiting
            }
        }
        final long tail = log.tail();
        long logEnd = -1;
        if (length > inlineCapacity)
        {
            logEnd = defer ? log.claim(length) : log.append(bytes, 0, length); // deferred: copied by flush
            if (logEnd < 0)
            {
                logFull = true;
                return false;
            }
        }
        final long sequence = claim();
        if (sequence < 0)
        {
            log.rollback(tail); // nobody saw it: the log entry is given back at once
            return false;
        }
        final IngressEvent event = ring.get(sequence);
        event.packet(agentIndex, connectionId, version, loopback, packetType, bytes, length, log, logEnd);
        if (null != layout)
        {
            final Slice topic = layout.topic();
            final Slice payload = layout.payload();
            event.located(topic.offset(), topic.length(), payload.offset(), payload.length());
        }
        event.ingressNs = nowNs;
        event.credentialVerdict = credentialVerdict;
        event.bridge = bridge;
        event.addressKey = addressKey;
        event.maxQos = maxQos;
        event.mountPoint = mountPoint;
        if (defer && logEnd >= 0)
        {
            addToRun(bytes, log.indexOf(logEnd, length), length, sequence);
            return true;
        }
        publish(sequence); // the slot is visible to the stages only once every field is written
        return true;
    }

    /**
     * From here until {@link #endBatch}, packets handed for the message log may be copied later, in runs, and their
     * slots published then: the caller keeps the bytes it hands in place until {@link #endBatch}.
     */
    void beginBatch()
    {
        batching = true;
    }

    /**
     * Copies what waits and publishes its slots; no packet is left waiting.
     */
    void endBatch()
    {
        batching = false;
        flush();
    }

    private void addToRun(final DirectBuffer bytes, final int index, final int length, final long sequence)
    {
        final byte[] array = bytes.byteArray();
        final long address = bytes.addressOffset();
        if (runLength > 0 && (sequence != runLast + 1 || array != runArray || address != runAddress + runLength ||
            index != runIndex + runLength))
        {
            // not right behind the run: in the ring (another producer claimed between: publishing a range would
            // publish its slot too), in what was read, or in the log (an entry never wraps)
            flush();
        }
        if (runLength == 0)
        {
            runArray = array;
            runAddress = address;
            runIndex = index;
            runFirst = sequence;
        }
        runLength += length;
        runLast = sequence;
    }

    /**
     * Copies what waits and publishes its slots, before the bytes it was read into may change (a connection closed
     * in the middle of a batch gives its buffer back).
     */
    void flush()
    {
        if (runLength == 0)
        {
            return;
        }
        if (null == runArray)
        {
            runSource.wrap(runAddress, runLength);
        }
        else
        {
            runSource.wrap(runArray, (int)(runAddress - BufferUtil.ARRAY_BASE_OFFSET), runLength);
        }
        try
        {
            log.buffer().putBytes(runIndex, runSource, 0, runLength);
        }
        finally
        {
            runSource.wrap(0, 0);
            runArray = null;
            runLength = 0; // a copy that threw leaves no run behind to throw again at every later publish
        }
        ring.publish(runFirst, runLast); // one range: the run's slots are consecutive
        published = true;
    }

    /**
     * Publishes a slot, after every slot claimed before it that waits in a run (a single-producer ring's cursor
     * publishes every slot below it). A single-producer ring's {@code tryNext} may also move its cursor to the last
     * slot claimed; that a run's slots are then visible before their copy is harmless only because such a ring is
     * consumed on this very thread, after the batch ({@code Pipeline}: shared and invoker threading).
     */
    private void publish(final long sequence)
    {
        flush();
        ring.publish(sequence);
        published = true;
    }

    /**
     * @return whether the message log refused a packet since the last call (for its counter).
     */
    boolean takeLogFull()
    {
        final boolean result = logFull;
        logFull = false;
        return result;
    }

    /**
     * Tells the pipeline a connection ended: {@link IngressEvent#CONNECTION_LOST} or
     * {@link IngressEvent#DISCONNECTED}. Never lost: kept and retried while the ring is full.
     *
     * @param reasonCode            for DISCONNECTED the client's DISCONNECT reason code (0 on 3.1.1); for
     *                              CONNECTION_LOST the reason the server ended it, 0 when the socket just closed.
     * @param sessionExpiryInterval the Session Expiry Interval of a 5.0 DISCONNECT, or {@link IngressEvent#NONE}.
     */
    void end(final long connectionId, final int kind, final int version, final int reasonCode,
        final long sessionExpiryInterval)
    {
        if (!pendingEnds.isEmpty() || !tryEnd(connectionId, kind, version, reasonCode, sessionExpiryInterval))
        {
            // behind earlier ends, in order
            pendingEnds.addLast(new long[]{connectionId, kind, version, reasonCode, sessionExpiryInterval});
        }
    }

    /**
     * @return how many waiting ends went out.
     */
    int retryEnds()
    {
        int work = 0;
        while (!pendingEnds.isEmpty())
        {
            final long[] end = pendingEnds.peekFirst();
            if (!tryEnd(end[0], (int)end[1], (int)end[2], (int)end[3], end[4]))
            {
                break;
            }
            pendingEnds.pollFirst();
            work++;
        }
        return work;
    }

    /**
     * @return whether anything was published since the last call (to wake the stages once per duty cycle).
     */
    boolean takePublished()
    {
        final boolean result = published;
        published = false;
        return result;
    }

    private boolean tryEnd(final long connectionId, final int kind, final int version, final int reasonCode,
        final long sessionExpiryInterval)
    {
        final long sequence = claim();
        if (sequence < 0)
        {
            return false;
        }
        ring.get(sequence).end(kind, agentIndex, connectionId, version, reasonCode, sessionExpiryInterval);
        publish(sequence);
        return true;
    }

    /**
     * @return how far the last stage has freed the ring (its sequence): it moves whenever slots, and the message log
     * entries they held, are given back.
     */
    long released()
    {
        return ring.getMinimumGatingSequence();
    }

    /**
     * @return whether connection ends wait for ring room ({@link #end}).
     */
    boolean hasPendingEnds()
    {
        return !pendingEnds.isEmpty();
    }

    /**
     * @return whether the ring has a free slot now (a hint when other agents publish too: they may take it first).
     */
    boolean hasRoom()
    {
        return ring.hasAvailableCapacity(1);
    }

    /**
     * @return the claimed sequence, or -1 when the ring is full (never blocks).
     */
    private long claim()
    {
        if (!hasRoom())
        {
            return -1; // asked first: a thrown InsufficientCapacityException costs microseconds in C1-compiled code
        }
        try
        {
            return ring.tryNext();
        }
        catch (final InsufficientCapacityException ex)
        {
            return -1;
        }
    }
}
