package io.ringmq.pipeline.subscription;

import java.util.Arrays;

/**
 * One shared subscription group, {@code $share/{shareName}/{filter}}: its members in subscription order, each with
 * its subscription options and subscription identifier, in parallel arrays (no object per member), and the state
 * its {@link SharedStrategy} keeps between messages (a rotation cursor, a sticky member).
 * <p>
 * Single writer: the routing stage owns it through {@link SharedSubscriptions}; others may only read it on that
 * thread. A member leaving shifts the ones after it down, so the order members rotate in stays the order they
 * joined in.
 *
 * @param <S> the subscriber (a session).
 */
public final class SharedGroup<S>
{
    /** No member is sticky yet. */
    static final int NONE = -1;

    private static final Object[] NO_MEMBERS = new Object[0];
    private static final int[] NO_INTS = new int[0];

    private final String shareName;
    private final String filter;
    private final int id;
    private final long key;
    private Object[] members = NO_MEMBERS;
    private int[] options = NO_INTS;
    private int[] subscriptionIds = NO_INTS;
    private int count;

    /** Where the next rotation starts (round-robin, and the ties of least-loaded). */
    int cursor;
    /** The member a sticky strategy keeps choosing, or {@link #NONE}. */
    int sticky = NONE;

    SharedGroup(final String shareName, final String filter, final int id)
    {
        this.shareName = shareName;
        this.filter = filter;
        this.id = id;
        this.key = key(shareName, filter);
    }

    /**
     * A group's key that outlives the broker, unlike its {@link #id()}: stored with each message a persistent
     * member took through the group, so that after a restart the message is tied again to the group of that name
     * among its session's subscriptions. A 64-bit FNV-1a hash of {@code {shareName}/{filter}}; it is compared only
     * among one session's shared subscriptions, which its own client chose.
     */
    public static long key(final String shareName, final String filter)
    {
        long hash = 0xcbf29ce484222325L;
        hash = mix(hash, shareName);
        hash = (hash ^ '/') * 0x100000001b3L;
        return mix(hash, filter);
    }

    private static long mix(final long start, final String text)
    {
        long hash = start;
        for (int i = 0; i < text.length(); i++)
        {
            hash = (hash ^ text.charAt(i)) * 0x100000001b3L;
        }
        return hash;
    }

    /**
     * @return {@link #key(String, String)} of this group.
     */
    public long key()
    {
        return key;
    }

    /**
     * @return the group's number, never reused while the broker runs: delivery tags the messages it sends through
     * the group with it, so they can go to another member if theirs leaves.
     */
    public int id()
    {
        return id;
    }

    /**
     * @return the ShareName, at least one character, free of '/', '+' and '#' [MQTT-4.8.2-1] [MQTT-4.8.2-2].
     */
    public String shareName()
    {
        return shareName;
    }

    /**
     * @return the topic filter after {@code $share/{shareName}/}.
     */
    public String filter()
    {
        return filter;
    }

    /**
     * @return the number of members.
     */
    public int memberCount()
    {
        return count;
    }

    /**
     * @return member {@code i}, in the order members joined.
     */
    @SuppressWarnings("unchecked")
    public S member(final int i)
    {
        return (S)members[i];
    }

    /**
     * @return the subscription options of member {@code i} (QoS in bits 0..1).
     */
    public int options(final int i)
    {
        return options[i];
    }

    /**
     * @return the subscription identifier of member {@code i}, or 0 for none.
     */
    public int subscriptionId(final int i)
    {
        return subscriptionIds[i];
    }

    /**
     * @return the index of {@code subscriber} (compared by identity), or -1.
     */
    public int indexOf(final S subscriber)
    {
        for (int i = 0; i < count; i++)
        {
            if (members[i] == subscriber)
            {
                return i;
            }
        }
        return -1;
    }

    /**
     * Adds a member, or replaces the options and subscription identifier of one already in the group.
     *
     * @return true when the member is new.
     */
    boolean add(final S subscriber, final int memberOptions, final int subscriptionId)
    {
        final int existing = indexOf(subscriber);
        if (existing >= 0)
        {
            options[existing] = memberOptions;
            subscriptionIds[existing] = subscriptionId;
            return false;
        }
        if (count == members.length)
        {
            final int capacity = Math.max(2, count * 2);
            members = Arrays.copyOf(members, capacity);
            options = Arrays.copyOf(options, capacity);
            subscriptionIds = Arrays.copyOf(subscriptionIds, capacity);
        }
        members[count] = subscriber;
        options[count] = memberOptions;
        subscriptionIds[count++] = subscriptionId;
        return true;
    }

    /**
     * Removes a member, keeping the others in order, and moves the strategy state so it still names the same
     * members.
     *
     * @return true when it was a member.
     */
    boolean remove(final S subscriber)
    {
        final int i = indexOf(subscriber);
        if (i < 0)
        {
            return false;
        }
        final int after = count - i - 1;
        System.arraycopy(members, i + 1, members, i, after);
        System.arraycopy(options, i + 1, options, i, after);
        System.arraycopy(subscriptionIds, i + 1, subscriptionIds, i, after);
        members[--count] = null;
        if (i < cursor)
        {
            cursor--; // the member the rotation would reach next has moved down one
        }
        if (sticky == i)
        {
            sticky = NONE;
        }
        else if (sticky > i)
        {
            sticky--;
        }
        return true;
    }

    /**
     * @return the first member at or after {@code from} (circularly) that is online, or -1 when none is.
     */
    int nextOnline(final SharedSubscriptions.Chooser<S> chooser, final int from)
    {
        for (int n = 0, i = from; n < count; n++, i++)
        {
            if (i == count)
            {
                i = 0;
            }
            if (chooser.isOnline(member(i)))
            {
                return i;
            }
        }
        return -1;
    }

    /**
     * @return how many members are online.
     */
    int onlineCount(final SharedSubscriptions.Chooser<S> chooser)
    {
        int online = 0;
        for (int i = 0; i < count; i++)
        {
            if (chooser.isOnline(member(i)))
            {
                online++;
            }
        }
        return online;
    }

    /**
     * @return the cursor, brought back inside the group after members left.
     */
    int start()
    {
        return cursor < count ? cursor : 0;
    }

    public String toString()
    {
        return "SharedGroup[$share/" + shareName + "/" + filter + ", " + count + " members]";
    }
}
