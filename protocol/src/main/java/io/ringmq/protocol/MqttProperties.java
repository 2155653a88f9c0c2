package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.util.Arrays;

import static io.ringmq.protocol.PropertyId.*;

/**
 * The MQTT 5.0 properties of one packet (section 2.2.2), both as decoded and as to be encoded.
 * <p>
 * Decoding validates as it goes: unknown identifiers, identifiers not allowed in the packet, duplicates
 * (User Property may repeat, and Subscription Identifier may repeat in PUBLISH), out-of-range values, and
 * ill-formed strings are typed {@link DecodeError}s. String and binary values are {@link Slice} views into the
 * decoded buffer; nothing is copied, and after warm-up nothing is allocated.
 * <p>
 * Encoding writes the properties in ascending identifier order, user properties in insertion order, so that
 * decode then encode reproduces canonical bytes.
 */
public final class MqttProperties
{
    private long present;
    private final int[] ints = new int[MAX_ID + 1];
    private final Slice[] slices = new Slice[MAX_ID + 1];
    private Slice[] userKeys = new Slice[0];
    private Slice[] userValues = new Slice[0];
    private int userPropertyCount;
    private int[] subscriptionIdentifiers = new int[1];
    private int subscriptionIdentifierCount;

    /**
     * Creates an empty set of properties.
     */
    public MqttProperties()
    {
        for (int id = 0; id <= MAX_ID; id++)
        {
            if (TYPES[id] == UTF8_STRING || TYPES[id] == BINARY_DATA)
            {
                slices[id] = new Slice();
            }
        }
    }

    /**
     * Removes every property; keeps the storage.
     *
     * @return this.
     */
    public MqttProperties clear()
    {
        if (present != 0)
        {
            for (int id = 0; id <= MAX_ID; id++)
            {
                if (null != slices[id])
                {
                    slices[id].reset();
                }
            }
            present = 0;
            userPropertyCount = 0;
            subscriptionIdentifierCount = 0;
        }
        return this;
    }

    /**
     * Decodes a property section: its variable-byte-integer length, then the properties, none past {@code limit}.
     *
     * @param context the packet type, or {@link PropertyId#WILL_CONTEXT} for will properties.
     * @return bytes consumed (length prefix included) or a negative {@link DecodeError}.
     */
    public int decode(final DirectBuffer buffer, final int offset, final int limit, final int context)
    {
        clear();
        final int packedLength = VariableByteInteger.decode(buffer, offset, limit);
        if (packedLength <= 0)
        {
            return packedLength == 0 ? DecodeError.FIELD_OVERRUNS_PACKET : packedLength;
        }
        int pos = offset + VariableByteInteger.byteCount(packedLength);
        final int end = pos + VariableByteInteger.value(packedLength);
        if (end > limit)
        {
            return DecodeError.FIELD_OVERRUNS_PACKET;
        }
        final long allowed = ALLOWED[context];
        while (pos < end)
        {
            final int packedId = VariableByteInteger.decode(buffer, pos, end);
            if (packedId <= 0)
            {
                return packedId == 0 ? DecodeError.FIELD_OVERRUNS_PACKET : packedId;
            }
            pos += VariableByteInteger.byteCount(packedId);
            final int id = VariableByteInteger.value(packedId);
            if (id > MAX_ID || TYPES[id] == 0)
            {
                return DecodeError.UNKNOWN_PROPERTY;
            }
            final long bit = 1L << id;
            if ((allowed & bit) == 0)
            {
                return DecodeError.PROPERTY_NOT_ALLOWED;
            }
            final boolean repeatable = id == USER_PROPERTY ||
                (id == SUBSCRIPTION_IDENTIFIER && context == PacketType.PUBLISH);
            if ((present & bit) != 0 && !repeatable)
            {
                return DecodeError.DUPLICATE_PROPERTY;
            }
            pos = decodeValue(buffer, pos, end, id);
            if (pos < 0)
            {
                return pos;
            }
            present |= bit;
        }
        if ((present & (1L << AUTHENTICATION_DATA)) != 0 && (present & (1L << AUTHENTICATION_METHOD)) == 0)
        {
            return DecodeError.INVALID_PROPERTY_VALUE; // Authentication Data without a Method: 3.1.2.11.10
        }
        return end - offset;
    }

