package io.ringmq.pipeline.auth;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Failed CONNECT credentials per source address, with growing back-off: after {@code maxFailures} failures within
 * the window an address is refused without hashing for {@code backoffMs}, each next back-off doubling up to
 * {@code backoffMaxMs}; a success forgets the address when every failure counted for it was that same user's (a
 * typo put right; a success as one's own user does not wipe guesses at another's password), as does a quiet spell
 * of {@code backoffMaxMs} after its last back-off. An IPv6 address counts by its /64 (what one host is usually given). Memory is bounded: at most
 * {@code trackedAddresses} addresses, the least recently seen forgotten first (counted), so a client with a
 * million source addresses costs a fixed table, though each of its addresses gets its first tries.
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
    private long evicted;

    AddressBackoff(final CredentialSettings settings)
    {
        this.maxFailures = settings.maxFailures();
        this.windowMs = settings.failureWindowMs();
        this.backoffMs = settings.backoffMs();
        this.backoffMaxMs = settings.backoffMaxMs();
        this.capacity = settings.trackedAddresses();
        this.states = new LinkedHashMap<>(16, 0.75f, true)
        {
            protected boolean removeEldestEntry(final Map.Entry<Long, State> eldest)
            {
                if (size() > capacity)
                {
                    evicted++;
                    return true;
                }
                return false;
            }
        };
    }

    /**
     * @return the key an address is counted under: an IPv4 address whole, an IPv6 address by its /64.
     */
    static long keyOf(final InetAddress address)
    {
        final byte[] bytes = address.getAddress();
        long key = 0;
        for (int i = 0; i < Math.min(8, bytes.length); i++)
        {
            key = (key << 8) | (bytes[i] & 0xFF);
        }
        return bytes.length == 4 ? key | (1L << 40) : key; // IPv4 kept apart from the IPv6 prefixes that would alias
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
            final State state = states.get(key);
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
            State state = states.get(key);
            if (null == state)
            {
                state = new State(nowMs, backoffMs);
                states.put(key, state);
            }
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
