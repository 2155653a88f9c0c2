package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.RetainedDrains;
import io.ringmq.pipeline.auth.CredentialRequest;
import io.ringmq.protocol.MqttVersion;

import java.net.InetAddress;
import java.nio.channels.SelectionKey;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One client connection, owned by exactly one {@link IoAgent} for its whole life: its socket (behind a
 * {@link SocketLayer}), its inbound and outbound buffers (pooled by netty-buffer, held only while bytes wait in them:
 * an idle connection holds none) and the little protocol state the edge needs (version, keep-alive, whether CONNECT
 * was seen and how it was answered, MQTT 5.0 topic aliases and receive maximum, and how it ended).
 */
final class Connection
{
    /** No CONNACK written yet. */
    static final int CONNACK_PENDING = 0;
    /** An accepting CONNACK was written: packets after CONNECT are processed. */
    static final int CONNACK_ACCEPTED = 1;
    /** A refusing CONNACK was written: nothing more from the client is processed [MQTT-3.1.4-5]. */
    static final int CONNACK_REFUSED = 2;

    /** Bytes buffered past which a connection whose CONNECT is being hashed is not read any more. */
    static final int HASHING_BUFFER_LIMIT = 16 * 1024;

    final long id;
    /** The listener it came in on (null: the warm-up's or a test's), given back at its close. */
    final Listener listener;
    /** The per-address counts it is held against. */
    final AddressLimit addressLimit;
    /** The address it counts against the per-address limit, or null when exempt (or not known yet). */
    InetAddress limitedAddress;
    /** Its listener's layers (as accepted) take the certificate's name as the user name. */
    final boolean identityAsUsername;
    final SocketLayer layer;
    /** From a loopback address: the socket's peer, or the client a PROXY header named. */
    boolean loopback;
    final long acceptedMs;
    SelectionKey key;
    /**
     * A partial packet (or packets held while the connection waits), taken from the pool when a read leaves bytes
     * over; kept emptied while the connection keeps using it, given back by its agent's {@link IdleBuffers} once it
     * does not. Null while none is held: reads then go into the agent's scratch buffer ({@link InboundBuffers}),
     * lent as {@code in} while they are processed and never released here.
     */
    ByteBuf in;
    /** What {@link #in} holds as counted among the partial packets of connections not admitted yet (InboundBuffers). */
    int unadmittedBytes;
    /**
     * How it goes with the partial packet it holds in its agent's {@link PartialPacketRoom}: made the first time it
     * holds one, so an idle connection that never did holds none.
     */
    PartialPacketRoom.Progress progress;
    /** Where it stands with its agent's {@link HandshakeSlots}: none, waiting for one, holding one. */
    byte handshake;
    /**
     * Bytes the socket has not taken yet, taken from the pool when staged bytes ({@link SmallWrites}) were not all
     * taken or a packet could not be staged; given back as {@link #in}.
     */
    ByteBuf out;
    /**
     * How large to take the next {@link #out}: the bytes the last one was written (at most the outbound high-water
     * mark, which a subscriber that does not read may hold anyway) when it went back to the pool grown past
     * {@link Buffers#SHRINK_ABOVE}; 0 once one was taken at it, or once its agent's {@link IdleBuffers} sweep found
     * no pooled buffer used for an interval. A subscriber that gets as much every cycle then takes its buffer at that
     * size instead of growing one from 1 KB again each cycle (docs/perf/2026-12-01-outbound-growth.md).
     */
    int nextOutLength;
    /**
     * Where its small outbound bytes of this duty cycle wait in its agent's {@link SmallWrites} buffer (only while
     * {@link #out} is null), and how many; 0 when none do.
     */
    int stagedOffset;
    int stagedLength;
    /** In its agent's {@link IdleBuffers}: holds a pooled buffer. */
    boolean buffersHeld;
    /** Read into or written to since its agent's last sweep of idle buffers. */
    boolean buffersUsed;
    int version = MqttVersion.V5;
    /** It spoke MQTT 3.1 ({@link #version} says 3.1.1): its CONNACK's acknowledge flags are reserved, sent as 0. */
    boolean v31;
    boolean connectSeen;
    int connack = CONNACK_PENDING;
    int keepAliveSeconds;
    /** The highest QoS it may use: {@code --max-qos}, capped by its listener's {@code max_qos}; set at CONNECT. */
    int maxQos = 2;
    /** Its listener's mount point in UTF-8 (null: none): the prefix its topics live under; set at CONNECT. */
    byte[] mountPoint;
    /** When the last complete packet was read: keep-alive counts packets, not bytes [MQTT-3.1.2-24]. */
    long lastPacketMs;
    /** Ingress ring was full: stop reading until the buffered packets are handed on. */
    boolean paused;
    /** A packet after CONNECT waits for the CONNACK: stop reading until it is written [MQTT-3.2.0-1]. */
    boolean awaitingConnack;
    /** The client's address is known: the socket's peer, or (PROXY protocol) what the header said. */
    boolean addressSettled;
    /** Its CONNECT asked for enhanced authentication: a refusing CONNACK counts toward its address's back-off. */
    boolean exchange;
    /** Its layer holds input: in its reader's list to read again. */
    boolean readAgain;
    /** Its CONNECT's credentials are with a credential worker: the CONNECT stays buffered, is not handed on. */
    boolean hashing;
    /** The credential workers' verdict on its CONNECT, or {@link CredentialRequest#NO_VERDICT}. */
    long credentialVerdict = CredentialRequest.NO_VERDICT;
    /** In its agent's {@link PausedConnections}. */
    boolean retrying;
    /** The socket would not take all the outbound bytes: waiting for it to be writable. */
    boolean writeBlocked;
    /**
     * The bytes it owed right after the last burst of queued QoS 0 messages its session sent it at a reconnect
     * (never shed); 0 once it owes no more than the high-water mark. They widen the allowance of a PUBLISH that
     * tells it a new topic alias, so the burst alone never ends the connection.
     */
    int keptOwed;
    /**
     * The {@code RetainedDrains} slot it writes what it owes to after each flush, while retained parts go to it
     * (routing paces them by it); {@code RetainedDrains.NONE} when none.
     */
    int drainSlot = RetainedDrains.NONE;
    /** Writes are blocked and what it is owed passed the high-water mark: stop reading it until it drains. */
    boolean outFull;
    /** Has outbound bytes not yet offered to the socket this duty cycle. */
    boolean touched;
    /** Close once the outbound bytes are written (asked by the pipeline, or after a refusal). */
    boolean closeAfterFlush;
    /** The server sent its DISCONNECT: nothing more is read or sent [MQTT-3.14.4-1], it closes once written. */
    boolean closing;
    /** When a closing connection is closed even if its DISCONNECT could not be written yet; 0 while open. */
    long closeByMs;
    boolean closed;
    /** The CONNECT's Session Expiry Interval (5.0; 0 when absent), against which a DISCONNECT's is judged. */
    long sessionExpiryInterval;
    /** The client's Maximum Packet Size (MQTT 5.0 CONNECT): what the broker sends it never exceeds [MQTT-3.1.2-24]. */
    int maxPacketSize = Integer.MAX_VALUE;
    /** The end event's reason code: the client's DISCONNECT reason, or why the server ended it; 0 for none. */
    int endReasonCode;
    /** The Session Expiry Interval of the client's 5.0 DISCONNECT, or {@link IngressEvent#NONE}. */
    long endSessionExpiryInterval = IngressEvent.NONE;
    /** Inbound topic aliases [MQTT-3.3.2-10]; made on the first PUBLISH with a Topic Alias. */
    TopicAliases topicAliases;
    /** The QoS 1 and 2 PUBLISHes not answered yet (receive maximum, 5.0); made on the first such PUBLISH. */
    InboundQuota inboundQuota;
    /** The spoke of its agent's {@link ConnectionTimers} wheel its timer is in, or -1 for none. */
    int timerSpoke = -1;
    /** Its timer's deadline, while {@link #timerSpoke} is set. */
    long timerDeadlineMs;
    /** Its neighbours in its timer spoke's list (the wheel links connections, it holds no arrays of its own). */
    Connection timerPrev;
    Connection timerNext;