    private int decodeValue(final DirectBuffer buffer, final int pos, final int end, final int id)
    {
        switch (TYPES[id])
        {
            case BYTE:
                if (pos + 1 > end)
                {
                    return DecodeError.FIELD_OVERRUNS_PACKET;
                }
                return storeInt(id, buffer.getByte(pos) & 0xFF, pos + 1);

            case TWO_BYTE_INTEGER:
                if (pos + 2 > end)
                {
                    return DecodeError.FIELD_OVERRUNS_PACKET;
                }
                return storeInt(id, Fields.readUnsignedShort(buffer, pos), pos + 2);

            case FOUR_BYTE_INTEGER:
                if (pos + 4 > end)
                {
                    return DecodeError.FIELD_OVERRUNS_PACKET;
                }
                return storeInt(id, Fields.readInt(buffer, pos), pos + 4);

            case VARIABLE_BYTE_INTEGER:
            {
                final int packed = VariableByteInteger.decode(buffer, pos, end);
                if (packed <= 0)
                {
                    return packed == 0 ? DecodeError.FIELD_OVERRUNS_PACKET : packed;
                }
                final int value = VariableByteInteger.value(packed);
                if (value == 0)
                {
                    return DecodeError.INVALID_PROPERTY_VALUE;
                }
                addSubscriptionIdentifier(value);
                return pos + VariableByteInteger.byteCount(packed);
            }

            case UTF8_STRING:
            case BINARY_DATA:
            {
                final int next = TYPES[id] == UTF8_STRING ?
                    Fields.skipUtf8(buffer, pos, end) : Fields.skipBinary(buffer, pos, end);
                if (next < 0)
                {
                    return next;
                }
                // [MQTT-3.3.2-14] a Response Topic is a topic name: no wildcards
                if (id == RESPONSE_TOPIC && Topics.validateName(buffer, pos + 2, next - pos - 2) < 0)
                {
                    return DecodeError.INVALID_PROPERTY_VALUE;
                }
                slices[id].wrap(buffer, pos + 2, next - pos - 2);
                return next;
            }

            default: // UTF8_STRING_PAIR
            {
                final int keyEnd = Fields.skipUtf8(buffer, pos, end);
                if (keyEnd < 0)
                {
                    return keyEnd;
                }
                final int valueEnd = Fields.skipUtf8(buffer, keyEnd, end);
                if (valueEnd < 0)
                {
                    return valueEnd;
                }
                addUserProperty(buffer, pos + 2, keyEnd - pos - 2, buffer, keyEnd + 2, valueEnd - keyEnd - 2);
                return valueEnd;
            }
        }
    }

    private int storeInt(final int id, final int value, final int next)
    {
        final long bit = 1L << id;
        if (id == TOPIC_ALIAS && value == 0)
        {
            return DecodeError.TOPIC_ALIAS_ZERO; // answered with its own reason code, 0x94 [MQTT-3.3.2-8]
        }
        if (((BOOLEAN_IDS & bit) != 0 && value > 1) || ((NON_ZERO_IDS & bit) != 0 && value == 0))
        {
            return DecodeError.INVALID_PROPERTY_VALUE;
        }
        ints[id] = value;
        return next;
    }

    /**
     * @return true when no property is present.
     */
    public boolean isEmpty()
    {
        return present == 0;
    }

    /**
     * @return true when the property is present (for User Property and Subscription Identifier: at least once).
     */
    public boolean has(final int id)
    {
        return id >= 0 && id <= MAX_ID && (present & (1L << id)) != 0;
    }

