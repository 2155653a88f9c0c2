package io.ringmq.pipeline.session;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.status.BrokerCounters;

/**
 * {@code --max-session-memory}: the heap the routing stage's sessions hold in what their clients chose the size
 * or number of (client ids, user names, wills, subscription filters, the packet ids of inbound QoS 2 messages
 * awaiting PUBREL), each with an allowance for the objects around it. Every other bound a client meets is per
 * client or per connection (a will within {@code --max-connect-size}, a filter within {@code --max-topic-length},
 * {@code --max-subscriptions-per-client} of them, 65,535 packet ids); this one holds them all together, so that a
 * thousand connections with 60 KiB wills, one client's ten thousand long filters, or sessions each left with
 * 65,535 unreleased QoS 2 messages are refused (CONNACK 0x97 or 3, SUBACK 0x97 or 0x80, PUBREC 0x97) instead of
 * running the heap out. Its sessions add and take back what they hold as it changes ({@link RoutingSession}); the
 * stage asks before it lets a client add more. A session's fixed part is not counted here: {@code --max-sessions}
 * bounds how many there are. Owned by the routing stage's thread, as its registry is.
 * <p>
 * Two rules keep one client, or a crowd of them, from taking what the others need. Filters and packet ids awaiting
 * PUBREL, which a connected client can add to without end, fill at most three quarters of the bound: the last
 * quarter is kept for CONNECTs (client ids, user names, wills), so clients can still connect when subscriptions have
 * filled the rest. And one session holds at most {@code --max-client-session-memory} in filters, and as much again
 * in those packet ids ({@link #filterRefusal}, {@link #awaitedRefusal}): they are judged apart, filters by what
 * every routing shard counts alike, packet ids by shard 0 alone, which routes QoS 2. A CONNECT is judged by the whole
 * bound, and one that adds nothing (a session resumed without a will) always gets in, so a session is resumed
 * (and can let go of what it holds) even past a bound lowered since.
 */
public final class SessionMemory
{
    /** A string's fixed part: the object and its array's header. */
    public static final int STRING_LENGTH = 40;
    /** A subscription's fixed part: the object, its map entry and its place in the index. */
    public static final int SUBSCRIPTION_LENGTH = 192;
    /**
     * A level of a filter in the subscription index: its node, the node's table of children and its slot in its
     * parent's (a filter of 128 one-character levels takes about 21 KB there). Counted for every level, shared
     * with other filters or not.
     */
    public static final int LEVEL_LENGTH = 176;
    /** A will's fixed part: the message and its arrays' headers. */
    public static final int WILL_LENGTH = 96;
    /** An inbound QoS 2 packet id awaiting PUBREL: its slot in a hash set at most two thirds full, and growth. */
    public static final int PUBREL_ID_LENGTH = 12;
    /** The set of those packet ids, while a session has one. */
    public static final int PUBREL_SET_LENGTH = 64;
    /** What {@link #filterRefusal} and {@link #awaitedRefusal} answer when there is room. */
    public static final int ROOM = -1;

    private long heldBytes;
    /**
     * What the packet ids awaiting PUBREL hold, apart: they change only on the routing shard that routes QoS 2
     * (shard 0), while {@link #heldBytes} changes alike on every shard, which decide CONNECTs and filters by it.
     */
    private long awaitedBytes;
    private long maxBytes;
    /** What filters and packet ids awaiting PUBREL may fill of it: three quarters. */
    private long growthBytes;
    private long maxClientBytes;

    /**
     * @param maxBytes       the bound (see {@link #maxBytes(long, long)}).
     * @param maxClientBytes what one session may hold of it in filters and packet ids awaiting PUBREL.
     */
    public SessionMemory(final long maxBytes, final long maxClientBytes)
    {
        maxBytes(maxBytes, maxClientBytes);
    }

    /**
     * New bounds (a reload), judged from the next request on: what is held past a lowered one stays until its
     * sessions let it go.
     */
    public void maxBytes(final long maxBytes, final long maxClientBytes)
    {
        this.maxBytes = maxBytes;
        this.growthBytes = maxBytes - (maxBytes >> 2);
        this.maxClientBytes = maxClientBytes;
    }

