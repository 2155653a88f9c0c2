package io.ringmq.pipeline.session;

import io.ringmq.pipeline.Message;

/**
 * {@code --max-session-memory}: the heap the routing stage's sessions hold in what their clients chose the size
 * or number of (client ids, user names, wills, subscription filters, the packet ids of inbound QoS 2 messages
 * awaiting PUBREL), each with an allowance for the objects around it. Every other bound a client meets is per
 * client or per connection (a will within {@code --max-connect-size}, a filter within {@code --max-topic-length},
 * {@code --max-subscriptions-per-client} of them, 65,535 packet ids); this one holds them all together, so that a
 * thousand connections with 60 KiB wills, one client's ten thousand long filters, or sessions each left with
 * 65,535 unreleased QoS 2 messages are refused (CONNACK 0x97 or 3, SUBACK 0x97 or 0x80, PUBREC 0x97) instead of
 * running the heap out. Its sessions add and take back what they hold as it changes ({@link RoutingSession}); the
 * stage asks {@link #hasRoomFor} before it lets a client add more. A session's fixed part is not counted here:
 * {@code --max-sessions} bounds how many there are. Owned by the routing stage's thread, as its registry is.
 */
public final class SessionMemory
{
    /** A string's fixed part: the object and its array's header. */
    public static final int STRING_LENGTH = 40;
    /** A subscription's fixed part: the object, its map entry and its place in the index. */
    public static final int SUBSCRIPTION_LENGTH = 192;
    /** A will's fixed part: the message and its arrays' headers. */
    public static final int WILL_LENGTH = 96;
    /** An inbound QoS 2 packet id awaiting PUBREL: its slot in a hash set at most two thirds full, and growth. */
    public static final int PUBREL_ID_LENGTH = 12;
    /** The set of those packet ids, while a session has one. */
    public static final int PUBREL_SET_LENGTH = 64;

    private long heldBytes;
    private long maxBytes;

    /**
     * @param maxBytes the bound (see {@link #maxBytes(long)}).
     */
    public SessionMemory(final long maxBytes)
    {
        this.maxBytes = maxBytes;
    }

    /**
     * A new bound (a reload), judged from the next request on: what is held past a lowered one stays until its
     * sessions let it go.
     */
    public void maxBytes(final long maxBytes)
    {
        this.maxBytes = maxBytes;
    }

    /**
     * @return whether that many more bytes may be held.
     */
    public boolean hasRoomFor(final long bytes)
    {
        return heldBytes + bytes <= maxBytes;
    }

    /**
     * @return the bytes held now.
     */
    public long heldBytes()
    {
        return heldBytes;
    }

    void add(final long bytes)
    {
        heldBytes += bytes;
    }

    /**
     * @return what a string of a client's is counted as: a byte per char, as the JDK keeps Latin-1 text (others
     * take two: the allowances cover the difference for short ones).
     */
    public static long lengthOf(final String text)
    {
        return null == text ? 0 : STRING_LENGTH + text.length();
    }

    /**
     * @return what a will is counted as (0 for none).
     */
    public static long lengthOf(final Message will)
    {
        return null == will ? 0 :
            WILL_LENGTH + will.topic().length + will.payload().length + will.properties().length;
    }

    /**
     * @return what a new session is counted as before its will and subscriptions: its client id and user name
     * (0: none), by their lengths.
     */
    public static long sessionLength(final int clientIdLength, final int userNameLength)
    {
        return STRING_LENGTH + clientIdLength + (userNameLength > 0 ? STRING_LENGTH + userNameLength : 0);
    }

    /**
     * @return what a subscription to that filter (as the client wrote it) is counted as.
     */
    public static long subscriptionLength(final String filter)
    {
        return SUBSCRIPTION_LENGTH + 2L * filter.length(); // kept by the session and, in levels, by the index
    }
}
