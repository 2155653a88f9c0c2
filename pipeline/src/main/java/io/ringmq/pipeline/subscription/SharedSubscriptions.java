package io.ringmq.pipeline.subscription;

import io.ringmq.pipeline.LimitSettings;
import io.ringmq.protocol.Topics;
import org.agrona.DirectBuffer;

import java.util.HashMap;
import java.util.Map;

/**
 * The MQTT 5.0 shared subscriptions, {@code $share/{ShareName}/{filter}} (section 4.8.2): groups keyed by
 * (ShareName, filter), each a {@link SharedGroup} of member sessions. A message goes to exactly one member of
 * every group whose filter matches its topic, chosen by one {@link SharedStrategy} named at construction
 * ({@link LimitSettings#SHARED_STRATEGIES}); a session in two matching groups gets one copy from each, apart from any
 * copy it gets through its non-shared subscriptions.
 * <p>
 * The groups sit in their own {@link SubscriptionIndex}, one entry per group, so matching costs what matching a
 * non-shared filter costs, with the same '+' and '#' rules and the same '$' rule [MQTT-4.7.2-1].
 * <p>
 * What stays with the caller (the routing stage):
 * <ul>
 * <li>Parsing and validating the filter: {@code Topics.validateFilter} on MQTT 5.0 [MQTT-4.8.2-1] [MQTT-4.8.2-2],
 * then {@link #shareName(String)} and {@link #filterOf(String)}; No Local set on a shared subscription is a
 * Protocol Error [MQTT-3.8.3-4].</li>
 * <li>Retained messages are never sent on a shared subscription, neither when it is made nor later (section
 * 4.8.2): the caller skips its retained walk for a {@code $share/} filter.</li>
 * <li>The delivered QoS is the minimum of the message's and the member's granted QoS [MQTT-4.8.2-3], from the
 * options reported with the member.</li>
 * <li>A message chosen for an offline member (only when no member is online) waits in that member's session
 * [MQTT-4.8.2-4]; it is not sent to another member if that session ends [MQTT-4.8.2-5] or the member refuses it
 * [MQTT-4.8.2-6].</li>
 * <li>Leaving every group when a session ends: it unsubscribes each of its own shared filters.</li>
 * </ul>
 * Single writer: the routing stage owns it. Subscribing allocates; matching allocates nothing.
 *
 * @param <S> the subscriber (a session).
 */
public final class SharedSubscriptions<S>
{
    /** What the strategy may ask about a member; the routing stage implements it over its sessions. */
    public interface Chooser<S>
    {
        /**
         * @return true when the member's session has a connection now.
         */
        boolean isOnline(S member);

        /**
         * @return the room left in the member's in-flight window (larger is better), as delivery publishes it in a
         * single-writer counter; read by the least-loaded strategy.
         */
        int freeWindow(S member);

        /**
         * @return a hash of the member's client identity, stable while the session lives; read by the hashing
         * strategies.
         */
        int clientHash(S member);
    }

    /** Receives the one member chosen for each matching group. */
    @FunctionalInterface
    public interface Matcher<S>
    {
        /**
         * @param member         the chosen member.
         * @param options        its subscription options (granted QoS in bits 0..1).
         * @param subscriptionId its subscription identifier, or 0 for none.
         */
        void onMatch(S member, int options, int subscriptionId);
    }

    private final SubscriptionIndex<SharedGroup<S>> index = new SubscriptionIndex<>();
    private final Map<String, SharedGroup<S>> groups = new HashMap<>();
    private final org.agrona.collections.Int2ObjectHashMap<SharedGroup<S>> byId =
        new org.agrona.collections.Int2ObjectHashMap<>();
    private int nextId = 1;
    private int matchingGroupId;
    private long matchingGroupKey;
    private final SharedStrategy strategy;
    private final SubscriptionIndex.Matcher<SharedGroup<S>> groupMatcher = this::onGroup;
    private int memberCount;

    // the match under way: fields rather than a capturing lambda, so a match allocates nothing
    private Chooser<S> chooser;
    private Matcher<S> matcher;
    private int messageHash;

    /**
     * @param strategy one of {@link LimitSettings#SHARED_STRATEGIES}; the random one is seeded from the clock.
     * @throws IllegalArgumentException for any other name.
     */
    public SharedSubscriptions(final String strategy)
    {
        this(strategy, System.nanoTime());
    }

    /**
     * @param strategy one of {@link LimitSettings#SHARED_STRATEGIES}.
     * @param seed     seeds the random strategy, for repeatable tests.
     * @throws IllegalArgumentException for any other name.
     */
    public SharedSubscriptions(final String strategy, final long seed)
    {
        this.strategy = SharedStrategy.forName(strategy, seed);
    }

    /**
     * @return true when the filter is a shared subscription's, {@code $share/...} (on MQTT 5.0 only: to an MQTT
     * 3.1.1 client it is a plain filter).
     */
    public static boolean isShared(final String filter)
    {
        return filter.startsWith(Topics.SHARE_PREFIX);
    }

    /**
     * @param sharedFilter a valid {@code $share/{ShareName}/{filter}}.
     * @return the ShareName.
     */
    public static String shareName(final String sharedFilter)
    {
        final int start = Topics.SHARE_PREFIX.length();
        return sharedFilter.substring(start, sharedFilter.indexOf('/', start));
    }

    /**
     * @param sharedFilter a valid {@code $share/{ShareName}/{filter}}.
     * @return the filter after the ShareName.
     */
    public static String filterOf(final String sharedFilter)
    {
        return sharedFilter.substring(sharedFilter.indexOf('/', Topics.SHARE_PREFIX.length()) + 1);
    }