    Connection(final long id, final Acceptor.Accepted accepted, final SocketLayer layer, final long nowMs)
    {
        this.id = id;
        this.listener = accepted.listener;
        this.addressLimit = accepted.addressLimit;
        this.limitedAddress = accepted.limitedAddress;
        this.identityAsUsername = null != accepted.layers && accepted.layers.useIdentityAsUsername();
        this.layer = layer;
        this.loopback = accepted.loopback;
        this.addressSettled = !accepted.proxied;
        this.acceptedMs = nowMs;
        this.lastPacketMs = nowMs;
    }

    /**
     * Counts the client's address a PROXY header named against the per-address limit (on its agent, once).
     *
     * @return false when that address holds its limit (counted by the caller, the connection closed).
     */
    boolean acquireProxied(final InetAddress address)
    {
        if (!addressLimit.applies(address))
        {
            return true;
        }
        if (!addressLimit.tryAcquire(address))
        {
            return false;
        }
        limitedAddress = address;
        return true;
    }

    /**
     * Gives back what it holds against the limits; once, when it closes.
     */
    void release(final AtomicInteger connectionCount)
    {
        Acceptor.release(connectionCount, listener, addressLimit, limitedAddress);
    }

    /**
     * @return whether bytes from the socket are wanted now.
     */
    boolean readable()
    {
        // while its CONNECT is hashed it stays read (its end is noticed) until a little more than a CONNECT waits
        return !paused && !outFull && !awaitingConnack && handshake != HandshakeSlots.WAITING && !PartialPacketRoom.waiting(this) &&
            connack != CONNACK_REFUSED &&
            !closing && !closed &&
            (!hashing || inBytes() < HASHING_BUFFER_LIMIT);
    }

