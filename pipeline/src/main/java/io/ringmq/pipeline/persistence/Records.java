package io.ringmq.pipeline.persistence;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.MessageSource;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The layout of every stored record, in one place: keys sort by session, then by kind, then by message number, so a
 * session's records are one key range (deleted with one range delete when it ends) and its messages come back in
 * the order they were routed. Numbers in keys are big-endian (they sort as unsigned bytes); values are
 * little-endian, as Agrona writes them.
 * <pre>
 *   key                                              value
 *   00 'e'                                           epoch long: one more at every start
 *   00 'a'                                           alive at ms long: written every second, so after a crash the
 *                                                    sessions connected then count their expiry (and wills their
 *                                                    delay) from when the broker was last seen alive
 *   00 's'                                           a clean stop: when, long (deleted at start, so only the
 *                                                    last stop counts: sessions connected then were disconnected
 *                                                    then, normally, and publish no will)
 *   01 session-key(8) 01                             session: version byte | client id length int | client id |
 *                                                    will byte (0 none, 1 one) | will qos byte | will retain byte |
 *                                                    will delay int | will expiry long | will message (see below) |
 *                                                    owner: user length int (-1: anonymous) | user | ACL client id
 *                                                    length int (-2: the client id) | ACL client id (absent in a
 *                                                    record of a build before: its owner is unknown)
 *   01 session-key(8) 02                             state: expiry seconds long | disconnected at ms long (0: was
 *                                                    connected) | will pending byte
 *   01 session-key(8) 03 filter                      subscription: options int | subscription identifier int
 *   01 session-key(8) 04 packet-id(2)                a QoS 2 PUBLISH received, PUBREL awaited: empty
 *   01 session-key(8) 05 message-number(8)           a message for the session: qos byte | retain byte |
 *                                                    published qos byte | expires at ms long | ids count int |
 *                                                    ids int... | message | shared group key long: the key of
 *                                                    the shared subscription group it came through (absent:
 *                                                    not through one, or a record of a build before)
 *   01 session-key(8) 06 message-number(8)           its QoS 2 exchange: packet id int | state byte
 *   02 topic                                         retained: qos byte | expires at ms long | message |
 *                                                    source (absent for the broker's own, and in a record of
 *                                                    a build before): user length int (-1: anonymous) | user |
 *                                                    client id length int (-3: the publisher is not
 *                                                    known) | client id
 *   message: topic length int | properties length int | payload length int | topic | properties | payload
 * </pre>
 * A session key and a message number are {@code epoch << 32 | n}: unique across restarts, so a key of a session
 * that ended is never reused. A message stored for one session more than once (its own subscription and shared
 * ones) takes the numbers after its own for the further copies, so each is a record of its own, in the order routed.
 */
public final class Records
{
    public static final byte META = 0;
    public static final byte SESSIONS = 1;
    public static final byte RETAINED = 2;

    public static final byte SESSION = 1;
    public static final byte STATE = 2;
    public static final byte SUBSCRIPTION = 3;
    public static final byte AWAITING_PUBREL = 4;
    public static final byte QUEUED = 5;
    public static final byte EXCHANGE = 6;

    /** Length of a session's key prefix: {@code 01 session-key(8)}. */
    public static final int SESSION_PREFIX_LENGTH = 9;
    /** Length of a session record's key (kind included), and of a queued message's key. */
    public static final int KIND_KEY_LENGTH = SESSION_PREFIX_LENGTH + 1;
    public static final int MESSAGE_KEY_LENGTH = KIND_KEY_LENGTH + 8;
    public static final int MESSAGE_HEADER_LENGTH = 12;

    private Records()
    {
    }

    /**
     * @return the epoch record's key.
     */
    public static int epochKey(final MutableDirectBuffer key)
    {
        key.putByte(0, META);
        key.putByte(1, (byte)'e');
        return 2;
    }

    /**
     * @return the alive-at record's key.
     */
    public static int aliveKey(final MutableDirectBuffer key)
    {
        key.putByte(0, META);
        key.putByte(1, (byte)'a');
        return 2;
    }

    /**
     * @return the clean-stop record's key.
     */
    public static int stopKey(final MutableDirectBuffer key)
    {
        key.putByte(0, META);
        key.putByte(1, (byte)'s');
        return 2;
    }

    /**
     * Writes {@code 01 session-key kind}.
     *
     * @return the key's length so far.
     */
    public static int sessionKey(final MutableDirectBuffer key, final long sessionKey, final byte kind)
    {
        key.putByte(0, SESSIONS);
        key.putLong(1, sessionKey, ByteOrder.BIG_ENDIAN);
        key.putByte(SESSION_PREFIX_LENGTH, kind);
        return KIND_KEY_LENGTH;
    }