    /**
     * @return whether a CONNECT may add a new session's client id and user name ({@code sessionBytes}, 0 for a session
     * resumed) and a will ({@code willBytes}, 0 for none): within the whole bound, or when it adds nothing. Judged by
     * what every routing shard counts alike (packet ids awaiting PUBREL left out), so that all decide as shard 0 does.
     */
    public boolean hasRoomForConnect(final long sessionBytes, final long willBytes)
    {
        final long bytes = sessionBytes + willBytes;
        return 0 == bytes || heldBytes + bytes <= maxBytes;
    }

    /**
     * @return {@link #ROOM} when {@code session} may hold that many more bytes of filters, else the counter of the
     * bound that refuses them: its own share of filters ({@code --max-client-session-memory}), or the three quarters
     * of the bound filters may fill. Judged by what every routing shard counts alike, as {@link #hasRoomForConnect} is.
     */
    public int filterRefusal(final RoutingSession session, final long bytes)
    {
        if (session.filterBytes() + bytes > maxClientBytes)
        {
            return BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED;
        }
        return heldBytes + bytes <= growthBytes ? ROOM : BrokerCounters.SESSION_MEMORY_REFUSED;
    }

    /**
     * @return {@link #ROOM} when {@code session} may hold that many more bytes of packet ids awaiting PUBREL, else
     * the counter of the bound that refuses them: its own share, for them apart from its filters, or the three
     * quarters with everything else (shard 0's decision alone: together with the rest the total stays within twice
     * the bound at worst).
     */
    public int awaitedRefusal(final RoutingSession session, final long bytes)
    {
        if (session.awaitedBytes() + bytes > maxClientBytes)
        {
            return BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED;
        }
        return heldBytes + awaitedBytes + bytes <= growthBytes ? ROOM : BrokerCounters.SESSION_MEMORY_REFUSED;
    }

    /**
     * @return the bytes of client ids, user names, wills and filters held now (the same on every routing shard).
     */
    public long heldBytes()
    {
        return heldBytes;
    }

    /**
     * @return the bytes held now, packet ids awaiting PUBREL included.
     */
    public long totalBytes()
    {
        return heldBytes + awaitedBytes;
    }

    void add(final long bytes)
    {
        heldBytes += bytes;
    }

    void addAwaited(final long bytes)
    {
        awaitedBytes += bytes;
    }

    /**
     * @return what a string of a client's is counted as: a byte per char when all are Latin-1, else two, as the JDK
     * keeps them.
     */
    public static long lengthOf(final String text)
    {
        return null == text ? 0 : STRING_LENGTH + charBytes(text);
    }

    private static long charBytes(final String text)
    {
        for (int i = 0, n = text.length(); i < n; i++)
        {
            if (text.charAt(i) > 0xFF)
            {
                return 2L * n;
            }
        }
        return text.length();
    }

    /**
     * @return the length of a string in UTF-8, as the subscription index keeps a filter's levels.
     */
    private static long utf8Length(final String text)
    {
        long length = 0;
        for (int i = 0, n = text.length(); i < n; i++)
        {
            final char c = text.charAt(i);
            length += c < 0x80 ? 1 : c < 0x800 ? 2 : Character.isSurrogate(c) ? 2 : 3; // a surrogate pair: 4
        }
        return length;
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
     * @return what a new session is counted as before its will and subscriptions: its client id, and its user name
     * by the length of its UTF-8 (0: none), which is at least what the string made from it holds.
     */
    public static long sessionLength(final String clientId, final int userNameUtf8Length)
    {
        return lengthOf(clientId) + (userNameUtf8Length > 0 ? STRING_LENGTH + userNameUtf8Length : 0);
    }

    /**
     * @return what a subscription to that filter (as the client wrote it) is counted as: the session keeps the
     * string, the index its levels in UTF-8, a node each.
     */
    public static long subscriptionLength(final String filter)
    {
        long levels = 1;
        for (int i = 0, n = filter.length(); i < n; i++)
        {
            if (filter.charAt(i) == '/')
            {
                levels++;
            }
        }
        return SUBSCRIPTION_LENGTH + lengthOf(filter) + utf8Length(filter) + levels * LEVEL_LENGTH;
    }
}
