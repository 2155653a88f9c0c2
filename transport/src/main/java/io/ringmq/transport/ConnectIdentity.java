package io.ringmq.transport;

import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.VariableByteInteger;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableDirectByteBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.charset.StandardCharsets;

/**
 * {@code use_identity_as_username}: on a TLS listener that requires client certificates, the certificate's CN is
 * the client's user name, whatever the CONNECT says, and no password is asked (the certificate was the
 * credential). The I/O agent writes the CONNECT anew with that user name and without a password before the
 * pipeline sees it, so the auth stage, the ACL ({@code %u}) and {@code use_username_as_clientid} all judge the
 * certificate's name. Once per connection; owned by one I/O agent.
 */
final class ConnectIdentity
{
    private static final int USER_NAME_FLAG = 0x80;
    private static final int PASSWORD_FLAG = 0x40;
    /** Past the fixed header: protocol name length (2), "MQTT" (4), level (1), then the flags. */
    private static final int FLAGS_AFTER_HEADER = 7;

    private final ExpandableDirectByteBuffer scratch = new ExpandableDirectByteBuffer(256);

    /**
     * @param packet  a CONNECT the agent decoded (validated) into {@code connect}.
     * @param length  its length.
     * @param userName the certificate's name.
     * @return the CONNECT's length in {@link #buffer()}, with {@code userName} and no password.
     */
    int rewrite(final DirectBuffer packet, final int offset, final int length, final ConnectFlyweight connect,
        final String userName)
    {
        final int headerLength = 1 + VariableByteInteger.byteCount(
            VariableByteInteger.decode(packet, offset + 1, offset + length));
        final int bodyStart = offset + headerLength;
        final int cut = connect.hasUserName() ? connect.userName().offset() - 2 :
            connect.hasPassword() ? connect.password().offset() - 2 : offset + length;
        final byte[] name = userName.getBytes(StandardCharsets.UTF_8);
        final int remaining = cut - bodyStart + 2 + name.length;
        final MutableDirectBuffer out = scratch;
        out.putByte(0, packet.getByte(offset));
        final int newHeaderLength = 1 + VariableByteInteger.encode(out, 1, remaining);
        out.putBytes(newHeaderLength, packet, bodyStart, cut - bodyStart);
        final int flagsAt = newHeaderLength + FLAGS_AFTER_HEADER;
        out.putByte(flagsAt, (byte)((out.getByte(flagsAt) | USER_NAME_FLAG) & ~PASSWORD_FLAG));
        final int nameAt = newHeaderLength + cut - bodyStart;
        out.putByte(nameAt, (byte)(name.length >>> 8));
        out.putByte(nameAt + 1, (byte)name.length);
        out.putBytes(nameAt + 2, name);
        return newHeaderLength + remaining;
    }

    /**
     * @return where {@link #rewrite} wrote the CONNECT.
     */
    DirectBuffer buffer()
    {
        return scratch;
    }
}
