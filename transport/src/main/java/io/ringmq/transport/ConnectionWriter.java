package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.RetainedDrains;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.DisconnectEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PingCodec;
import io.ringmq.protocol.ReasonCode;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;

/**
 * The writing role of an I/O agent: appends the pipeline's bytes to connection buffers, sheds QoS 0 where a
 * subscriber lags or memory is over budget, notes each connection's CONNACK, and flushes every touched
 * connection once per duty cycle through its {@link SocketLayer}, stopping at a socket that will not take more.
 * Small packets for a connection with nothing waiting are staged in the agent's {@link SmallWrites} buffer and
 * written from there: a keep-alive answer takes nothing from the pool.
 */
final class ConnectionWriter
{
    /** Ends a connection; the agent's. */
    interface Closer
    {
        /**
         * Ends a connection now.
         *
         * @param kind {@link IngressEvent#CONNECTION_LOST} or {@link IngressEvent#DISCONNECTED}.
         */
        void close(Connection connection, int kind);

        /**
         * A buffer the connection needed could not be taken (the pooled memory is spent): it ends now, with nothing
         * more sent, and only it.
         */
        default void outOfBufferMemory(final Connection connection)
        {
            close(connection, IngressEvent.CONNECTION_LOST);
        }

        /**
         * A connection not admitted yet would hold more of the pooled memory than such connections share
         * ({@link InboundBuffers}): it ends now, with nothing more sent.
         */
        default void pastUnadmittedShare(final Connection connection)
        {
            close(connection, IngressEvent.CONNECTION_LOST);
        }

        /**
         * A TLS handshake held its slot too long while another address's connection waited for one
         * ({@link HandshakeSlots#yielding}): it ends now.
         */
        default void handshakeYielded(final Connection connection)
        {
            close(connection, IngressEvent.CONNECTION_LOST);
        }

        /**
         * A partial packet held its room unread too long while other connections waited for room
         * ({@link PartialPacketRoom#stalled}): it ends now.
         */
        default void partialPacketStalled(final Connection connection)
        {
            close(connection, IngressEvent.CONNECTION_LOST);
        }

        /**
         * Ends a connection for a reason: an MQTT 5.0 client is sent a DISCONNECT with that reason code first
         * [MQTT-4.13.1-1], a 3.1.1 client is just closed. Either way the end event carries the reason.
         */
        void disconnect(Connection connection, int reasonCode);

        /**
         * As {@link #disconnect(Connection, int)}, saying why in the DISCONNECT's Reason String (left out when the
         * packet would pass the client's Maximum Packet Size).
         */
        void disconnect(Connection connection, int reasonCode, String reasonString);
    }

    private static final int CONNACK_FIRST_BYTE = PacketType.CONNACK << 4;
    /** A 3.1.1 CONNACK: fixed header, acknowledge flags, return code. */
    private static final int V31_CONNACK_LENGTH = 4;
    private final UnsafeBuffer v31Connack = new UnsafeBuffer(new byte[V31_CONNACK_LENGTH]);

    /** The limits in force; a reload replaces them on the owning agent's thread. */
    private BrokerContext context;
    private final BrokerCounters counters;
    private final MemoryBudget memoryBudget;
    private final PausedConnections paused;
    private final Closer closer;
    private final IdleBuffers idle;
    private final List<Connection> touched = new ArrayList<>();
    /** Small packets for connections with nothing waiting: written from here, no pooled buffer taken. */
    private final SmallWrites smallWrites = new SmallWrites();
    private final UnsafeBuffer outView = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer constant = new UnsafeBuffer(new byte[0]);
    private final byte[] pingResponse = new byte[PingCodec.LENGTH];
    /** A DISCONNECT with its Reason String fits here; a longer reason is left out. */
    private static final int DISCONNECT_CAPACITY = 256;
    private final UnsafeBuffer disconnect = new UnsafeBuffer(new byte[DISCONNECT_CAPACITY]);
    private final MqttProperties disconnectProperties = new MqttProperties();
    // per-message counts, added to the shared counters by the agent once per duty cycle
    long publishOut;
    long packetsOut;
    long bytesOut;
    long qos0Dropped;
    long qos0Shed;

    /** Where what the connections that retained parts go to owe is written; null: nowhere (stage tests). */
    private RetainedDrains drains;

    /** Where a refused enhanced authentication is counted toward its address's back-off; may be null. */
    private io.ringmq.pipeline.auth.CredentialWorkers credentials;

