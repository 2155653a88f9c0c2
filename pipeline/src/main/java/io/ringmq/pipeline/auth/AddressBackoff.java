package io.ringmq.pipeline.auth;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Failed CONNECT credentials per source address, with growing back-off: after {@code maxFailures} failures within
 * the window an address is refused without hashing for {@code backoffMs}, each next back-off doubling up to
 * {@code backoffMaxMs}; a success forgets the address when every failure counted for it was that same user's (a
 * typo put right; a success as one's own user does not wipe guesses at another's password), as does a quiet spell
 * of {@code backoffMaxMs} after its last back-off. An IPv6 address counts by its /64 (what one host is usually given).
 * Memory is bounded: at most {@code trackedAddresses} addresses, the least recently seen forgotten first (counted),
 * so a client with a million source addresses costs a fixed table, though each of its addresses gets its first
 * tries. An address is forgotten for another only once forgetting it changes nothing: its failure window over, and
 * no back-off running or remembered. When none of the oldest few can go, an address the full table cannot hold
 * counts its failures in one back-off shared by every such address, so that failing from more addresses than the
 * table holds neither wipes the back-offs already running nor the failures counted toward them.
 * Thread-safe: the credential workers share it under a short lock (never an I/O or stage thread).
 */
final class AddressBackoff
{
    private final int maxFailures;
    private final long windowMs;
    private final long backoffMs;
    private final long backoffMaxMs;
    private final int capacity;
    private final LinkedHashMap<Long, State> states;
    /** The failures of addresses the full table could not hold, counted together. */
    private final State overflow;
    private long evicted;
    /** Oldest entries looked at for one to forget: those that cannot be are moved to the back. */
    private static final int EVICTION_SCAN = 8;
    private final long[] notForgettable = new long[EVICTION_SCAN];

    AddressBackoff(final CredentialSettings settings)
    {
        this.maxFailures = settings.maxFailures();
        this.windowMs = settings.failureWindowMs();
        this.backoffMs = settings.backoffMs();
        this.backoffMaxMs = settings.backoffMaxMs();
        this.capacity = settings.trackedAddresses();
        this.states = new LinkedHashMap<>(16, 0.75f, true);
        this.overflow = new State(0, backoffMs); // in no table: no one's success clears it
    }

    /**
     * Makes room for one more address in a full table: forgets the least recently seen address that can be
     * ({@link #forgettable}), among the oldest few; the ones that cannot go to the back (seen now), so the next look
     * finds others.
     *
     * @return false when none of the oldest few can be forgotten.
     */
    private boolean makeRoom(final long nowMs)
    {
        int kept = 0;
        boolean removed = false;
        final Iterator<Map.Entry<Long, State>> oldest = states.entrySet().iterator();
        while (oldest.hasNext() && kept < EVICTION_SCAN)
        {
            final Map.Entry<Long, State> entry = oldest.next();
            if (forgettable(entry.getValue(), nowMs))
            {
                oldest.remove();
                evicted++;
                removed = true;
                break;
            }
            notForgettable[kept++] = entry.getKey();
        }
        for (int i = 0; i < kept; i++)
        {
            states.get(notForgettable[i]); // access order: to the back
        }
        return removed;
    }

    /**
     * @return whether forgetting the address changes nothing: its failures' window is over, and it is not backing
     * off and has been quiet long enough since its last back-off for the next to start from the first again.
     */
    private boolean forgettable(final State state, final long nowMs)
    {
        return nowMs - state.windowStartMs > windowMs &&
            (0 == state.blockedUntilMs || nowMs - state.blockedUntilMs > backoffMaxMs);
    }

    /**
     * @return the state an address's failures count in: its own, one made for it, or the shared one when the table
     * is full and none of its oldest can be forgotten; null when it has none and {@code create} is false.
     */
    private State stateOf(final long key, final long nowMs, final boolean create)
    {
        final State state = states.get(key);
        if (null != state || states.size() < capacity && !create)
        {
            return state;
        }
        if (!create)
        {
            return overflow; // the table is full: an address it does not hold may be one that overflowed
        }
        if (states.size() >= capacity && !makeRoom(nowMs))
        {
            return overflow;
        }
        final State made = new State(nowMs, backoffMs);
        states.put(key, made);
        return made;
    }

    /**
     * @return whether the address is backing off now: its attempt is refused without hashing.
     */
    boolean isBackingOff(final long key, final long nowMs)
    {
        if (0 == maxFailures)
        {
            return false;
        }
        synchronized (states)
        {
            final State state = stateOf(key, nowMs, false);
            return null != state && nowMs < state.blockedUntilMs;
        }
    }

    /**
     * Counts a failed attempt.
     *
     * @return true when it started a back-off.
     */
    boolean failed(final long key, final long nowMs)
    {
        return failed(key, nowMs, null);
    }

    /**
     * Counts a failed attempt for {@code userName}.
     *
     * @return true when it started a back-off.
     */
    boolean failed(final long key, final long nowMs, final String userName)
    {
        if (0 == maxFailures)
        {
            return false;
        }
        synchronized (states)
        {
            final State state = stateOf(key, nowMs, true);
            if (state.blockedUntilMs != 0 && nowMs - state.blockedUntilMs > backoffMaxMs)
            {
                state.nextBackoffMs = backoffMs; // quiet long enough since its last back-off: starts over
                state.blockedUntilMs = 0;
            }
            if (nowMs - state.windowStartMs > windowMs)
            {
                state.windowStartMs = nowMs;
                state.failures = 0;
            }
            if (0 == state.failures && 0 == state.blockedUntilMs)
            {
                state.userName = userName; // a fresh count, with no back-off behind it
                state.mixedUsers = false;
            }
            else if (!java.util.Objects.equals(state.userName, userName))
            {
                state.mixedUsers = true;
            }
            if (++state.failures < maxFailures)
            {
                return false;
            }
            state.blockedUntilMs = nowMs + state.nextBackoffMs;
            state.nextBackoffMs = Math.min(backoffMaxMs, state.nextBackoffMs * 2);
            state.failures = 0;
            state.windowStartMs = nowMs;
            return true;
        }
    }

    /**
     * A success from the address: its failures and back-off are forgotten.
     */
    void succeeded(final long key)
    {
        succeeded(key, null);
    }

    /**
     * A success from the address for {@code userName}: its failures and back-off are forgotten when they were all
     * that user's.
     */
    void succeeded(final long key, final String userName)
    {
        if (0 == maxFailures)
        {
            return;
        }
        synchronized (states)
        {
            final State state = states.get(key);
            if (null != state && !state.mixedUsers && java.util.Objects.equals(state.userName, userName))
            {
                states.remove(key);
            }
        }
    }

    /**
     * @return addresses tracked now.
     */
    int size()
    {
        synchronized (states)
        {
            return states.size();
        }
    }

    /**
     * @return addresses forgotten because the table was full, since the last call.
     */
    long takeEvicted()
    {
        synchronized (states)
        {
            final long result = evicted;
            evicted = 0;
            return result;
        }
    }

    /**
     * The failures of one address.
     */
    private static final class State
    {
        long windowStartMs;
        int failures;
        long blockedUntilMs;
        long nextBackoffMs;
        /** The user the failures were for, while they were all one user's. */
        String userName;
        boolean mixedUsers;

        State(final long nowMs, final long backoffMs)
        {
            this.windowStartMs = nowMs;
            this.nextBackoffMs = backoffMs;
        }
    }
}