    /**
     * @return inbound bytes buffered and not processed yet.
     */
    int inBytes()
    {
        return null == in ? 0 : in.readableBytes();
    }

    /**
     * @return outbound bytes the socket has not taken yet (staged or in {@link #out}).
     */
    int outBytes()
    {
        return stagedLength + (null == out ? 0 : out.readableBytes());
    }

    /**
     * Sets the selector interest from the state: read while {@link #readable()}, write while blocked.
     */
    void updateInterest()
    {
        if (closed || null == key || !key.isValid())
        {
            return;
        }
        final int ops = (readable() ? SelectionKey.OP_READ : 0) | (writeBlocked ? SelectionKey.OP_WRITE : 0);
        if (key.interestOps() != ops)
        {
            key.interestOps(ops);
        }
    }

    /**
     * @return its state as the agent judges whether to read it and write to it, on one line: for a diagnosis (a
     * test's failure message), read from any thread, so only as fresh as that thread happens to see it.
     */
    String describe()
    {
        final SelectionKey k = key;
        final boolean valid = null != k && k.isValid();
        return this + ": readable " + readable() + ", interest " + (valid ? k.interestOps() : -1) + ", ready " +
            (valid ? k.readyOps() : -1) + ", paused " + paused + " (retrying " + retrying + "), outFull " + outFull +
            ", writeBlocked " + writeBlocked + ", awaitingConnack " + awaitingConnack + ", connack " + connack +
            ", handshake " + handshake + ", waiting for partial-packet room " + PartialPacketRoom.waiting(this) +
            ", hashing " + hashing + ", readAgain " + readAgain + ", closing " + closing + ", closed " + closed +
            ", in " + inBytes() + " bytes, out " + outBytes() + " bytes";
    }

    public String toString()
    {
        return "connection " + Long.toHexString(id);
    }
}
