package io.ringmq.transport;

import io.netty.buffer.ByteBuf;

import java.io.IOException;

/**
 * The one place where a connection's bytes meet its socket (FlashMQ's {@code iowrapper}): plain TCP
 * ({@link TcpSocketLayer}), and layers that wrap another layer and translate between the MQTT bytes the agent
 * frames and writes and the bytes below them (TLS over {@code SSLEngine}, WebSocket framing, the PROXY protocol
 * header). Layers compose: WebSocket over TLS over PROXY over TCP. Owned by the connection's I/O agent; never
 * blocks; allocates nothing per message in the steady state.
 * <p>
 * A layer may take bytes from the socket that it cannot hand on yet (a TLS record larger than the room in
 * {@code in}), and may hold bytes for the wire that the socket would not take (a TLS handshake message, a
 * WebSocket pong, the rest of a record): the agent asks {@link #hasBufferedInput()} after a read and keeps reading
 * without waiting for the selector while it is true, and asks {@link #hasPendingOutput()} after a write or a read
 * and waits for the socket to become writable while it is true, then calls {@link #flush()}.
 */
interface SocketLayer
{
    /**
     * Reads what the layer below has into the writable part of {@code in}, up to its writable bytes. A layer may
     * also write from here (a TLS handshake step, a WebSocket pong or close): what the socket does not take stays
     * pending.
     *
     * @return MQTT bytes added to {@code in} (0 when none are ready), or -1 at the end of the stream (also after a
     * protocol error of the layer itself: a bad TLS record, a WebSocket close or a malformed frame).
     */
    int read(ByteBuf in) throws IOException;

    /**
     * Takes as much of the readable part of {@code out} as it can send now. A framing layer may take bytes it has
     * framed but not yet written to the socket; those are {@link #hasPendingOutput() pending}.
     *
     * @return bytes taken from {@code out} (0 while the layer's own output is still pending or a handshake is not
     * done).
     */
    int write(ByteBuf out) throws IOException;

    /**
     * Writes what the layer holds for the wire.
     *
     * @return true when nothing is left pending.
     */
    default boolean flush() throws IOException
    {
        return true;
    }

    /**
     * @return whether the layer holds bytes for the wire that the socket has not taken yet.
     */
    default boolean hasPendingOutput()
    {
        return false;
    }

    /**
     * @return the bytes read from the socket so far, below every layer (a TLS record or a WebSocket frame counts as it
     * arrives, before it yields MQTT bytes): how a client that sends slowly is told from one that sends nothing.
     */
    default long bytesFromSocket()
    {
        return 0;
    }

    /**
     * @return whether the layer has taken bytes from below that a further {@link #read} may turn into MQTT bytes
     * without the socket being readable again.
     */
    default boolean hasBufferedInput()
    {
        return false;
    }

    /**
     * The connection is idle (its agent's {@link IdleBuffers} gave its buffers back): gives back a buffer the layer
     * keeps between writes when nothing waits in it. Taken again by the next write.
     */
    default void releaseIdleBuffers()
    {
    }

    /**
     * @return whether the layer keeps a buffer of its own that {@link #releaseIdleBuffers()} would give back.
     */
    default boolean holdsIdleBuffers()
    {
        return false;
    }

    /**
     * @return whether the layer's own handshake (TLS) has not ended yet: until it has, the connection takes one of
     * its agent's {@link HandshakeSlots}.
     */
    default boolean handshaking()
    {
        return false;
    }

    /**
     * A CONNACK accepted the connection: from now on what the layer holds is an admitted client's (TLS: its record
     * buffers leave {@link HeapShare#UNADMITTED}). A layer over another passes it down.
     */
    default void admitted()
    {
    }

    /**
     * @return the peer's identity established by the layer (the CN of a TLS client certificate), or null.
     */
    default String peerIdentity()
    {
        return null;
    }

    /**
     * @return the client's address as a proxy in front reported it (PROXY protocol), or null when the socket's
     * own remote address is the client's. Known once the first {@link #read} returned MQTT bytes.
     */
    default java.net.InetSocketAddress proxiedAddress()
    {
        return null;
    }

    /**
     * @return whether the client's address is known: false only while a PROXY header is still to be read (then
     * {@link #proxiedAddress()} may name it). A layer over another asks it.
     */
    default boolean addressKnown()
    {
        return true;
    }

    /**
     * @return what the connection holds in heap buffers before admission, shared by its layers
     * ({@link UnadmittedHeap}); null for a layer holding none (TCP).
     */
    default UnadmittedHeap unadmittedHeap()
    {
        return null;
    }

    /**
     * Reads what names the client before its own bytes (a PROXY header), and nothing of those: the agent judges the
     * client (its per-address limit, its handshake slot's address) before any byte reaches a layer above. A layer
     * over another passes it down.
     *
     * @return 1 once the address is known, 0 while more must come, -1 at the end of the stream or a malformed
     * header.
     */
    default int readAddress() throws IOException
    {
        return 1;
    }

    /**
     * Closes the socket, quietly, after a best-effort goodbye of the layer (TLS close_notify, WebSocket close)
     * that never blocks.
     */
    void close();
}
