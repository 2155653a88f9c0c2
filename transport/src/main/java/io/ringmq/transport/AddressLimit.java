package io.ringmq.transport;

import java.net.InetAddress;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;

/**
 * {@code --max-connections-per-address}: how many connections each remote address holds, across every I/O agent.
 * Only the {@link Acceptor} adds (on its agent's thread); a close on any agent takes one away. Each change is one
 * atomic {@link ConcurrentHashMap#compute} on that address's entry, and an entry goes when its count reaches zero,
 * so the map holds only addresses with connections. Loopback addresses are exempt unless {@code --limit-loopback}:
 * local benchmarks and sidecars dial from loopback.
 */
final class AddressLimit
{
    private final ConcurrentHashMap<InetAddress, Integer> counts = new ConcurrentHashMap<>();
    /** The acceptor's thread only, as {@link #tryAcquire}; a reload changes them there. */
    private int maxPerAddress;
    private boolean limitLoopback;
    private final BiFunction<InetAddress, Integer, Integer> acquireOne = this::acquireOne;
    private final BiFunction<InetAddress, Integer, Integer> releaseOne = (address, count) -> count <= 1 ? null : count - 1;
    /** Written and read by the acceptor's thread only: compute runs its function on the calling thread. */
    private boolean admitted;

    AddressLimit(final int maxPerAddress, final boolean limitLoopback)
    {
        this.maxPerAddress = maxPerAddress;
        this.limitLoopback = limitLoopback;
    }

    /**
     * @return whether connections from this address are counted at all.
     */
    boolean applies(final InetAddress address)
    {
        return null != address && (limitLoopback || !address.isLoopbackAddress());
    }

    /**
     * Counts one more connection from {@code address} if it is under the limit. Acceptor thread only.
     *
     * @return false when the address already holds the maximum (nothing counted).
     */
    boolean tryAcquire(final InetAddress address)
    {
        admitted = false;
        counts.compute(address, acquireOne);
        return admitted;
    }

    /**
     * A connection from {@code address} ended; any thread.
     */
    void release(final InetAddress address)
    {
        counts.computeIfPresent(address, releaseOne);
    }

    /**
     * @return the connections counted for {@code address} (for tests and status).
     */
    int count(final InetAddress address)
    {
        final Integer count = counts.get(address);
        return null == count ? 0 : count;
    }

    private Integer acquireOne(final InetAddress address, final Integer count)
    {
        final int held = null == count ? 0 : count;
        if (held >= maxPerAddress)
        {
            return count;
        }
        admitted = true;
        return held + 1;
    }

    /**
     * New limits (a reload; the acceptor's thread): addresses over the new maximum keep their connections and get
     * no more until they are under it.
     */
    void limits(final int maxPerAddress, final boolean limitLoopback)
    {
        this.maxPerAddress = maxPerAddress;
        this.limitLoopback = limitLoopback;
    }
}