    /**
     * Counts refused enhanced authentications toward their addresses' back-off.
     */
    void credentials(final io.ringmq.pipeline.auth.CredentialWorkers credentials)
    {
        this.credentials = credentials;
    }

    ConnectionWriter(final BrokerContext context, final BrokerCounters counters, final MemoryBudget memoryBudget,
        final PausedConnections paused, final Closer closer, final IdleBuffers idle)
    {
        this.idle = idle;
        this.context = context;
        this.counters = counters;
        this.memoryBudget = memoryBudget;
        this.paused = paused;
        this.closer = closer;
        PingCodec.encode(new UnsafeBuffer(pingResponse), 0, PacketType.PINGRESP);
    }

    void drains(final RetainedDrains drains)
    {
        this.drains = drains;
    }

    /**
     * A retained part came for the connection: it writes what it owes to the part's slot, now and after each flush
     * ({@link #reportDrain}), so the routing stage sends the next part as its client reads. A slot out of the table's
     * range (none of the routing stage's) is ignored.
     */
    void watch(final Connection connection, final int drainSlot)
    {
        if (null != drains && !connection.closed && RetainedDrains.valid(drainSlot))
        {
            connection.drainSlot = drainSlot;
            drains.report(drainSlot, connection.id, connection.outBytes(), true);
        }
    }

    /**
     * After a flush of a watched connection: what it owes now; it stops once another connection holds its slot.
     */
    private void reportDrain(final Connection connection)
    {
        if (!drains.report(connection.drainSlot, connection.id, connection.outBytes(), false))
        {
            connection.drainSlot = RetainedDrains.NONE;
        }
    }

    /**
     * Queues the pipeline's bytes for a connection: whole packets, the first byte of one at {@code offset}.
     */
    void send(final Connection connection, final DirectBuffer buffer, final int offset, final int length)
    {
        send(connection, buffer, offset, length, true);
    }

    /**
     * @param sheddable whether a QoS 0 PUBLISH may be shed past the connection's high-water mark (false: one its
     *                  session queued while its client was away, which must arrive; the memory budget still sheds).
     */
    void send(final Connection connection, final DirectBuffer buffer, final int offset, final int length,
        final boolean sheddable)
    {
        final int first = buffer.getByte(offset) & 0xFF;
        if (first == CONNACK_FIRST_BYTE && connection.connack == Connection.CONNACK_PENDING)
        {
            if (connection.v31 && length >= V31_CONNACK_LENGTH)
            {
                // MQTT 3.1 has no Session Present flag: that byte is reserved, 0 (as Mosquitto sends it)
                v31Connack.putBytes(0, buffer, offset, V31_CONNACK_LENGTH);
                v31Connack.putByte(2, (byte)0);
                append(connection, v31Connack, 0, V31_CONNACK_LENGTH);
                if (length > V31_CONNACK_LENGTH)
                {
                    append(connection, buffer, offset + V31_CONNACK_LENGTH, length - V31_CONNACK_LENGTH);
                }
            }
            else
            {
                append(connection, buffer, offset, length);
            }
            if (!connection.closed)
            {
                onConnack(connection, connackCode(buffer, offset, length));
            }
            return;
        }
        if ((first >>> 4) == PacketType.PUBLISH)
        {
            if ((first & 0x06) == 0 && shedQos0(connection, buffer, offset, length, sheddable))
            {
                return;
            }
            publishOut++;
        }
        else if (null != connection.inboundQuota)
        {
            connection.inboundQuota.onSent(buffer, offset, length); // an answer frees the client's receive maximum
        }
        append(connection, buffer, offset, length);
        if (!sheddable && !connection.closed)
        {
            connection.keptOwed = connection.outBytes();
        }
    }

