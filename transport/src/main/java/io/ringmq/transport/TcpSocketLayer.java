package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import org.agrona.CloseHelper;

import java.io.IOException;
import java.nio.channels.SocketChannel;

/**
 * Plain TCP: the MQTT bytes are the bytes on the wire.
 */
final class TcpSocketLayer implements SocketLayer
{
    private final SocketChannel channel;
    private long bytesFromSocket;

    TcpSocketLayer(final SocketChannel channel)
    {
        this.channel = channel;
    }

    public int read(final ByteBuf in) throws IOException
    {
        final int read = in.writeBytes(channel, in.writableBytes());
        bytesFromSocket += Math.max(0, read);
        return read;
    }

    @Override
    public long bytesFromSocket()
    {
        return bytesFromSocket;
    }

    public int write(final ByteBuf out) throws IOException
    {
        return out.readBytes(channel, out.readableBytes());
    }

    public void close()
    {
        CloseHelper.quietClose(channel);
    }
}
