package io.ringmq.transport;

import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubscribeFlyweight;
import io.ringmq.protocol.Topics;
import io.ringmq.protocol.TopicFilterList;
import io.ringmq.protocol.Utf8;
import io.ringmq.protocol.VariableByteInteger;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;

/**
 * A listener's {@code mount_point} at the edge (Mosquitto's): what its clients name lives under the listener's
 * prefix. Before a packet goes to the pipeline the prefix is put into every topic in it: a PUBLISH's topic, a
 * CONNECT's will topic, each filter of a SUBSCRIBE or UNSUBSCRIBE (after {@code $share/{name}/}, so a shared
 * subscription stays one). The stages then see the mounted names only (ACL rules judge them too, as Mosquitto's
 * do); the delivery stage takes the prefix off again for the client. One instance per I/O agent: the rewritten
 * packet is in its scratch buffer until the next rewrite.
 */
final class MountPoints
{
    /**
     * {@link #publish}, {@link #connect}, {@link #filters}: with the prefix a topic would pass 65,535 bytes, or the
     * packet the largest length the caller takes (found before anything is written or grown).
     */
    static final int TOO_LONG = -1;
    private static final int KEPT_POSITIONS = 64;

    private ExpandableArrayBuffer scratch = new ExpandableArrayBuffer(256);
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final PublishFlyweight publish = new PublishFlyweight();
    /** Pairs: where a string's length field is, and where in the string the prefix goes. */
    private int[] positions = new int[KEPT_POSITIONS];
    private int count;

    /**
     * A PUBLISH, its topic mounted.
     *
     * @param packet  the PUBLISH from offset 0, {@code length} bytes, with its topic (no Topic Alias in its place).
     * @param version   the connection's protocol level.
     * @param maxLength the largest packet the caller takes.
     * @return its length in {@link #packet()}, or {@link #TOO_LONG}.
     */
    int publish(final byte[] prefix, final DirectBuffer packet, final int length, final int version,
        final int maxLength)
    {
        if (publish.wrap(packet, 0, length, version) < 0)
        {
            throw new IllegalStateException("a PUBLISH the edge decoded does not decode again");
        }
        count = 0;
        add(publish.topic().offset());
        return rewrite(prefix, packet, length, maxLength);
    }

    /**
     * A CONNECT, its will topic mounted.
     *
     * @return its length in {@link #packet()}, {@link #TOO_LONG}, or 0 when it has no will (nothing to mount).
     */
    int connect(final byte[] prefix, final DirectBuffer packet, final int length, final int maxLength)
    {
        if (connect.wrap(packet, 0, length) < 0)
        {
            throw new IllegalStateException("a CONNECT the edge decoded does not decode again");
        }
        if (!connect.hasWill())
        {
            return 0;
        }
        count = 0;
        add(connect.willTopic().offset());
        return rewrite(prefix, packet, length, maxLength);
    }

    /**
     * A SUBSCRIBE or UNSUBSCRIBE, each filter mounted.
     *
     * @param decoded the packet as the edge decoded it, from offset 0 of {@code packet}.
     * @return its length in {@link #packet()}, or {@link #TOO_LONG}.
     */
    int filters(final byte[] prefix, final DirectBuffer packet, final int length, final SubscribeFlyweight decoded,
        final int maxLength)
    {
        final TopicFilterList filters = decoded.filters();
        if (length + (long)filters.count() * prefix.length > maxLength)
        {
            return TOO_LONG; // many small filters a long prefix each: refused before any position is kept
        }
        if (positions.length > KEPT_POSITIONS && filters.count() * 2 <= KEPT_POSITIONS)
        {
            positions = new int[KEPT_POSITIONS]; // a SUBSCRIBE of many filters is over
        }
        count = 0;
        for (int i = 0; i < filters.count(); i++)
        {
            final Slice filter = filters.filter(i);
            final String written = filter.asString();
            final int nameEnd = Topics.shareNameEnd(written);
            // a shared subscription's filter is what is mounted: $share/{name}/{prefix}{filter}
            add(filter.offset(), nameEnd < 0 ? filter.offset() :
                filter.offset() + Utf8.encodedLength(written.substring(0, nameEnd + 1)));
        }
        return rewrite(prefix, packet, length, maxLength);
    }

    /**
     * @return the buffer the last rewrite wrote into, from offset 0.
     */
    DirectBuffer packet()
    {
        return scratch;
    }

    private void add(final int stringAt)
    {
        add(stringAt, stringAt);
    }

    /**
     * @param stringAt where a string's bytes begin (its length field is the two bytes before).
     * @param insertAt where in it the prefix goes.
     */
    private void add(final int stringAt, final int insertAt)
    {
        if (2 * count + 2 > positions.length)
        {
            positions = java.util.Arrays.copyOf(positions, positions.length * 2);
        }
        positions[2 * count] = stringAt - 2;
        positions[2 * count + 1] = insertAt;
        count++;
    }

    private int rewrite(final byte[] prefix, final DirectBuffer packet, final int length, final int maxLength)
    {
        int headerLength = 1;
        while ((packet.getByte(headerLength) & 0x80) != 0)
        {
            headerLength++;
        }
        headerLength++;
        for (int i = 0; i < count; i++)
        {
            if ((packet.getShort(positions[2 * i], java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF) + prefix.length > 0xFFFF)
            {
                return TOO_LONG;
            }
        }
        final long remaining = (long)length - headerLength + (long)count * prefix.length;
        if (remaining > VariableByteInteger.MAX_VALUE ||
            1 + VariableByteInteger.encodedLength((int)remaining) + remaining > maxLength)
        {
            return TOO_LONG;
        }
        if (remaining <= Buffers.SHRINK_ABOVE && scratch.capacity() > Buffers.SHRINK_ABOVE)
        {
            scratch = new ExpandableArrayBuffer(Buffers.INITIAL_CAPACITY); // a burst of large packets is over
        }
        scratch.checkLimit(5 + (int)remaining);
        scratch.putByte(0, packet.getByte(0));
        int w = 1 + VariableByteInteger.encode(scratch, 1, (int)remaining);
        int r = headerLength;
        for (int i = 0; i < count; i++)
        {
            final int lengthAt = positions[2 * i];
            final int insertAt = positions[2 * i + 1];
            scratch.putBytes(w, packet, r, lengthAt - r);
            w += lengthAt - r;
            final int stringLength = packet.getShort(lengthAt, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF;
            scratch.putShort(w, (short)(stringLength + prefix.length), java.nio.ByteOrder.BIG_ENDIAN);
            w += 2;
            r = lengthAt + 2;
            scratch.putBytes(w, packet, r, insertAt - r);
            w += insertAt - r;
            r = insertAt;
            scratch.putBytes(w, prefix);
            w += prefix.length;
        }
        scratch.putBytes(w, packet, r, length - r);
        return w + length - r;
    }
}