    /**
     * @return the length of the key of a session's record with a message number (or a packet id) after its kind.
     */
    public static int messageKey(final MutableDirectBuffer key, final long sessionKey, final byte kind,
        final long messageNumber)
    {
        sessionKey(key, sessionKey, kind);
        key.putLong(KIND_KEY_LENGTH, messageNumber, ByteOrder.BIG_ENDIAN);
        return MESSAGE_KEY_LENGTH;
    }

    public static int packetIdKey(final MutableDirectBuffer key, final long sessionKey, final int packetId)
    {
        sessionKey(key, sessionKey, AWAITING_PUBREL);
        key.putShort(KIND_KEY_LENGTH, (short)packetId, ByteOrder.BIG_ENDIAN);
        return KIND_KEY_LENGTH + 2;
    }

    /**
     * Writes the bounds of a session's whole key range, {@code [01 key, 01 key+1)}, at {@code 0} and {@code 9}.
     */
    public static void sessionRange(final MutableDirectBuffer bounds, final long sessionKey)
    {
        bounds.putByte(0, SESSIONS);
        bounds.putLong(1, sessionKey, ByteOrder.BIG_ENDIAN);
        bounds.putByte(SESSION_PREFIX_LENGTH, SESSIONS);
        bounds.putLong(SESSION_PREFIX_LENGTH + 1, sessionKey + 1, ByteOrder.BIG_ENDIAN);
    }

    /**
     * @return the length of a retained message's key.
     */
    public static int retainedKey(final MutableDirectBuffer key, final DirectBuffer topic, final int topicOffset,
        final int topicLength)
    {
        key.putByte(0, RETAINED);
        key.putBytes(1, topic, topicOffset, topicLength);
        return 1 + topicLength;
    }

    public static long sessionKeyOf(final DirectBuffer key)
    {
        return key.getLong(1, ByteOrder.BIG_ENDIAN);
    }

    public static byte kindOf(final DirectBuffer key)
    {
        return key.getByte(SESSION_PREFIX_LENGTH);
    }

    public static long messageNumberOf(final DirectBuffer key)
    {
        return key.getLong(KIND_KEY_LENGTH, ByteOrder.BIG_ENDIAN);
    }