    /**
     * @return the value of a byte or two-byte integer property, or {@code defaultValue} when absent.
     */
    public int intValue(final int id, final int defaultValue)
    {
        return has(id) ? ints[id] : defaultValue;
    }

    /**
     * @return the unsigned value of a four-byte integer property, or {@code defaultValue} when absent.
     */
    public long longValue(final int id, final long defaultValue)
    {
        return has(id) ? ints[id] & 0xFFFF_FFFFL : defaultValue;
    }

    /**
     * @return the view of a string or binary property; absent (see {@link Slice#isPresent()}) when not set.
     */
    public Slice slice(final int id)
    {
        checkType(id, UTF8_STRING, BINARY_DATA);
        return slices[id];
    }

    public int userPropertyCount()
    {
        return userPropertyCount;
    }

    public Slice userPropertyKey(final int index)
    {
        return userKeys[checkIndex(index, userPropertyCount)];
    }

    public Slice userPropertyValue(final int index)
    {
        return userValues[checkIndex(index, userPropertyCount)];
    }

    public int subscriptionIdentifierCount()
    {
        return subscriptionIdentifierCount;
    }

    public int subscriptionIdentifier(final int index)
    {
        return subscriptionIdentifiers[checkIndex(index, subscriptionIdentifierCount)];
    }

    /**
     * Sets a byte, two-byte, four-byte or variable-byte integer property (a Subscription Identifier is added).
     *
     * @return this.
     */
    public MqttProperties setInt(final int id, final int value)
    {
        checkIntegerType(id);
        if (TYPES[id] == VARIABLE_BYTE_INTEGER)
        {
            addSubscriptionIdentifier(value);
        }
        else
        {
            ints[id] = value;
        }
        present |= 1L << id;
        return this;
    }

    /**
     * Sets a string or binary property to a view of the caller's bytes (no copy).
     *
     * @return this.
     */
    public MqttProperties set(final int id, final DirectBuffer buffer, final int offset, final int length)
    {
        checkType(id, UTF8_STRING, BINARY_DATA);
        slices[id].wrap(buffer, offset, length);
        present |= 1L << id;
        return this;
    }

    /**
     * Sets a string property (allocates a copy of its bytes; for set-up paths).
     *
     * @return this.
     */
    public MqttProperties set(final int id, final String value)
    {
        checkType(id, UTF8_STRING, BINARY_DATA);
        slices[id].wrap(value);
        present |= 1L << id;
        return this;
    }

    /**
     * Sets a binary property to a byte array (no copy).
     *
     * @return this.
     */
    public MqttProperties set(final int id, final byte[] value)
    {
        checkType(id, UTF8_STRING, BINARY_DATA);
        slices[id].wrap(value);
        present |= 1L << id;
        return this;
    }

    /**
     * Adds a user property (allocates copies; for set-up paths).
     *
     * @return this.
     */
    public MqttProperties addUserProperty(final String key, final String value)
    {
        ensureUserCapacity();
        userKeys[userPropertyCount].wrap(key);
        userValues[userPropertyCount].wrap(value);
        userPropertyCount++;
        present |= 1L << USER_PROPERTY;
        return this;
    }

    /**
     * Adds a user property as views of the caller's bytes (no copy).
     *
     * @return this.
     */
    public MqttProperties addUserProperty(
        final DirectBuffer keyBuffer, final int keyOffset, final int keyLength,
        final DirectBuffer valueBuffer, final int valueOffset, final int valueLength)
    {
        ensureUserCapacity();
        userKeys[userPropertyCount].wrap(keyBuffer, keyOffset, keyLength);
        userValues[userPropertyCount].wrap(valueBuffer, valueOffset, valueLength);
        userPropertyCount++;
        present |= 1L << USER_PROPERTY;
        return this;
    }

