package io.ringmq.transport;

import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.YieldingIdleStrategy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.VarHandle;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.concurrent.locks.LockSupport;

/**
 * The idle strategies behind {@code --idle-strategy}. The default, {@code wake}, spins briefly and then sleeps
 * until woken: an I/O agent in {@code select} (woken by the socket or by {@link Selector#wakeup()}), a stage
 * thread in {@code park} (woken by {@link LockSupport#unpark}). It never busy-spins, so on a 2-core machine the
 * load generator keeps its core; {@code busy-spin} is for dedicated cores.
 */
final class IdleStrategies
{
    static final String WAKE = "wake";
    /**
     * Idle polls before sleeping. Each poll is a whole duty cycle with a {@code selectNow} system call (but the first
     * after a sleep's handover, in shared threading), so spinning pays only where a core is to spare or where work
     * comes back within a few polls. On <= 2 cores the polls are adaptive (docs/perf/2026-12-01-low-load-cpu.md,
     * docs/perf/2026-12-04-poll-window.md): the thread polls only while its idle spells end with work within
     * {@link #SPIN_WINDOW_NS}, and for at most that long. A poll costs about what a sleep and its wake-up save only
     * when work comes back within a few microseconds; with a 50 µs window, 10 QoS 1 publishers at 1,000 msg/s each
     * kept the thread polling 20 times a message, at 1.7 times Mosquitto's CPU.
     * {@code -Dringmq.idle.spins} sets a fixed count instead (no window).
     */
    private static final boolean FEW_CORES = Runtime.getRuntime().availableProcessors() <= 2;
    private static final int SPINS = Integer.getInteger("ringmq.idle.spins", FEW_CORES ? 20 : 100);
    private static final boolean ADAPTIVE = FEW_CORES && null == Integer.getInteger("ringmq.idle.spins");
    /**
     * Adaptive polls: an idle spell whose work came within this of its start keeps them on (work the polls caught:
     * when the cycle that handled it ends within this too), a longer spell turns them off, and no spell polls
     * longer than this. {@code -Dringmq.idle.spin-window-us} (default 5).
     */
    static final long SPIN_WINDOW_NS = TimeUnit.MICROSECONDS.toNanos(Long.getLong("ringmq.idle.spin-window-us", 5));
    static final long SLEEP_MS = 100;

    private IdleStrategies()
    {
    }

    /**
     * @param selector    the agent's selector to block in, or null for a parking thread.
     * @param pendingWork whether another thread left work, for the last look before sleeping.
     * @param onReady     the agent's handler for a key the sleeping {@code select} found ready (null with no
     *                    selector): the key is handled there and then, so a wake-up costs one {@code epoll_wait},
     *                    not a second {@code selectNow} in the next duty cycle.
     */
    static SleepingIdleStrategy wake(
        final Selector selector, final BooleanSupplier pendingWork, final Consumer<SelectionKey> onReady)
    {
        return new SleepingIdleStrategy(selector, pendingWork, onReady, SLEEP_MS);
    }

    /**
     * Tests: as {@link #wake(Selector, BooleanSupplier, Consumer)}, sleeping up to {@code maxSleepMs} (long enough,
     * only a wake ends a sleep).
     */
    static SleepingIdleStrategy wake(final Selector selector, final BooleanSupplier pendingWork,
        final Consumer<SelectionKey> onReady, final long maxSleepMs)
    {
        return new SleepingIdleStrategy(selector, pendingWork, onReady, maxSleepMs);
    }

    /**
     * @return a strategy that parks its thread when idle (a stage thread).
     */
    static SleepingIdleStrategy park(final BooleanSupplier pendingWork)
    {
        return new SleepingIdleStrategy(null, pendingWork, null, SLEEP_MS);
    }

    static IdleStrategy named(final String name)
    {
        switch (name)
        {
            case "busy-spin": return new BusySpinIdleStrategy();
            case "yield": return new YieldingIdleStrategy();
            case "backoff": return new BackoffIdleStrategy(100, 10, TimeUnit.MICROSECONDS.toNanos(1),
                TimeUnit.MILLISECONDS.toNanos(1));
            default: throw new IllegalArgumentException(
                "--idle-strategy must be wake, busy-spin, yield or backoff: " + name);
        }
    }

    /**
     * Spin, then sleep until {@link #wake()} or a timeout that bounds how late timers can run (shorter when the
     * owner says so: an I/O agent with paused connections, or a delivery shard with a backlog, sleeps only briefly,
     * in case the wake-up from the thread that frees the room is missed).
     * <p>
     * Sleeping and waking are a Dekker pair. The sleeper writes {@code sleeping = true}, then reads the pending
     * work; the producer publishes its work (e.g. {@code Sequence.set}, a release store), then reads
     * {@code sleeping}. Each side stores then loads, and a store followed by a load of another location may be
     * reordered (release/acquire does not forbid it; x86's store buffer does it), so without a full fence between
     * them both may read the old value: the sleeper misses the work, the producer misses the sleeper, and the
     * message waits for the timeout. Each side therefore issues {@link VarHandle#fullFence()} between its store
     * and its load.
     */
    static final class SleepingIdleStrategy implements IdleStrategy, Wakeable
    {
        private final Selector selector;
        private final BooleanSupplier pendingWork;
        private final Consumer<SelectionKey> onReady;
        private final long maxSleepMs;
        private volatile boolean sleeping;
        private volatile Thread thread;
        private LongSupplier sleepLimitMs;
        /** Whether the owner's thread left itself nothing to do when a duty cycle with work ends (null: not asked). */
        private BooleanSupplier settled;
        private int spins;
        /** Whether the polls caught work lately (adaptive): false, the thread sleeps at its first idle cycle. */
        private boolean spinPays = !ADAPTIVE;
        private long idleSinceNs;
        /** Whether the owner's last idle call was a poll (adaptive): work it finds next was caught by the polls. */
        private boolean polled;

