package io.ringmq.transport;

import io.ringmq.pipeline.auth.AddressKeys;

import java.net.InetAddress;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;

/**
 * {@code --max-connections-per-address}: how many connections each remote address holds, across every I/O agent.
 * The {@link Acceptor} adds at accept, an I/O agent when a PROXY header names the client (any agent's thread); a
 * close on any agent takes one away. Each change is atomic on that address's entry (a compare-and-set loop to add,
 * {@link ConcurrentHashMap#computeIfPresent} to take away), and an entry goes when its count reaches zero, so the
 * map holds only addresses with connections. Addresses count by {@link AddressKeys} (an IPv6 address by its /64, as
 * the password back-off counts): a host that takes a new address of its /64 for each connection still gets only its
 * share. Loopback addresses are exempt unless {@code --limit-loopback}:
 * local benchmarks and sidecars dial from loopback.
 */
final class AddressLimit
{
    private final ConcurrentHashMap<Long, Integer> counts = new ConcurrentHashMap<>();
    /** A reload changes them on the acceptor's thread; read by any agent's. */
    private volatile int maxPerAddress;
    private volatile boolean limitLoopback;
    private final BiFunction<Long, Integer, Integer> releaseOne = (address, count) -> count <= 1 ? null : count - 1;

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
     * Counts one more connection from {@code address} if it is under the limit; any thread (the acceptor's, or an
     * agent's that read a PROXY header), each call's answer its own.
     *
     * @return false when the address already holds the maximum (nothing counted).
     */
    boolean tryAcquire(final InetAddress client)
    {
        final Long address = AddressKeys.of(client);
        final int max = maxPerAddress;
        while (true)
        {
            final Integer count = counts.get(address);
            if (null == count)
            {
                if (max <= 0)
                {
                    return false;
                }
                if (null == counts.putIfAbsent(address, 1))
                {
                    return true;
                }
            }
            else if (count >= max)
            {
                return false;
            }
            else if (counts.replace(address, count, count + 1))
            {
                return true;
            }
        }
    }

    /**
     * A connection from {@code address} ended; any thread.
     */
    void release(final InetAddress address)
    {
        counts.computeIfPresent(AddressKeys.of(address), releaseOne);
    }

    /**
     * @return the connections counted for {@code address} (for tests and status).
     */
    int count(final InetAddress address)
    {
        final Integer count = counts.get(AddressKeys.of(address));
        return null == count ? 0 : count;
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