    /**
     * Removes one property (every User Property or Subscription Identifier for those ids); keeps the storage.
     *
     * @return this.
     */
    public MqttProperties remove(final int id)
    {
        if (!has(id))
        {
            return this;
        }
        if (null != slices[id])
        {
            slices[id].reset();
        }
        if (id == USER_PROPERTY)
        {
            userPropertyCount = 0;
        }
        else if (id == SUBSCRIPTION_IDENTIFIER)
        {
            subscriptionIdentifierCount = 0;
        }
        present &= ~(1L << id);
        return this;
    }

    /**
     * Copies every property of {@code other} into this one, as views of the same bytes.
     *
     * @return this.
     */
    public MqttProperties copyFrom(final MqttProperties other)
    {
        clear();
        for (int id = 0; id <= MAX_ID; id++)
        {
            if (!other.has(id))
            {
                continue;
            }
            switch (TYPES[id])
            {
                case UTF8_STRING:
                case BINARY_DATA:
                    final Slice s = other.slices[id];
                    set(id, s.buffer(), s.offset(), s.length());
                    break;
                case UTF8_STRING_PAIR:
                    for (int i = 0; i < other.userPropertyCount; i++)
                    {
                        final Slice k = other.userKeys[i];
                        final Slice v = other.userValues[i];
                        addUserProperty(k.buffer(), k.offset(), k.length(), v.buffer(), v.offset(), v.length());
                    }
                    break;
                case VARIABLE_BYTE_INTEGER:
                    for (int i = 0; i < other.subscriptionIdentifierCount; i++)
                    {
                        setInt(id, other.subscriptionIdentifiers[i]);
                    }
                    break;
                default:
                    setInt(id, other.ints[id]);
            }
        }
        return this;
    }

    /**
     * @return the bytes the properties take, without the length prefix.
     */
    public int length()
    {
        if (present == 0)
        {
            return 0;
        }
        int length = 0;
        for (int id = 0; id <= MAX_ID; id++)
        {
            if ((present & (1L << id)) == 0)
            {
                continue;
            }
            switch (TYPES[id])
            {
                case BYTE: length += 2; break;
                case TWO_BYTE_INTEGER: length += 3; break;
                case FOUR_BYTE_INTEGER: length += 5; break;
                case VARIABLE_BYTE_INTEGER:
                    for (int i = 0; i < subscriptionIdentifierCount; i++)
                    {
                        length += 1 + VariableByteInteger.encodedLength(subscriptionIdentifiers[i]);
                    }
                    break;
                case UTF8_STRING:
                case BINARY_DATA: length += 3 + slices[id].length(); break;
                default:
                    for (int i = 0; i < userPropertyCount; i++)
                    {
                        length += 5 + userKeys[i].length() + userValues[i].length();
                    }
            }
        }
        return length;
    }

    /**
     * @return the bytes of the whole section: length prefix and properties.
     */
    public int sectionLength()
    {
        final int length = length();
        return VariableByteInteger.encodedLength(length) + length;
    }

    /**
     * Writes the section: length prefix, then the properties in ascending identifier order.
     *
     * @return bytes written, equal to {@link #sectionLength()}.
     */
    public int encode(final MutableDirectBuffer buffer, final int offset)
    {
        return encode(buffer, offset, length());
    }

    /**
     * Writes the section when the caller already knows {@link #length()}.
     *
     * @return bytes written.
     */
    public int encode(final MutableDirectBuffer buffer, final int offset, final int length)
    {
        int pos = offset + VariableByteInteger.encode(buffer, offset, length);
        for (int id = 0; id <= MAX_ID && present != 0; id++)
        {
            if ((present & (1L << id)) == 0)
            {
                continue;
            }
            switch (TYPES[id])
            {
                case BYTE:
                    buffer.putByte(pos++, (byte)id);
                    buffer.putByte(pos++, (byte)ints[id]);
                    break;
                case TWO_BYTE_INTEGER:
                    buffer.putByte(pos++, (byte)id);
                    pos = Fields.putUnsignedShort(buffer, pos, ints[id]);
                    break;
                case FOUR_BYTE_INTEGER:
                    buffer.putByte(pos++, (byte)id);
                    pos = Fields.putInt(buffer, pos, ints[id]);
                    break;
                case VARIABLE_BYTE_INTEGER:
                    for (int i = 0; i < subscriptionIdentifierCount; i++)
                    {
                        buffer.putByte(pos++, (byte)id);
                        pos += VariableByteInteger.encode(buffer, pos, subscriptionIdentifiers[i]);
                    }
                    break;
                case UTF8_STRING:
                case BINARY_DATA:
                    buffer.putByte(pos++, (byte)id);
                    pos = Fields.putSlice(buffer, pos, slices[id]);
                    break;
                default:
                    for (int i = 0; i < userPropertyCount; i++)
                    {
                        buffer.putByte(pos++, (byte)id);
                        pos = Fields.putSlice(buffer, pos, userKeys[i]);
                        pos = Fields.putSlice(buffer, pos, userValues[i]);
                    }
            }
        }
        return pos - offset;
    }

