package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --max-connections-per-address}, counted by {@link AddressLimit}: an IPv6 host by its /64, as the password
 * back-off counts it. {@link AddressLimit#tryAcquire} is called by the acceptor and, behind a PROXY-protocol listener, by every I/O agent
 * that reads a header: each call's answer must be its own. When the answer went through a shared field, one thread's
 * "refused" could be read by another that had been counted (a count never given back: its address refused for
 * good), or the other way round (an address past its limit).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AddressLimitConcurrencyTest
{
    private static final int THREADS = 8;
    private static final int ROUNDS = 200_000;
    private static final int MAX = 3;

    @Test
    void anIpv6HostCountsByItsSlash64() throws Exception
    {
        final AddressLimit limit = new AddressLimit(2, false);
        final InetAddress first = InetAddress.getByName("2001:db8:1:2::a");
        final InetAddress second = InetAddress.getByName("2001:db8:1:2:ffff:1:2:3");
        final InetAddress third = InetAddress.getByName("2001:db8:1:2::3:4");
        final InetAddress otherHost = InetAddress.getByName("2001:db8:1:3::a");
        assertThat(limit.tryAcquire(first)).isTrue();
        assertThat(limit.tryAcquire(second)).as("another address of the same /64").isTrue();
        assertThat(limit.tryAcquire(third)).as("a third address of that /64: past the limit of 2").isFalse();
        assertThat(limit.tryAcquire(otherHost)).as("another /64 has its own count").isTrue();
        assertThat(limit.count(third)).isEqualTo(2);
        limit.release(second); // given back by the address it was taken for
        assertThat(limit.tryAcquire(third)).isTrue();
        final InetAddress v4 = InetAddress.getByAddress(new byte[]{10, 0, 0, 1});
        final InetAddress v4Neighbour = InetAddress.getByAddress(new byte[]{10, 0, 0, 2});
        assertThat(limit.tryAcquire(v4)).isTrue();
        assertThat(limit.tryAcquire(v4)).isTrue();
        assertThat(limit.tryAcquire(v4Neighbour)).as("an IPv4 address counts alone").isTrue();
    }

    @Test
    void everyAnswerIsItsCallersOwnUnderContention() throws Exception
    {
        final AddressLimit limit = new AddressLimit(MAX, true);
        final InetAddress address = InetAddress.getByAddress(new byte[]{10, 0, 0, 1});
        final AtomicInteger held = new AtomicInteger();
        final AtomicInteger mostHeld = new AtomicInteger();
        final AtomicInteger admitted = new AtomicInteger();
        final CountDownLatch start = new CountDownLatch(1);
        final List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++)
        {
            final Thread thread = new Thread(() ->
            {
                try
                {
                    start.await();
                }
                catch (final InterruptedException ex)
                {
                    return;
                }
                for (int i = 0; i < ROUNDS; i++)
                {
                    if (limit.tryAcquire(address))
                    {
                        admitted.incrementAndGet();
                        mostHeld.accumulateAndGet(held.incrementAndGet(), Math::max);
                        held.decrementAndGet();
                        limit.release(address);
                    }
                }
            });
            thread.start();
            threads.add(thread);
        }
        start.countDown();
        for (final Thread thread : threads)
        {
            thread.join();
        }
        assertThat(admitted.get()).as("some were admitted").isPositive();
        assertThat(mostHeld.get()).as("never more than the limit at once").isLessThanOrEqualTo(MAX);
        assertThat(limit.count(address)).as("every admission given back: nothing counted").isZero();
        assertThat(limit.tryAcquire(address)).as("the address is admitted again").isTrue();
    }
}
