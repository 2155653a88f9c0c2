package io.ringmq.pipeline;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RetainedDrains}: a slot reads as its own connection's only, and a connection that lost its slot stops.
 */
class RetainedDrainsTest
{
    private final RetainedDrains drains = new RetainedDrains();

    @Test
    @DisplayName("a slot reads what its connection wrote, and as unknown for any other connection or before a write")
    void aSlotReadsAsItsOwnConnectionsOnly()
    {
        final int slot = drains.take();
        assertThat(drains.owed(slot, 7)).as("nothing written yet").isEqualTo(-1);
        assertThat(drains.report(slot, 7, 123_456, false)).as("an unwritten slot is anyone's").isTrue();
        assertThat(drains.owed(slot, 7)).isEqualTo(123_456);
        assertThat(drains.owed(slot, 8)).isEqualTo(-1);
        assertThat(drains.owed(slot, 7 + (1L << 40))).as("the same sequence on another agent").isEqualTo(-1);
    }

    @Test
    @DisplayName("a connection that finds another's claim in its slot writes it no more; a claim always writes")
    void aConnectionThatLostItsSlotStops()
    {
        final int slot = drains.take();
        drains.report(slot, 1, 500, true);
        assertThat(drains.report(slot, 2, 0, true)).as("a part for another connection claims it").isTrue();
        assertThat(drains.report(slot, 1, 0, false)).as("the first connection lost it").isFalse();
        assertThat(drains.owed(slot, 2)).as("and wrote nothing over the claim").isZero();
        assertThat(drains.report(slot, 2, 99, false)).isTrue();
        assertThat(drains.owed(slot, 2)).isEqualTo(99);
    }

    @Test
    @DisplayName("what a slot holds is clamped to its 40 bits, never negative; slots outside the table are not valid")
    void valuesAreClamped()
    {
        final int slot = drains.take();
        drains.report(slot, 3, Long.MAX_VALUE, true);
        assertThat(drains.owed(slot, 3)).isEqualTo((1L << 40) - 1);
        drains.report(slot, 3, -5, true);
        assertThat(drains.owed(slot, 3)).isZero();
        assertThat(RetainedDrains.valid(RetainedDrains.NONE)).isFalse();
        assertThat(RetainedDrains.valid(RetainedDrains.SLOTS)).isFalse();
        assertThat(RetainedDrains.valid(RetainedDrains.SLOTS - 1)).isTrue();
    }

    @Test
    @DisplayName("1,024 slots, each taken once, given back to the end of the line")
    void slotsAreTakenAndGivenBack()
    {
        final java.util.Set<Integer> taken = new java.util.HashSet<>();
        for (int i = 0; i < RetainedDrains.SLOTS; i++)
        {
            taken.add(drains.take());
        }
        assertThat(taken).hasSize(RetainedDrains.SLOTS).allMatch(RetainedDrains::valid);
        assertThat(drains.take()).isEqualTo(RetainedDrains.NONE);
        drains.give(17);
        drains.give(RetainedDrains.NONE);
        assertThat(drains.take()).isEqualTo(17);
        assertThat(drains.take()).isEqualTo(RetainedDrains.NONE);
    }
}
