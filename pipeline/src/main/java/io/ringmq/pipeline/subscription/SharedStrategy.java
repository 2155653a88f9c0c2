package io.ringmq.pipeline.subscription;

import io.ringmq.pipeline.LimitSettings;
import org.agrona.DirectBuffer;

/**
 * How a shared subscription group picks the one member a message goes to (MQTT 5.0 section 4.8.2: each message
 * goes to only one of the sessions attached to the group). One strategy serves every group of a
 * {@link SharedSubscriptions}; what it keeps per group (a rotation cursor, a sticky member) lives in the
 * {@link SharedGroup}, so choosing allocates nothing.
 * <p>
 * Every strategy follows one rule: a member that is not online is never chosen while one that is online exists;
 * when none is online it chooses among all, and the message waits in that member's session until it reconnects
 * [MQTT-4.8.2-4] (whether an offline member can hold it is the caller's call).
 * <p>
 * Single writer: the routing stage owns it (the random strategy's generator is plain state).
 */
abstract class SharedStrategy
{
    static final String ROUND_ROBIN = "round-robin";
    static final String RANDOM = "random";
    static final String STICKY = "sticky";
    static final String HASH_CLIENT = "hash-client";
    static final String HASH_TOPIC = "hash-topic";
    static final String LEAST_LOADED = "least-loaded";

    private final String name;

    SharedStrategy(final String name)
    {
        this.name = name;
    }

    /**
     * @param name one of {@link LimitSettings#SHARED_STRATEGIES}.
     * @param seed seeds the random strategy (the others ignore it).
     * @throws IllegalArgumentException for any other name.
     */
    static SharedStrategy forName(final String name, final long seed)
    {
        switch (name)
        {
            case ROUND_ROBIN:
                return new RoundRobin();
            case RANDOM:
                return new Random(seed);
            case STICKY:
                return new Sticky();
            case HASH_CLIENT:
                return new Rendezvous(HASH_CLIENT);
            case HASH_TOPIC:
                return new TopicRendezvous();
            case LEAST_LOADED:
                return new LeastLoaded();
            default:
                throw new IllegalArgumentException("unknown shared subscription strategy '" + name +
                    "', expected one of " + LimitSettings.SHARED_STRATEGIES);
        }
    }

    String name()
    {
        return name;
    }

    /**
     * Computed once per message, before any group chooses.
     *
     * @return the hash the hashing strategies choose by; 0 for the others.
     */
    int messageHash(final int publisherHash, final DirectBuffer topic, final int offset, final int length)
    {
        return 0;
    }

    /**
     * @param group       a group with at least one member.
     * @param messageHash what {@link #messageHash} returned for this message.
     * @return the index of the chosen member in {@code group}.
     */
    abstract <S> int choose(SharedGroup<S> group, SharedSubscriptions.Chooser<S> chooser, int messageHash);

    public String toString()
    {
        return name;
    }

