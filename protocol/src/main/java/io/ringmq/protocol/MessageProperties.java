package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * Works on the raw property bytes of an application message (a PUBLISH's, or a will's) without decoding them into
 * objects, so a broker forwards what a publisher sent unchanged and in order [MQTT-3.3.2-17] [MQTT-3.3.2-18]:
 * it copies the properties that travel with a message and drops those that belong to one hop (Topic Alias,
 * Subscription Identifier), to the will (Will Delay Interval) or that the broker rewrites (Message Expiry
 * Interval, sent as what remains [MQTT-3.3.2-6]).
 * <p>
 * The bytes must have been validated by a decoder ({@link PublishFlyweight}, {@link ConnectFlyweight}): these
 * methods trust the lengths they read. Allocation-free.
 */
public final class MessageProperties
{
    private MessageProperties()
    {
    }

    /**
     * Copies the properties that travel with the message, in their order.
     *
     * @param offset where the properties start (after the section's length prefix).
     * @param length the properties' length (the section without its prefix).
     * @return bytes written to {@code dst}.
     */
    public static int copyForwardable(final DirectBuffer src, final int offset, final int length,
        final MutableDirectBuffer dst, final int dstOffset)
    {
        int at = offset;
        int to = dstOffset;
        final int end = offset + length;
        while (at < end)
        {
            final int id = src.getByte(at) & 0xFF;
            final int size = propertyLength(src, at, end);
            if (forwarded(id))
            {
                SmallCopy.copy(dst, to, src, at, size);
                to += size;
            }
            at += size;
        }
        return to - dstOffset;
    }

    /**
     * @return the bytes {@link #copyForwardable} would write.
     */
    public static int forwardableLength(final DirectBuffer src, final int offset, final int length)
    {
        int at = offset;
        int total = 0;
        final int end = offset + length;
        while (at < end)
        {
            final int size = propertyLength(src, at, end);
            if (forwarded(src.getByte(at) & 0xFF))
            {
                total += size;
            }
            at += size;
        }
        return total;
    }

    /**
     * @return the Message Expiry Interval in seconds, or -1 when the message has none.
     */
    public static long messageExpiry(final DirectBuffer src, final int offset, final int length)
    {
        return fourByteInteger(src, offset, length, PropertyId.MESSAGE_EXPIRY_INTERVAL);
    }

    /**
     * @return the Will Delay Interval in seconds, or -1 when the will has none.
     */
    public static long willDelay(final DirectBuffer src, final int offset, final int length)
    {
        return fourByteInteger(src, offset, length, PropertyId.WILL_DELAY_INTERVAL);
    }

    /**
     * @return the Payload Format Indicator (1: UTF-8), or 0 when absent.
     */
    public static int payloadFormat(final DirectBuffer src, final int offset, final int length)
    {
        int at = offset;
        final int end = offset + length;
        while (at < end)
        {
            if ((src.getByte(at) & 0xFF) == PropertyId.PAYLOAD_FORMAT_INDICATOR)
            {
                return src.getByte(at + 1) & 0xFF;
            }
            at += propertyLength(src, at, end);
        }
        return 0;
    }

    /**
     * @return whether the properties hold one with identifier {@code id}.
     */
    public static boolean has(final DirectBuffer src, final int offset, final int length, final int id)
    {
        int at = offset;
        final int end = offset + length;
        while (at < end)
        {
            if ((src.getByte(at) & 0xFF) == id)
            {
                return true;
            }
            at += propertyLength(src, at, end);
        }
        return false;
    }

    /**
     * The section of a raw property block: where its properties start and how long they are, given the offset of
     * its length prefix.
     *
     * @return the properties' length; {@link #sectionStart} gives their offset.
     */
    public static int sectionLength(final DirectBuffer src, final int sectionOffset)
    {
        return VariableByteInteger.value(VariableByteInteger.decode(src, sectionOffset, src.capacity()));
    }

    /**
     * @return the offset of the first property of the section whose length prefix is at {@code sectionOffset}.
     */
    public static int sectionStart(final DirectBuffer src, final int sectionOffset)
    {
        return sectionOffset + VariableByteInteger.byteCount(
            VariableByteInteger.decode(src, sectionOffset, src.capacity()));
    }

    private static boolean forwarded(final int id)
    {
        return id != PropertyId.MESSAGE_EXPIRY_INTERVAL && id != PropertyId.TOPIC_ALIAS &&
            id != PropertyId.SUBSCRIPTION_IDENTIFIER && id != PropertyId.WILL_DELAY_INTERVAL;
    }

    private static long fourByteInteger(final DirectBuffer src, final int offset, final int length, final int id)
    {
        int at = offset;
        final int end = offset + length;
        while (at < end)
        {
            if ((src.getByte(at) & 0xFF) == id)
            {
                return src.getInt(at + 1, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF_FFFFL;
            }
            at += propertyLength(src, at, end);
        }
        return -1;
    }

    /**
     * @return the length of the property at {@code at}: its identifier and its value.
     */
    static int propertyLength(final DirectBuffer src, final int at, final int end)
    {
        final int id = src.getByte(at) & 0xFF;
        switch (PropertyId.typeOf(id))
        {
            case PropertyId.BYTE:
                return 2;
            case PropertyId.TWO_BYTE_INTEGER:
                return 3;
            case PropertyId.FOUR_BYTE_INTEGER:
                return 5;
            case PropertyId.VARIABLE_BYTE_INTEGER:
                return 1 + VariableByteInteger.byteCount(VariableByteInteger.decode(src, at + 1, end));
            case PropertyId.UTF8_STRING:
            case PropertyId.BINARY_DATA:
                return 3 + (src.getShort(at + 1, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF);
            case PropertyId.UTF8_STRING_PAIR:
            {
                final int keyLength = src.getShort(at + 1, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF;
                return 5 + keyLength + (src.getShort(at + 3 + keyLength, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF);
            }
            default:
                return end - at; // not a property a decoder let through: stop here
        }
    }
}
