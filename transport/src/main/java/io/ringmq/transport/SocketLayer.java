package io.ringmq.transport;

import io.netty.buffer.ByteBuf;

import java.io.IOException;

/**
 * The one place where a connection's bytes meet its socket (FlashMQ's {@code iowrapper}): plain TCP today
 * ({@link TcpSocketLayer}); a TLS ({@code SSLEngine}) or WebSocket layer sits here next, translating between the
 * MQTT bytes the agent frames and writes and the bytes on the wire. Owned by the connection's I/O agent; never
 * blocks.
 */
interface SocketLayer
{
    /**
     * Reads what the socket has into the writable part of {@code in}, up to its writable bytes.
     *
     * @return MQTT bytes added to {@code in} (0 when none are ready), or -1 at the end of the stream.
     */
    int read(ByteBuf in) throws IOException;

    /**
     * Writes as much of the readable part of {@code out} as the socket takes now.
     *
     * @return bytes taken from {@code out}.
     */
    int write(ByteBuf out) throws IOException;

    /**
     * Closes the socket, quietly.
     */
    void close();
}
