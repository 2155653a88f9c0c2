package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.protocol.MqttVersion;

import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * One client connection, owned by exactly one {@link IoAgent} for its whole life: its socket, its inbound and
 * outbound buffers (pooled by netty-buffer, shrunk back after bursts) and the little protocol state the edge
 * needs (version, keep-alive, whether CONNECT was seen).
 */
final class Connection
{
    final long id;
    final SocketChannel channel;
    final boolean loopback;
    final long acceptedMs;
    SelectionKey key;
    ByteBuf in;
    ByteBuf out;
    int version = MqttVersion.V5;
    boolean connectSeen;
    int keepAliveSeconds;
    long lastReadMs;
    /** Ingress ring was full: stop reading until the buffered packets are handed on. */
    boolean paused;
    /** Has outbound bytes not yet offered to the socket this duty cycle. */
    boolean touched;
    /** Close once the outbound bytes are written (asked by the pipeline, or after a refusal). */
    boolean closeAfterFlush;
    boolean closed;
    /** The connection's timer in its agent's {@link ConnectionTimers}, or -1. */
    long timerId = -1;

    Connection(final long id, final SocketChannel channel, final boolean loopback, final long nowMs)
    {
        this.id = id;
        this.channel = channel;
        this.loopback = loopback;
        this.acceptedMs = nowMs;
        this.lastReadMs = nowMs;
    }

    public String toString()
    {
        return "connection " + Long.toHexString(id);
    }
}
