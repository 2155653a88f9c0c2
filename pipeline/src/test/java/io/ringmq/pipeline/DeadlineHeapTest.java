package io.ringmq.pipeline;

import io.ringmq.pipeline.session.RoutingSession;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The session timers' heap against a model (a sorted map by deadline, then by the order set), and its memory when
 * many timers share a deadline: what Agrona's timer wheel, used before, could not hold.
 */
class DeadlineHeapTest
{
    @Test
    @DisplayName("random schedules, cancels and polls fire exactly what a sorted model fires, in its order, and each timer "
        + "reads back its deadline until it fires or is cancelled (40 seeds)")
    void matchesASortedModel()
    {
        for (long seed = 1; seed <= 40; seed++)
        {
            final SplittableRandom random = new SplittableRandom(seed);
            final DeadlineHeap heap = new DeadlineHeap();
            final TreeMap<long[], Long> model = new TreeMap<>((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) :
                Long.compare(a[1], b[1]));
            final List<long[]> live = new ArrayList<>();
            long nowMs = 1_000;
            for (int op = 0; op < 5_000; op++)
            {
                final int kind = random.nextInt(10);
                if (kind < 5)
                {
                    // deadlines bunched on few values, in the past too: ties and overdue timers are the hard part
                    final long deadline = nowMs + random.nextInt(-50, 400) / 50 * 50;
                    final long id = heap.schedule(deadline);
                    final long[] key = {deadline, id};
                    model.put(key, id);
                    live.add(key);
                }
                else if (kind < 8 && !live.isEmpty())
                {
                    final long[] key = live.remove(random.nextInt(live.size()));
                    final boolean set = null != model.remove(key);
                    assertThat(heap.deadlineOf(key[1])).as("seed " + seed + " deadline of " + key[1])
                        .isEqualTo(set ? key[0] : Long.MAX_VALUE); // none once fired
                    assertThat(heap.cancel(key[1])).as("seed " + seed + " cancel " + key[1]).isEqualTo(set);
                    assertThat(heap.deadlineOf(key[1])).isEqualTo(Long.MAX_VALUE);
                }
                else
                {
                    nowMs += random.nextInt(120);
                    final int limit = 1 + random.nextInt(8);
                    final List<Long> fired = new ArrayList<>();
                    heap.poll(nowMs, fired::add, limit);
                    final List<Long> expected = new ArrayList<>();
                    while (expected.size() < limit && !model.isEmpty() && model.firstKey()[0] <= nowMs)
                    {
                        expected.add(model.pollFirstEntry().getValue());
                    }
                    assertThat(fired).as("seed " + seed + " at " + nowMs).isEqualTo(expected);
                    live.removeIf(key -> !model.containsKey(key));
                }
                assertThat(heap.size()).as("seed " + seed).isEqualTo(model.size());
                assertThat(heap.earliestDeadline()).isEqualTo(model.isEmpty() ? Long.MAX_VALUE : model.firstKey()[0]);
            }
            assertThat(heap.cancel(Long.MAX_VALUE)).as("an id never given").isFalse();
        }
    }

    @Test
    @DisplayName("a handler may set and cancel timers; a timer set due now by a handler fires in the same poll, "
        + "within the limit")
    void handlersMaySetTimers()
    {
        final DeadlineHeap heap = new DeadlineHeap();
        final long first = heap.schedule(10);
        final long cancelled = heap.schedule(10);
        final List<Long> fired = new ArrayList<>();
        final long[] added = new long[1];
        assertThat(heap.poll(10, id ->
        {
            fired.add(id);
            if (id == first)
            {
                heap.cancel(cancelled);
                added[0] = heap.schedule(5);
            }
        }, 10)).isEqualTo(2);
        assertThat(fired).containsExactly(first, added[0]);
        assertThat(heap.size()).isZero();
        final long later = heap.schedule(20);
        assertThat(heap.cancel(first)).as("fired already: nothing to cancel, nothing else cancelled").isFalse();
        assertThat(heap.cancel(cancelled)).as("cancelled already").isFalse();
        assertThat(heap.size()).isEqualTo(1);
        assertThat(heap.earliestDeadline()).isEqualTo(20);
        assertThat(heap.cancel(later)).isTrue();
    }

    @Test
    @DisplayName("50,000 sessions dropped in the same second: their timers take a few MB (the timer wheel made "
        + "arrays of 200 MB), and they expire 1,024 a poll")
    void manySessionsDroppedAtOnce()
    {
        final List<RoutingSession> expired = new ArrayList<>();
        final SessionExpiry expiry = new SessionExpiry(expired::add, session -> { });
        final io.ringmq.pipeline.session.SessionRegistry registry = new io.ringmq.pipeline.session.SessionRegistry();
        final List<RoutingSession> sessions = new ArrayList<>();
        for (int i = 0; i < 50_000; i++)
        {
            sessions.add(registry.create("c" + i, 60, 0));
        }
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        final long before = threads.getCurrentThreadAllocatedBytes();
        for (final RoutingSession session : sessions)
        {
            expiry.schedule(session, 1_000_000); // all in the same millisecond
        }
        final long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertThat(allocated).as("bytes allocated for 50,000 timers").isLessThan(16L << 20);
        assertThat(expiry.poll(1_000_000 + 59_999)).isZero();
        assertThat(expiry.poll(1_000_000 + 60_000)).isEqualTo(1_024);
        int polls = 1;
        while (expiry.hasTimers())
        {
            expiry.poll(1_000_000 + 60_000);
            polls++;
        }
        assertThat(expired).hasSize(50_000);
        assertThat(polls).isEqualTo(49);
    }
}
