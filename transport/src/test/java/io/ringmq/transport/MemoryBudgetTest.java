package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --memory-budget}: over when the estimate passes the budget, and also while the live heap is past its share,
 * which the estimate cannot see when direct memory is the larger part of the budget.
 */
class MemoryBudgetTest
{
    @Test
    @DisplayName("the budget is over while the old generation is past three quarters after a collection, whatever the "
        + "estimate; sampled at most every 100 ms")
    void heapPressure()
    {
        final AtomicBoolean pressure = new AtomicBoolean();
        final java.util.concurrent.atomic.AtomicInteger collections = new java.util.concurrent.atomic.AtomicInteger();
        final MemoryBudget budget = new MemoryBudget(Long.MAX_VALUE, pressure::get, collections::incrementAndGet);
        budget.sample(0);
        assertThat(budget.isOver()).isFalse();
        pressure.set(true);
        budget.sample(MemoryBudget.SAMPLE_INTERVAL_MS - 1);
        assertThat(budget.isOver()).as("not sampled again yet").isFalse();
        budget.sample(MemoryBudget.SAMPLE_INTERVAL_MS);
        assertThat(budget.isOver()).isTrue();
        assertThat(collections.get()).as("a collection asked for, to read it fresh").isLessThanOrEqualTo(1);
        pressure.set(false);
        budget.sample(2 * MemoryBudget.SAMPLE_INTERVAL_MS);
        assertThat(budget.isOver()).as("back under once a collection freed it").isFalse();
    }

    @Test
    @DisplayName("a reading past the share that no collection refreshes (a quiet broker whose clients left) is "
        + "refreshed by a collection asked for at most every 5 s")
    void staleReadingRefreshed()
    {
        final AtomicBoolean pressure = new AtomicBoolean(true);
        final long start = 1_000_000_000L; // far from any other test's clock in this JVM
        final MemoryBudget budget = new MemoryBudget(Long.MAX_VALUE, pressure::get, () -> pressure.set(false));
        long now = start;
        boolean over = true;
        while (over && now < start + 2 * MemoryBudget.COLLECT_INTERVAL_MS)
        {
            budget.sample(now);
            over = budget.isOver();
            now += MemoryBudget.SAMPLE_INTERVAL_MS;
        }
        assertThat(over).as("under once the collection asked for found the heap free").isFalse();
        assertThat(now - start).isLessThanOrEqualTo(MemoryBudget.COLLECT_INTERVAL_MS + MemoryBudget.SAMPLE_INTERVAL_MS);
    }

    @Test
    @DisplayName("with the heap far from full the reading says no, without looking at a management bean; this "
        + "JVM's collector has an old generation to look at (Serial, Parallel and G1 name it Tenured or Old)")
    void quietHeap()
    {
        assertThat(MemoryBudget.heapPressure().getAsBoolean()).isFalse();
        assertThat(java.lang.management.ManagementFactory.getMemoryPoolMXBeans())
            .anyMatch(pool -> (pool.getName().contains("Old") || pool.getName().contains("Tenured")) &&
                pool.isCollectionUsageThresholdSupported());
    }
}