    /**
     * @return the SplitMix64 finaliser: every input bit moves about half the output bits.
     */
    static long mix64(final long x)
    {
        long z = (x ^ (x >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
        return z ^ (z >>> 31);
    }

    /** Rotates over the online members in the order they joined, each in turn. */
    static final class RoundRobin extends SharedStrategy
    {
        RoundRobin()
        {
            super(ROUND_ROBIN);
        }

        <S> int choose(final SharedGroup<S> group, final SharedSubscriptions.Chooser<S> chooser, final int hash)
        {
            final int from = group.start();
            final int online = group.nextOnline(chooser, from);
            final int chosen = online >= 0 ? online : from; // none online: rotate over all of them
            group.cursor = chosen + 1;
            return chosen;
        }
    }

    /** Uniform over the online members, from a seeded SplitMix64 generator: one long of state, nothing allocated. */
    static final class Random extends SharedStrategy
    {
        private long state;

        Random(final long seed)
        {
            super(RANDOM);
            this.state = seed;
        }

        <S> int choose(final SharedGroup<S> group, final SharedSubscriptions.Chooser<S> chooser, final int hash)
        {
            final int online = group.onlineCount(chooser);
            if (0 == online)
            {
                return nextInt(group.memberCount());
            }
            int skip = nextInt(online);
            for (int i = 0; i < group.memberCount(); i++)
            {
                if (chooser.isOnline(group.member(i)) && 0 == skip--)
                {
                    return i;
                }
            }
            return Math.max(0, group.nextOnline(chooser, 0)); // only if the chooser changed its mind between passes
        }

        /**
         * @return uniform in [0, bound), by multiply-and-shift instead of a division.
         */
        private int nextInt(final int bound)
        {
            return (int)(((nextLong() >>> 33) * bound) >>> 31);
        }

        private long nextLong()
        {
            state += 0x9E37_79B9_7F4A_7C15L; // the golden-ratio step of SplitMix64
            return mix64(state);
        }
    }

    /** Keeps the member it chose until that member goes offline or leaves, then moves on to the next online one. */
    static final class Sticky extends SharedStrategy
    {
        Sticky()
        {
            super(STICKY);
        }

        <S> int choose(final SharedGroup<S> group, final SharedSubscriptions.Chooser<S> chooser, final int hash)
        {
            final int sticky = group.sticky;
            if (sticky >= 0 && chooser.isOnline(group.member(sticky)))
            {
                return sticky;
            }
            final int from = group.start();
            final int online = group.nextOnline(chooser, from);
            if (online < 0 && sticky >= 0)
            {
                return sticky; // nobody online: stay with the member already chosen
            }
            final int chosen = online >= 0 ? online : from;
            group.sticky = chosen;
            group.cursor = chosen + 1; // the next one to stick to starts after this one
            return chosen;
        }
    }

    /**
     * Chooses the member with the highest score, online members before offline ones; among equal scores, the first
     * at or after the group's cursor.
     */
    abstract static class HighestScore extends SharedStrategy
    {
        HighestScore(final String name)
        {
            super(name);
        }

        /**
         * @return how good a choice {@code member} is for this message: higher is better.
         */
        abstract <S> long score(S member, SharedSubscriptions.Chooser<S> chooser, int hash);

        /**
         * @return the index of the online member with the highest score, or of the member with the highest score
         * when none is online.
         */
        final <S> int highest(final SharedGroup<S> group, final SharedSubscriptions.Chooser<S> chooser,
            final int hash)
        {
            final int count = group.memberCount();
            int best = -1;
            long bestScore = 0;
            boolean bestOnline = false;
            for (int n = 0, i = group.start(); n < count; n++, i++)
            {
                if (i == count)
                {
                    i = 0;
                }
                final S member = group.member(i);
                final boolean online = chooser.isOnline(member);
                if (bestOnline && !online)
                {
                    continue;
                }
                final long score = score(member, chooser, hash);
                if (best < 0 || (online && !bestOnline) || score > bestScore)
                {
                    best = i;
                    bestScore = score;
                    bestOnline = online;
                }
            }
            return best;
        }
    }

    /**
     * Rendezvous (highest random weight) hashing of the message hash against each member's client hash: stable for
     * one hash while the online members stay the same, and when a member comes or goes only the hashes that move to
     * or from it change member. The cursor never moves, so even equal weights break the same way every time.
     */
    static class Rendezvous extends HighestScore
    {
        Rendezvous(final String name)
        {
            super(name);
        }

        int messageHash(final int publisherHash, final DirectBuffer topic, final int offset, final int length)
        {
            return publisherHash;
        }

        final <S> int choose(final SharedGroup<S> group, final SharedSubscriptions.Chooser<S> chooser, final int hash)
        {
            return highest(group, chooser, hash);
        }

        /**
         * @return the message hash and the member's client hash side by side, mixed.
         */
        final <S> long score(final S member, final SharedSubscriptions.Chooser<S> chooser, final int hash)
        {
            return mix64(((long)hash << 32) | (chooser.clientHash(member) & 0xFFFF_FFFFL));
        }
    }

    /** Rendezvous hashing by the topic name's bytes (FNV-1a, read in place). */
    static final class TopicRendezvous extends Rendezvous
    {
        TopicRendezvous()
        {
            super(HASH_TOPIC);
        }

        int messageHash(final int publisherHash, final DirectBuffer topic, final int offset, final int length)
        {
            int h = 0x811C_9DC5;
            for (int i = offset, end = offset + length; i < end; i++)
            {
                h = (h ^ (topic.getByte(i) & 0xFF)) * 0x0100_0193;
            }
            return h;
        }
    }

    /**
     * The online member with the most room in its in-flight window; among equals, the first after the previous
     * choice, so ties rotate.
     */
    static final class LeastLoaded extends HighestScore
    {
        LeastLoaded()
        {
            super(LEAST_LOADED);
        }

        <S> int choose(final SharedGroup<S> group, final SharedSubscriptions.Chooser<S> chooser, final int hash)
        {
            final int chosen = highest(group, chooser, hash);
            group.cursor = chosen + 1; // the next tie starts after this one
            return chosen;
        }

        <S> long score(final S member, final SharedSubscriptions.Chooser<S> chooser, final int hash)
        {
            return chooser.freeWindow(member);
        }
    }
}