        SleepingIdleStrategy(final Selector selector, final BooleanSupplier pendingWork,
            final Consumer<SelectionKey> onReady, final long maxSleepMs)
        {
            if (null != selector && null == onReady)
            {
                throw new IllegalArgumentException("a sleep in select needs the agent's handler for ready keys");
            }
            this.selector = selector;
            this.pendingWork = pendingWork;
            this.onReady = onReady;
            this.maxSleepMs = maxSleepMs;
        }

        /**
         * @param sleepLimitMs how long the owner may sleep now (at most the usual timeout is used).
         */
        void sleepLimit(final LongSupplier sleepLimitMs)
        {
            this.sleepLimitMs = sleepLimitMs;
        }

        /**
         * Lets the owner sleep right after a duty cycle that did work, when the polls do not pay (adaptive, few
         * cores) and {@code settled} says its own thread left itself nothing: the cycle that would follow finds only
         * what the last look before sleeping sees too (work other threads left, a ready key, for which the sleeping
         * {@code select} returns at once), so it is skipped, and with it a {@code selectNow} and a pass over every
         * queue and stage, cold in cache after the sleep. At low load most wake-ups carry one message: this halves
         * the duty cycles per wake-up.
         *
         * @param settled whether the owner's last cycle left nothing for its next one that the pending work does
         *                not show (its own thread's state: unflushed bytes, connections waiting to be retried).
         */
        void sleepAfterWork(final BooleanSupplier settled)
        {
            this.settled = settled;
        }

        public void idle(final int workCount)
        {
            if (workCount > 0)
            {
                if (polled)
                {
                    // the polls caught it: judged when the cycle that handled it ends, so they stay on only while
                    // the work comes, and is done, within the window (short, dense work: worth the polls' cost)
                    polled = false;
                    spinPays = System.nanoTime() - idleSinceNs < SPIN_WINDOW_NS;
                }
                spins = 0;
                if (!spinPays && null != settled && settled.getAsBoolean())
                {
                    idleSinceNs = System.nanoTime(); // the idle spell begins now, not one cycle later
                    // when the last look finds work, often this thread's own (an end a stage published, a tick,
                    // events past the batch limit), it returns without a sleep, and the polls stay as they were
                    sleep();
                }
                return;
            }
            idle();
        }

        public void idle()
        {
            if (ADAPTIVE && 0 == spins)
            {
                idleSinceNs = System.nanoTime(); // the idle spell begins
            }
            if (spins++ < SPINS && spinPays && (!ADAPTIVE || System.nanoTime() - idleSinceNs < SPIN_WINDOW_NS))
            {
                polled = ADAPTIVE;
                Thread.onSpinWait();
                return;
            }
            if (!sleep() && ADAPTIVE)
            {
                // work pending at the last look of an idle spell would have met the polls too
                spinPays = System.nanoTime() - idleSinceNs < SPIN_WINDOW_NS;
            }
        }

        /**
         * The last look, then the sleep; after a sleep (adaptive) {@link #spinPays} follows how long the spell
         * lasted.
         *
         * @return whether it slept (false: the last look found work pending, and the owner runs again at once).
         */
        private boolean sleep()
        {
            if (null == thread)
            {
                thread = Thread.currentThread();
            }
            polled = false;
            // announce the sleep, then look for work once more: a producer either sees `sleeping` and wakes us,
            // or published before this check and we see its work
            sleeping = true;
            VarHandle.fullFence(); // Dekker: the store to `sleeping` before the load of the pending work
            try
            {
                final long sleepMs = null == sleepLimitMs ? maxSleepMs :
                    Math.max(1, Math.min(maxSleepMs, sleepLimitMs.getAsLong()));
                if (pendingWork.getAsBoolean())
                {
                    spins = 0;
                    return false;
                }
                if (null != selector)
                {
                    // ready keys go straight to the agent's handler: a later selectNow finds only what came since
                    // (level-triggered: a connection read only in part is still ready there); in shared threading
                    // the duty cycle right after this one skips its selectNow (ReadyKeys.selectedInSleep)
                    if (selector.select(onReady, sleepMs) > 0)
                    {
                        spins = 0;
                    }
                }
                else
                {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(sleepMs));
                }
            }
            catch (final IOException ex)
            {
                throw new UncheckedIOException(ex);
            }
            finally
            {
                sleeping = false;
            }
            if (ADAPTIVE)
            {
                // work that came within the window would have met the polls
                spinPays = System.nanoTime() - idleSinceNs < SPIN_WINDOW_NS;
            }
            return true;
        }

        public void reset()
        {
            spins = 0;
        }

        /**
         * @return whether the owner polls before its next sleep (tests: the adaptive rule on <= 2 cores).
         */
        boolean polling()
        {
            return spinPays;
        }

        /**
         * @return whether the polls adapt to the load (<= 2 cores, no {@code -Dringmq.idle.spins}).
         */
        static boolean adaptive()
        {
            return ADAPTIVE;
        }

        /**
         * @return whether the owner sleeps now (tests: what they send then meets a sleeping agent).
         */
        boolean isSleeping()
        {
            return sleeping;
        }

        public void wake()
        {
            VarHandle.fullFence(); // Dekker: the caller's store of its work before the load of `sleeping`
            if (sleeping)
            {
                if (null != selector)
                {
                    selector.wakeup();
                }
                else
                {
                    final Thread t = thread;
                    if (null != t)
                    {
                        LockSupport.unpark(t);
                    }
                }
            }
        }

        public String alias()
        {
            return WAKE;
        }
    }
}