    /**
     * Adds {@code subscriber} to the group (shareName, filter), making the group if it is the first member; a member
     * subscribing again keeps its place and takes the new options and identifier.
     *
     * @param options        the subscription options (granted QoS in bits 0..1).
     * @param subscriptionId the subscription identifier, or 0 for none.
     * @return true when the member is new to the group.
     */
    public boolean subscribe(final String shareName, final String filter, final S subscriber, final int options,
        final int subscriptionId)
    {
        final String key = key(shareName, filter);
        SharedGroup<S> group = groups.get(key);
        if (null == group)
        {
            while (byId.containsKey(nextId)) // ids wrap after 2^31 groups: never one in use
            {
                nextId = nextId == Integer.MAX_VALUE ? 1 : nextId + 1;
            }
            group = new SharedGroup<>(shareName, filter, nextId);
            nextId = nextId == Integer.MAX_VALUE ? 1 : nextId + 1;
            groups.put(key, group);
            byId.put(group.id(), group);
            index.subscribe(filter, group, 0);
        }
        final boolean added = group.add(subscriber, options, subscriptionId);
        if (added)
        {
            memberCount++;
        }
        return added;
    }

    /**
     * Takes {@code subscriber} out of the group (shareName, filter); the last member leaving removes the group.
     *
     * @return true when it was a member.
     */
    public boolean unsubscribe(final String shareName, final String filter, final S subscriber)
    {
        final String key = key(shareName, filter);
        final SharedGroup<S> group = groups.get(key);
        if (null == group || !group.remove(subscriber))
        {
            return false;
        }
        memberCount--;
        if (0 == group.memberCount())
        {
            groups.remove(key);
            byId.remove(group.id());
            index.unsubscribe(filter, group);
        }
        return true;
    }

    /**
     * @return whether any shared subscription exists (without one, {@link #match} finds nothing).
     */
    public boolean hasGroups()
    {
        return !groups.isEmpty();
    }

    /**
     * Reports one member of every group whose filter matches the topic name: each message goes to only one member
     * of a group (section 4.8.2). Allocates nothing.
     * <p>
     * Re-entrant as {@link SubscriptionIndex#match} is: a matcher may match again, but must not subscribe or
     * unsubscribe while a match is under way.
     *
     * @param publisherHash a hash of the publishing client's identity (the hash-client strategy chooses by it).
     * @param chooser       answers the strategy's questions about members.
     * @param matcher       receives the chosen members.
     */
    public void match(final DirectBuffer topic, final int offset, final int length, final int publisherHash,
        final Chooser<S> chooser, final Matcher<S> matcher)
    {
        if (groups.isEmpty())
        {
            return;
        }
        final Chooser<S> outerChooser = this.chooser;
        final Matcher<S> outerMatcher = this.matcher;
        final int outerHash = this.messageHash;
        this.chooser = chooser;
        this.matcher = matcher;
        this.messageHash = strategy.messageHash(publisherHash, topic, offset, length);
        try
        {
            index.match(topic, offset, length, groupMatcher);
        }
        finally
        {
            // restored for the match this one may be nested in
            this.chooser = outerChooser;
            this.matcher = outerMatcher;
            this.messageHash = outerHash;
        }
    }

    /**
     * Chooses one member of one group for a message that must go to the group again (its member left with it
     * unacknowledged), by the same strategy as a match.
     *
     * @return false when the group is gone.
     */
    public boolean dispatch(final int groupId, final DirectBuffer topic, final int offset, final int length,
        final int publisherHash, final Chooser<S> chooser, final Matcher<S> matcher)
    {
        final SharedGroup<S> group = byId.get(groupId);
        if (null == group)
        {
            return false;
        }
        final Chooser<S> outerChooser = this.chooser;
        final Matcher<S> outerMatcher = this.matcher;
        final int outerHash = this.messageHash;
        this.chooser = chooser;
        this.matcher = matcher;
        this.messageHash = strategy.messageHash(publisherHash, topic, offset, length);
        try
        {
            onGroup(group, 0);
        }
        finally
        {
            this.chooser = outerChooser;
            this.matcher = outerMatcher;
            this.messageHash = outerHash;
        }
        return true;
    }

    /**
     * @return the id of the group whose member the matcher is being told of (valid inside its call).
     */
    public int matchingGroupId()
    {
        return matchingGroupId;
    }

    /**
     * @return the {@link SharedGroup#key()} of the group whose member the matcher is being told of (valid inside its
     * call).
     */
    public long matchingGroupKey()
    {
        return matchingGroupKey;
    }

    /**
     * @return the group (shareName, filter), or null when it has no members.
     */
    public SharedGroup<S> group(final String shareName, final String filter)
    {
        return groups.get(key(shareName, filter));
    }

    /**
     * @return the number of (group, member) subscriptions held.
     */
    public int size()
    {
        return memberCount;
    }

    /**
     * @return the number of groups.
     */
    public int groupCount()
    {
        return groups.size();
    }

    /**
     * @return the strategy's name.
     */
    public String strategy()
    {
        return strategy.name();
    }

    private void onGroup(final SharedGroup<S> group, final int ignored)
    {
        final int chosen = strategy.choose(group, chooser, messageHash);
        matchingGroupId = group.id();
        matchingGroupKey = group.key();
        matcher.onMatch(group.member(chosen), group.options(chosen), group.subscriptionId(chosen));
    }

    /**
     * @return "{ShareName}/{filter}": unambiguous, since a ShareName holds no '/' [MQTT-4.8.2-2].
     */
    private static String key(final String shareName, final String filter)
    {
        return shareName + '/' + filter;
    }
}