    public static int packetIdOf(final DirectBuffer key)
    {
        return key.getShort(KIND_KEY_LENGTH, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /**
     * Writes a message's three parts after its lengths, at {@code at}.
     *
     * @return the offset after it.
     */
    public static int putMessage(final MutableDirectBuffer value, final int at, final DirectBuffer topic,
        final int topicOffset, final int topicLength, final DirectBuffer properties, final int propertiesOffset,
        final int propertiesLength, final DirectBuffer payload, final int payloadOffset, final int payloadLength)
    {
        value.putInt(at, topicLength);
        value.putInt(at + 4, propertiesLength);
        value.putInt(at + 8, payloadLength);
        int p = at + MESSAGE_HEADER_LENGTH;
        value.putBytes(p, topic, topicOffset, topicLength);
        p += topicLength;
        if (propertiesLength > 0)
        {
            value.putBytes(p, properties, propertiesOffset, propertiesLength);
            p += propertiesLength;
        }
        value.putBytes(p, payload, payloadOffset, payloadLength);
        return p + payloadLength;
    }

    /**
     * @param userName    the user its client was admitted as (null: anonymous).
     * @param aclClientId the client id its access rules were compiled with (as its CONNECT gave it).
     * @return the length of a session record for a client, its will (or none) and its owner.
     */
    public static int session(final ExpandableArrayBuffer value, final int version, final String clientId,
        final Message will, final long willDelaySeconds, final String userName, final String aclClientId)
    {
        final int at = sessionAndWill(value, version, clientId, will, willDelaySeconds);
        final int ownerAt = putString(value, at, userName, -1);
        return putString(value, ownerAt, aclClientId.equals(clientId) ? null : aclClientId, SAME_AS_CLIENT_ID);
    }

    /**
     * Writes a retained message's source at {@code at} of an expandable buffer.
     *
     * @return the offset after it.
     */
    public static int putSource(final MutableDirectBuffer value, final int at, final MessageSource source)
    {
        return putString(value, putString(value, at, source.userName(), -1), source.aclClientId(), UNKNOWN_SOURCE);
    }

    /** A retained message's source whose publisher is not known ({@link MessageSource#UNKNOWN}), as its client id. */
    public static final int UNKNOWN_SOURCE = -3;

    /**
     * @return the retained message's source at {@code at}, or null where the record ends there (none was kept).
     * @throws IllegalStateException when what is there runs past the record.
     */
    public static MessageSource sourceAt(final DirectBuffer value, final int at, final int valueLength)
    {
        if (at >= valueLength)
        {
            return null;
        }
        final String userName = stringAt(value, at, valueLength, null);
        final int clientIdAt = afterString(value, at);
        final String clientId = stringAt(value, clientIdAt, valueLength, null);
        if (null != clientId)
        {
            return new MessageSource(userName, clientId);
        }
        if (value.getInt(clientIdAt) == UNKNOWN_SOURCE)
        {
            return MessageSource.UNKNOWN;
        }
        throw new IllegalStateException("a retained message's source without a client id");
    }

    /** An owner's ACL client id that is the session's client id. */
    public static final int SAME_AS_CLIENT_ID = -2;

    /**
     * @return the offset after a string's length and bytes at {@code at} ({@code absent} as its length for null).
     */
    private static int putString(final MutableDirectBuffer value, final int at, final String string,
        final int absent)
    {
        if (null == string)
        {
            value.putInt(at, absent);
            return at + 4;
        }
        final byte[] bytes = string.getBytes(StandardCharsets.UTF_8);
        value.putInt(at, bytes.length);
        value.putBytes(at + 4, bytes);
        return at + 4 + bytes.length;
    }

    private static int sessionAndWill(final ExpandableArrayBuffer value, final int version, final String clientId,
        final Message will, final long willDelaySeconds)
    {
        final byte[] id = clientId.getBytes(StandardCharsets.UTF_8);
        value.putByte(0, (byte)version);
        value.putInt(1, id.length);
        value.putBytes(5, id);
        int at = 5 + id.length;
        if (null == will)
        {
            value.putByte(at, (byte)0);
            return at + 1;
        }
        value.putByte(at, (byte)1);
        value.putByte(at + 1, (byte)will.qos());
        value.putByte(at + 2, (byte)(will.retain() ? 1 : 0));
        value.putInt(at + 3, (int)Math.min(Integer.MAX_VALUE, willDelaySeconds));
        value.putLong(at + 7, will.expiresAtMs());
        at += 15;
        final byte[] t = will.topic();
        final byte[] p = will.properties();
        final byte[] m = will.payload();
        value.checkLimit(at + MESSAGE_HEADER_LENGTH + t.length + p.length + m.length);
        value.putInt(at, t.length);
        value.putInt(at + 4, p.length);
        value.putInt(at + 8, m.length);
        at += MESSAGE_HEADER_LENGTH;
        value.putBytes(at, t);
        value.putBytes(at + t.length, p);
        value.putBytes(at + t.length + p.length, m);
        return at + t.length + p.length + m.length;
    }

    /**
     * @return the length of a session's state record.
     */
    public static int state(final MutableDirectBuffer value, final long expirySeconds, final long disconnectedAtMs,
        final boolean willPending)
    {
        value.putLong(0, expirySeconds);
        value.putLong(8, disconnectedAtMs);
        value.putByte(16, (byte)(willPending ? 1 : 0));
        return 17;
    }

    /**
     * Reads a message's three parts at {@code at} into a {@link Message}.
     */
    public static Message message(final DirectBuffer value, final int at, final int qos, final boolean retain,
        final long expiresAtMs)
    {
        final int topicLength = value.getInt(at);
        final int propertiesLength = value.getInt(at + 4);
        final int payloadLength = value.getInt(at + 8);
        final long end = (long)at + MESSAGE_HEADER_LENGTH + topicLength + propertiesLength + payloadLength;
        if (topicLength < 0 || propertiesLength < 0 || payloadLength < 0 || end > value.capacity())
        {
            throw new IllegalStateException("a message's lengths run past its record"); // garbled: never allocated
        }
        final byte[] topic = new byte[topicLength];
        final byte[] properties = new byte[propertiesLength];
        final byte[] payload = new byte[payloadLength];
        int p = at + MESSAGE_HEADER_LENGTH;
        value.getBytes(p, topic);
        value.getBytes(p + topicLength, properties);
        value.getBytes(p + topicLength + propertiesLength, payload);
        return new Message(topic, payload, qos, retain, properties, expiresAtMs);
    }

    /**
     * @return the length of a message at {@code at}, its lengths included.
     */
    /**
     * @return the string whose length and bytes are at {@code at}, or {@code absent} when its length is negative.
     * @throws IllegalStateException when it runs past {@code valueLength}.
     */
    public static String stringAt(final DirectBuffer value, final int at, final int valueLength, final String absent)
    {
        if (at < 0 || at > valueLength - 4)
        {
            throw new IllegalStateException("string past the end of its record");
        }
        final int length = value.getInt(at);
        if (length < 0)
        {
            return absent;
        }
        if (length > valueLength - at - 4)
        {
            throw new IllegalStateException("string longer than its record");
        }
        return value.getStringWithoutLengthUtf8(at + 4, length);
    }

    /**
     * @return the offset after the string at {@code at}.
     */
    public static int afterString(final DirectBuffer value, final int at)
    {
        return at + 4 + Math.max(0, value.getInt(at));
    }

    public static int messageLength(final DirectBuffer value, final int at)
    {
        final long length = (long)MESSAGE_HEADER_LENGTH + value.getInt(at) + value.getInt(at + 4) + value.getInt(at + 8);
        return length < 0 || length > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int)length;
    }
}