    /**
     * QoS 0 may be shed: past the connection's high-water mark (a subscriber that does not keep up), or while the
     * broker is over its memory budget. A 5.0 PUBLISH that tells the client a new topic alias cannot be, since later
     * ones use the alias; it is always queued within one duty cycle's burst (a SUBSCRIBE's retained messages, a
     * publisher's burst on new topics, read by a subscriber that keeps up), but once the socket stopped taking what
     * the connection owes and it holds twice the high-water mark, a subscriber that reads nothing while new topics
     * keep coming holds no more: the connection ends (DISCONNECT 0x97 behind what it has not read, closed after the
     * linger). One its session queued while its client was away ({@code sheddable} false) must arrive: only the
     * memory budget sheds it; such a burst ({@link Connection#keptOwed}) widens the new alias's allowance by what it
     * left owed, so it never ends the connection itself.
     *
     * @return true when the PUBLISH is not to be queued.
     */
    private boolean shedQos0(final Connection connection, final DirectBuffer buffer, final int offset,
        final int length, final boolean sheddable)
    {
        final long highWater = context.outboundHighWaterBytes();
        if (connection.keptOwed > 0 && connection.outBytes() <= highWater)
        {
            connection.keptOwed = 0; // the burst of queued QoS 0 is written, all but the high-water mark
        }
        final boolean newAlias = connection.version == MqttVersion.V5 && assignsAlias(buffer, offset, length);
        if (sheddable && connection.outBytes() > highWater && (!newAlias ||
            connection.writeBlocked && connection.outBytes() > 2 * highWater + (long)connection.keptOwed))
        {
            qos0Dropped++;
            if (newAlias)
            {
                closer.disconnect(connection, ReasonCode.QUOTA_EXCEEDED);
            }
            return true;
        }
        if (!newAlias && memoryBudget.isOver())
        {
            qos0Shed++;
            return true;
        }
        return false;
    }

    /**
     * Queues the server's DISCONNECT for an MQTT 5.0 connection whose CONNACK accepted it (none may precede that
     * CONNACK [MQTT-3.14.0-1]); from then on nothing more is read from it or sent to it [MQTT-3.14.4-1], and it
     * closes once the DISCONNECT is written.
     *
     * @return false when no DISCONNECT is due: a 3.1.1 connection, no accepting CONNACK yet, or one already sent.
     */
    boolean sendDisconnect(final Connection connection, final int reasonCode, final String reasonString)
    {
        if (connection.version != MqttVersion.V5 || connection.connack != Connection.CONNACK_ACCEPTED ||
            connection.closing || connection.closed)
        {
            return false;
        }
        MqttProperties properties = null;
        if (null != reasonString)
        {
            // on the error path only: a DISCONNECT may always carry a Reason String [MQTT-3.1.2-29]
            properties = disconnectProperties.clear().set(PropertyId.REASON_STRING, reasonString);
            if (DisconnectEncoder.encodedLength(PacketType.DISCONNECT, MqttVersion.V5, reasonCode, properties) >
                Math.min(connection.maxPacketSize, DISCONNECT_CAPACITY))
            {
                properties = null; // larger than the client takes [MQTT-3.1.2-25]
            }
        }
        final int length = DisconnectEncoder.encode(disconnect, 0, PacketType.DISCONNECT, MqttVersion.V5, reasonCode,
            properties);
        append(connection, disconnect, 0, length);
        connection.closing = true;
        connection.closeAfterFlush = true;
        connection.updateInterest();
        return true;
    }

