package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code wake} idle strategy on its own (a key the sleeping {@code select} finds is handed to the agent's
 * handler exactly once; a wake-up while asleep is not lost), and a real broker in each threading mode and idle
 * strategy.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IdleStrategiesTest
{
    @Test
    @DisplayName("a key the sleeping select finds ready is handed to the agent's handler once, not left for a " +
        "second select")
    void readyKeyHandledOnceFromTheSleep() throws Exception
    {
        try (Selector selector = Selector.open())
        {
            final Pipe pipe = Pipe.open();
            pipe.source().configureBlocking(false);
            pipe.source().register(selector, SelectionKey.OP_READ);
            final AtomicInteger handled = new AtomicInteger();
            final ByteBuffer drain = ByteBuffer.allocate(16);
            final IdleStrategies.SleepingIdleStrategy idle = IdleStrategies.wake(selector, () -> false, key ->
            {
                try
                {
                    drain.clear();
                    ((Pipe.SourceChannel)key.channel()).read(drain); // the agent reads what made the key ready
                }
                catch (final java.io.IOException ex)
                {
                    throw new java.io.UncheckedIOException(ex);
                }
                handled.incrementAndGet();
            });
            final AtomicBoolean running = new AtomicBoolean(true);
            final AtomicInteger sleptAfter = new AtomicInteger();
            final Thread owner = new Thread(() ->
            {
                while (running.get())
                {
                    idle.idle(0);
                    if (handled.get() > 0)
                    {
                        sleptAfter.incrementAndGet(); // idle passes (spins and sleeps) after the key was handled
                    }
                }
            }, "idle-owner");
            owner.start();
            try
            {
                TestBrokers.await("the owner asleep", idle::isSleeping);
                pipe.sink().write(ByteBuffer.wrap(new byte[]{1}));
                TestBrokers.await("the key handled", () -> handled.get() > 0);
                TestBrokers.await("the owner asleep again", () -> sleptAfter.get() > 0 && idle.isSleeping());
                assertThat(handled.get()).as("handled once, in the sleep").isEqualTo(1);
            }
            finally
            {
                running.set(false);
                idle.wake();
                owner.join(5_000);
                pipe.sink().close();
                pipe.source().close();
            }
            assertThat(selector.selectNow(key -> handled.incrementAndGet())).as("nothing left for the agent")
                .isZero();
            assertThat(handled.get()).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("a wake-up from another thread reaches a sleeper in select and a parked one, round after round")
    void wakeWhileAsleepIsNeverLost() throws Exception
    {
        try (Selector selector = Selector.open())
        {
            final AtomicBoolean work = new AtomicBoolean();
            assertWakes(IdleStrategies.wake(selector, work::get, key -> { }), work);
            assertWakes(IdleStrategies.park(work::get), work);
        }
    }

    private static void assertWakes(final IdleStrategies.SleepingIdleStrategy idle, final AtomicBoolean work)
        throws Exception
    {
        final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicInteger taken = new AtomicInteger();
        final Thread owner = new Thread(() ->
        {
            while (running.get())
            {
                final boolean took = work.getAndSet(false);
                if (took)
                {
                    taken.incrementAndGet();
                }
                idle.idle(took ? 1 : 0);
            }
        }, "idle-owner");
        owner.start();
        final int rounds = 20;
        long elapsedNs = 0;
        try
        {
            for (int round = 0; round < rounds; round++)
            {
                TestBrokers.await("the owner asleep", idle::isSleeping);
                final long startNs = System.nanoTime();
                work.set(true); // the producer publishes its work, then wakes
                idle.wake();
                final int expected = round + 1;
                TestBrokers.await("the work taken", () -> taken.get() == expected);
                elapsedNs += System.nanoTime() - startNs;
            }
        }
        finally
        {
            running.set(false);
            idle.wake();
            owner.join(5_000);
        }
        // a lost wake-up costs a whole sleep (100 ms): were it lost in every round, they would take 2 s
        assertThat(TimeUnit.NANOSECONDS.toMillis(elapsedNs)).isLessThan(rounds * IdleStrategies.SLEEP_MS / 2);
    }

    @Test
    @DisplayName("adaptive polls (<= 2 cores): a spell that ends in a sleep turns them off, work found at once " +
        "turns them on")
    void pollsFollowTheLastIdleSpell() throws Exception
    {
        assumeAdaptivePolls();
        final AtomicBoolean work = new AtomicBoolean();
        final IdleStrategies.SleepingIdleStrategy idle = IdleStrategies.park(work::get);
        idle.sleepLimit(() -> 1);
        assertThat(idle.polling()).as("no polls before any work").isFalse();
        work.set(true); // pending at the last look: the spell ends at once, within the window
        for (int attempt = 0; attempt < 100 && !idle.polling(); attempt++)
        {
            idle.idle(0);
        }
        assertThat(idle.polling()).as("work found at once turns the polls on").isTrue();
        work.set(false);
        final long startNs = System.nanoTime();
        while (System.nanoTime() - startNs < TimeUnit.MILLISECONDS.toNanos(500) && idle.polling())
        {
            idle.idle(0); // polls, then parks for 1 ms
        }
        assertThat(idle.polling()).as("a spell that ends in a sleep turns them off").isFalse();
    }

    @Test
    @DisplayName("adaptive polls (<= 2 cores): work the polls catch only after the window turns them off, work " +
        "they catch at once keeps them on")
    void pollsThatCatchWorkLateStop()
    {
        assumeAdaptivePolls();
        final AtomicBoolean work = new AtomicBoolean();
        final IdleStrategies.SleepingIdleStrategy idle = IdleStrategies.park(work::get);
        idle.sleepLimit(() -> 1);
        boolean keptOn = false;
        for (int attempt = 0; attempt < 100 && !keptOn; attempt++)
        {
            pollsOn(idle, work);
            idle.idle(0); // one poll of a new spell
            idle.idle(1); // and the work it caught, within the window unless this thread was descheduled between
            keptOn = idle.polling();
        }
        assertThat(keptOn).as("work caught at once keeps the polls on").isTrue();
        pollsOn(idle, work);
        idle.idle(0);
        final long pollNs = System.nanoTime();
        while (System.nanoTime() - pollNs < 2 * IdleStrategies.SPIN_WINDOW_NS)
        {
            Thread.onSpinWait(); // the rest of the polls' time, and past the window
        }
        idle.idle(1); // the work they caught, late: a sleep and its wake-up would have cost less
        assertThat(idle.polling()).as("work caught after the window turns the polls off").isFalse();
    }

    @Test
    @DisplayName("adaptive polls (<= 2 cores): no idle spell polls past the window; it sleeps, and the polls go off")
    void pollsStopAtTheWindow()
    {
        assumeAdaptivePolls();
        final AtomicBoolean work = new AtomicBoolean();
        final IdleStrategies.SleepingIdleStrategy idle = IdleStrategies.park(work::get);
        idle.sleepLimit(() -> 1);
        pollsOn(idle, work);
        idle.idle(0); // the spell's first poll
        final long pollNs = System.nanoTime();
        while (System.nanoTime() - pollNs < 2 * IdleStrategies.SPIN_WINDOW_NS)
        {
            Thread.onSpinWait();
        }
        idle.idle(0); // past the window: not another poll (one of 20 were it counted only) but the sleep (1 ms)
        assertThat(idle.polling()).as("a spell that outlasted the window in its polls turns them off").isFalse();
    }

    /**
     * Turns the adaptive polls on: idle spells whose last look finds work at once.
     */
    private static void pollsOn(final IdleStrategies.SleepingIdleStrategy idle, final AtomicBoolean work)
    {
        work.set(true);
        for (int attempt = 0; attempt < 100 && !idle.polling(); attempt++)
        {
            idle.idle(0);
        }
        work.set(false);
        assertThat(idle.polling()).as("work found at once turns the polls on").isTrue();
    }

    @Test
    @DisplayName("adaptive polls off: a cycle with work is followed by the sleep, not by another cycle, when the " +
        "owner says it left itself nothing, and a wake-up ends that sleep")
    void settledOwnerSleepsRightAfterWork() throws Exception
    {
        assumeAdaptivePolls();
        final AtomicBoolean work = new AtomicBoolean();
        // parks for up to a minute: only the wake below ends the sleep, however slow the machine
        final IdleStrategies.SleepingIdleStrategy idle =
            new IdleStrategies.SleepingIdleStrategy(null, work::get, null, 60_000);
        idle.sleepAfterWork(() -> true);
        assertThat(idle.polling()).as("no polls before any work").isFalse();
        final AtomicInteger returned = new AtomicInteger();
        final Thread owner = new Thread(() ->
        {
            idle.idle(1); // a cycle that did work
            returned.incrementAndGet();
        }, "idle-owner");
        owner.start();
        try
        {
            TestBrokers.await("asleep right after the working cycle", idle::isSleeping);
            assertThat(returned.get()).as("still in the idle call that followed work").isZero();
            work.set(true); // the producer publishes its work, then wakes
            idle.wake();
            TestBrokers.await("woken", () -> returned.get() == 1);
        }
        finally
        {
            idle.wake();
            owner.join(5_000);
        }
    }

    @Test
    @DisplayName("a cycle with work is followed by another cycle when the owner left itself work, when work is " +
        "pending, or while the adaptive polls are on")
    void unsettledOwnerRunsAnotherCycle() throws Exception
    {
        assumeAdaptivePolls();
        try (Selector selector = Selector.open())
        {
            final AtomicBoolean settled = new AtomicBoolean(false);
            final AtomicBoolean work = new AtomicBoolean();
            // a sleep would last a minute: each idle(1) below returns at once, or the test times out
            final IdleStrategies.SleepingIdleStrategy idle =
                IdleStrategies.wake(selector, work::get, key -> { }, 60_000);
            idle.sleepAfterWork(settled::get);
            idle.idle(1);
            assertThat(idle.isSleeping()).as("unsettled: back to the agent").isFalse();
            settled.set(true);
            work.set(true); // pending at the last look (often the thread's own work): no sleep
            idle.idle(1);
            assertThat(idle.isSleeping()).isFalse();
            assertThat(idle.polling()).as("no spell measured after work: the polls stay off").isFalse();
            for (int attempt = 0; attempt < 100 && !idle.polling(); attempt++)
            {
                idle.idle(0); // an idle spell whose last look finds work is short, unless this thread was
                              // descheduled in it: then again
            }
            assertThat(idle.polling()).as("work found at once in an idle spell turns the polls on").isTrue();
            work.set(false);
            for (int i = 0; i < 100; i++)
            {
                idle.idle(1); // polls on: no sleep after work, however settled
            }
            assertThat(idle.polling()).isTrue();
        }
    }

    private static void assumeAdaptivePolls()
    {
        org.junit.jupiter.api.Assumptions.assumeTrue(IdleStrategies.SleepingIdleStrategy.adaptive(),
            "the polls adapt only on <= 2 cores without -Dringmq.idle.spins");
    }

    @ParameterizedTest(name = "{0} threading, {1}")
    @CsvSource({
        "SHARED, wake", "SHARED, busy-spin", "SHARED, yield", "SHARED, backoff",
        "SHARED_NETWORK, wake", "SHARED_NETWORK, backoff", "DEDICATED, wake", "DEDICATED, backoff"})
    @DisplayName("every threading mode with every idle strategy delivers a PUBLISH and its PUBACK")
    void everyModeAndStrategyDelivers(final BrokerContext.Threading threading, final String idleStrategy)
        throws Exception
    {
        try (Broker broker = Broker.launch(TestBrokers.v5Context().threads(t -> t.threading(threading)
            .idleStrategy(idleStrategy)
            .ioThreads(2)));
            RawClient subscriber = new RawClient(broker.port());
            RawClient publisher = new RawClient(broker.port()))
        {
            assertThat(subscriber.handshake(RawClient.connect("idle-sub", true, 0))).isZero();
            subscriber.send(RawClient.subscribe(1, "idle/#", 1));
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(publisher.handshake(RawClient.connect("idle-pub", true, 0))).isZero();
            for (int i = 1; i <= 3; i++)
            {
                TestBrokers.await("the broker idle", broker::ioAgentsAsleep);
                publisher.send(RawClient.publish("idle/" + i, new byte[]{(byte)i}, 1, i));
                assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
                assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
                assertThat(subscriber.decoder().publish().topic().asString()).isEqualTo("idle/" + i);
            }
        }
    }
}