    /**
     * @return a readable rendering for logs and test failures (allocates).
     */
    public String toString()
    {
        final StringBuilder sb = new StringBuilder("{");
        for (int id = 0; id <= MAX_ID; id++)
        {
            if (!has(id))
            {
                continue;
            }
            if (sb.length() > 1)
            {
                sb.append(", ");
            }
            sb.append("0x").append(Integer.toHexString(id)).append('=');
            switch (TYPES[id])
            {
                case UTF8_STRING: sb.append('"').append(slices[id].asString()).append('"'); break;
                case BINARY_DATA: sb.append(Arrays.toString(slices[id].toByteArray())); break;
                case VARIABLE_BYTE_INTEGER:
                    sb.append(Arrays.toString(Arrays.copyOf(subscriptionIdentifiers, subscriptionIdentifierCount)));
                    break;
                case UTF8_STRING_PAIR:
                    for (int i = 0; i < userPropertyCount; i++)
                    {
                        sb.append(userKeys[i].asString()).append(':').append(userValues[i].asString()).append(' ');
                    }
                    break;
                case FOUR_BYTE_INTEGER: sb.append(ints[id] & 0xFFFF_FFFFL); break;
                default: sb.append(ints[id]);
            }
        }
        return sb.append('}').toString();
    }

    private void addSubscriptionIdentifier(final int value)
    {
        if (value < 1 || value > VariableByteInteger.MAX_VALUE)
        {
            throw new IllegalArgumentException("subscription identifier out of range: " + value);
        }
        if (subscriptionIdentifierCount == subscriptionIdentifiers.length)
        {
            subscriptionIdentifiers = Arrays.copyOf(subscriptionIdentifiers, subscriptionIdentifierCount * 2);
        }
        subscriptionIdentifiers[subscriptionIdentifierCount++] = value;
    }

    private void ensureUserCapacity()
    {
        if (userPropertyCount == userKeys.length)
        {
            final int capacity = Math.max(4, userPropertyCount * 2);
            userKeys = Arrays.copyOf(userKeys, capacity);
            userValues = Arrays.copyOf(userValues, capacity);
            for (int i = userPropertyCount; i < capacity; i++)
            {
                userKeys[i] = new Slice();
                userValues[i] = new Slice();
            }
        }
    }

    private static void checkType(final int id, final byte typeA, final byte typeB)
    {
        final byte actual = typeOf(id);
        if (actual == 0 || (actual != typeA && actual != typeB))
        {
            throw new IllegalArgumentException("property 0x" + Integer.toHexString(id) + " has another type");
        }
    }

    private static void checkIntegerType(final int id)
    {
        final byte actual = typeOf(id);
        if (actual < BYTE || actual > VARIABLE_BYTE_INTEGER)
        {
            throw new IllegalArgumentException("property 0x" + Integer.toHexString(id) + " is not an integer");
        }
    }

    private static int checkIndex(final int index, final int count)
    {
        if (index < 0 || index >= count)
        {
            throw new IndexOutOfBoundsException("index " + index + " of " + count);
        }
        return index;
    }
}