    /**
     * @return whether a 5.0 QoS 0 PUBLISH carries both a topic and a Topic Alias: it sets the alias for the
     * client, so dropping it would leave later PUBLISHes naming an alias the client never learnt. Only read
     * on the path that would shed it.
     */
    static boolean assignsAlias(final DirectBuffer buffer, final int offset, final int length)
    {
        int index = offset + 1;
        final int end = offset + length;
        while (index < end && (buffer.getByte(index) & 0x80) != 0) // the remaining length's bytes
        {
            index++;
        }
        index++;
        if (index + 2 > end)
        {
            return false;
        }
        final int topicLength = buffer.getShort(index, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF;
        if (topicLength == 0)
        {
            return false; // uses an alias, sets none
        }
        index += 2 + topicLength; // QoS 0: no packet identifier
        final int packed = io.ringmq.protocol.VariableByteInteger.decode(buffer, index, end);
        if (packed < 0)
        {
            return false;
        }
        final int start = index + io.ringmq.protocol.VariableByteInteger.byteCount(packed);
        final int propertiesEnd = Math.min(end, start + io.ringmq.protocol.VariableByteInteger.value(packed));
        return io.ringmq.protocol.MessageProperties.has(buffer, start, propertiesEnd - start,
            io.ringmq.protocol.PropertyId.TOPIC_ALIAS);
    }

    /**
     * The CONNACK is the first packet the server sends [MQTT-3.2.0-1]: packets the client sent after CONNECT were
     * held until now. Accepted, they are processed (a held PINGREQ answered after the CONNACK); refused, nothing
     * more from the client is processed [MQTT-3.1.4-5] and the connection closes once the CONNACK is written
     * [MQTT-3.2.2-5].
     */
    private void onConnack(final Connection connection, final int code)
    {
        final boolean held = connection.awaitingConnack;
        connection.awaitingConnack = false;
        if (code == 0)
        {
            connection.connack = Connection.CONNACK_ACCEPTED;
            connection.layer.admitted();
            if (held || connection.inBytes() > 0)
            {
                paused.add(connection); // its buffered packets go on in the next retry, after this CONNACK
            }
        }
        else
        {
            connection.connack = Connection.CONNACK_REFUSED;
            // only a failed proof counts toward its address's back-off: refusals that cost no cryptography (an
            // unknown method, a quota, the back-off's own refusal) would let anyone push addresses into it cheaply,
            // the back-off's shared state with them
            if (connection.exchange && code == ReasonCode.BAD_USER_NAME_OR_PASSWORD && null != credentials)
            {
                credentials.failedExchange(InboundConnects.remoteAddress(connection), connection.loopback);
            }
            if (null != connection.in)
            {
                connection.in.skipBytes(connection.in.readableBytes());
            }
            connection.paused = false; // nothing of it waits for ring room now: the next retry lets it go
            connection.closeAfterFlush = true;
        }
        connection.updateInterest();
    }

    /**
     * @return a CONNACK's return code (3.1.1) or reason code (5): 0 accepts. A CONNACK too short to say reads as
     * 0x80, a refusal.
     */
    static int connackCode(final DirectBuffer buffer, final int offset, final int length)
    {
        int index = offset + 1;
        final int end = offset + length;
        while (index < end && (buffer.getByte(index) & 0x80) != 0) // the remaining length's bytes
        {
            index++;
        }
        final int code = index + 2; // past the last remaining-length byte and the acknowledge flags
        return code < end ? buffer.getByte(code) & 0xFF : ReasonCode.UNSPECIFIED_ERROR;
    }

    void sendPingResponse(final Connection connection)
    {
        append(connection, constant(pingResponse), 0, pingResponse.length); // [MQTT-3.12.4-1]
    }

    /**
     * Queues fixed bytes the agent answers itself, e.g. a CONNACK refusing an unknown protocol version.
     */
    void sendConstant(final Connection connection, final byte[] bytes)
    {
        append(connection, constant(bytes), 0, bytes.length);
    }

    void closeAfterFlush(final Connection connection)
    {
        connection.closeAfterFlush = true;
        touch(connection);
    }

    private void append(final Connection connection, final DirectBuffer buffer, final int offset, final int length)
    {
        ByteBuf out = connection.out;
        if (null == out)
        {
            if (smallWrites.stage(connection, buffer, offset, length))
            {
                packetsOut++;
                touch(connection); // written from the agent's own buffer when flushed
                return;
            }
            try
            {
                out = smallWrites.spill(connection, length); // given back once unused; what was staged goes first
            }
            catch (final OutOfMemoryError ex)
            {
                closer.outOfBufferMemory(connection);
                return;
            }
            connection.out = out;
        }
        idle.use(connection);
        try
        {
            Buffers.append(out, outView, buffer, offset, length);
        }
        catch (final OutOfMemoryError ex)
        {
            closer.outOfBufferMemory(connection); // what it was owed is lost with it, as with any lost connection
            return;
        }
        packetsOut++; // one packet per append
        touch(connection);
    }

    private void touch(final Connection connection)
    {
        if (!connection.touched)
        {
            connection.touched = true;
            touched.add(connection);
        }
    }

    /**
     * @return whether a connection was given bytes since the last {@link #flushTouched()}.
     */
    boolean hasTouched()
    {
        return !touched.isEmpty();
    }

    /**
     * Writes every connection that was given bytes this cycle, once.
     *
     * @return connections written.
     */
    int flushTouched()
    {
        final int count = touched.size();
        for (int i = 0; i < count; i++)
        {
            final Connection connection = touched.get(i);
            connection.touched = false;
            if (!connection.closed)
            {
                flush(connection);
            }
        }
        touched.clear();
        smallWrites.reset(); // every staged connection was flushed or closed (its staged bytes discarded)
        return count;
    }

    /**
     * Offers a connection's outbound bytes to its socket; waits for writability when it takes only part.
     */
    void flush(final Connection connection)
    {
        final SocketLayer layer = connection.layer;
        final long before = bytesOut;
        try
        {
            final boolean layerClear = !layer.hasPendingOutput() || layer.flush(); // the layer's own bytes first
            if (connection.stagedLength > 0)
            {
                bytesOut += smallWrites.write(connection, layerClear); // the rest, if any, into a pooled out
                if (null != connection.out || layer.holdsIdleBuffers())
                {
                    idle.use(connection); // a pooled out, or a framing layer's own buffer, given back once idle
                }
            }
            else if (layerClear && null != connection.out && connection.out.isReadable())
            {
                bytesOut += Math.max(0, layer.write(connection.out));
            }
        }
        catch (final IOException ex)
        {
            closer.close(connection, IngressEvent.CONNECTION_LOST);
            return;
        }
        catch (final OutOfMemoryError ex)
        {
            closer.outOfBufferMemory(connection); // a layer's buffer (TLS, WebSocket framing) could not grow
            return;
        }
        PartialPacketRoom.wrote(connection, bytesOut - before); // a holder reading what it is owed goes on
        if (connection.drainSlot != RetainedDrains.NONE)
        {
            reportDrain(connection);
        }
        if (connection.outBytes() > 0 || layer.hasPendingOutput())
        {
            // a client that will not read what it is owed (acknowledgements included) is not read from either,
            // past the high-water mark: what it is owed stays bounded
            final boolean outFull = connection.outBytes() > context.outboundHighWaterBytes();
            if (!connection.writeBlocked || outFull != connection.outFull)
            {
                if (!connection.writeBlocked)
                {
                    counters.increment(BrokerCounters.SOCKET_WRITE_BLOCKED);
                }
                connection.writeBlocked = true;
                connection.outFull = outFull;
                connection.updateInterest();
            }
            return;
        }
        if (connection.writeBlocked)
        {
            connection.writeBlocked = false;
            final boolean wasFull = connection.outFull;
            connection.outFull = false;
            connection.updateInterest();
            if (wasFull && connection.inBytes() > 0)
            {
                paused.add(connection); // packets it sent while it was not read from go on now
            }
        }
        final ByteBuf out = connection.out;
        if (null != out)
        {
            // all of it went: what it took since it was taken (several cycles' when the socket lagged)
            final int written = out.writerIndex();
            connection.out = IdleBuffers.emptied(out); // written: kept while used, given back once idle
            // given back grown: the next is taken at that size, at most the high-water mark (what a subscriber that
            // does not read may hold anyway)
            connection.nextOutLength = null != connection.out ? 0 :
                Math.min(written, context.outboundHighWaterBytes());
        }

        if (connection.closeAfterFlush)
        {
            closer.close(connection, IngressEvent.CONNECTION_LOST);
        }
    }

    /**
     * Gives back a connection's outbound buffer, once: it was written, or the connection closed.
     */
    void release(final Connection connection)
    {
        SmallWrites.discard(connection);
        final ByteBuf out = connection.out;
        connection.out = null;
        if (null != out)
        {
            out.release();
        }
    }

    /**
     * Gives back the agent's small-write buffer: the agent is closing, its connections are closed.
     */
    void close()
    {
        smallWrites.close();
    }

    /**
     * Flushes connections until their sockets took everything or the time is up, waiting in the selector for
     * sockets that took only part (shutdown: bounded however slow the clients are).
     */
    void flushAll(final List<Connection> connections, final Selector selector, final EpochClock clock,
        final long limitMs)
    {
        final long deadlineMs = clock.time() + limitMs;
        while (flushEach(connections) && clock.time() < deadlineMs)
        {
            try
            {
                selector.select(ConnectionWriter::ignore, 10); // woken when a blocked socket takes more
            }
            catch (final IOException ex)
            {
                return;
            }
        }
    }

    /**
     * @return whether some connection still has bytes its socket has not taken.
     */
    private boolean flushEach(final List<Connection> connections)
    {
        boolean pending = false;
        for (int i = 0, size = connections.size(); i < size; i++)
        {
            final Connection connection = connections.get(i);
            if (!connection.closed)
            {
                flush(connection);
                pending |= !connection.closed && (connection.outBytes() > 0 || connection.layer.hasPendingOutput());
            }
        }
        return pending;
    }

    private static void ignore(final SelectionKey key)
    {
    }

    private UnsafeBuffer constant(final byte[] bytes)
    {
        constant.wrap(bytes);
        return constant;
    }

    /**
     * @param next the limits from now on (a reload; the owning agent's thread).
     */
    void limits(final BrokerContext next)
    {
        this.context = next;
    }
}
