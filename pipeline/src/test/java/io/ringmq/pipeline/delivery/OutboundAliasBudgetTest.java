package io.ringmq.pipeline.delivery;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The topics outbound topic aliases keep: bounded per connection and, with the shard's other connections, by its
 * {@link OutboundAliasBudget}; past either a topic goes in full; what a connection kept is given back when it ends.
 */
class OutboundAliasBudgetTest
{
    private static UnsafeBuffer topic(final String prefix, final int i, final int length)
    {
        final String text = (prefix + i + "/").repeat(length).substring(0, length);
        return new UnsafeBuffer(text.getBytes(StandardCharsets.UTF_8));
    }

    private static int assigned(final OutboundTopicAliases aliases, final String prefix, final int count,
        final int length)
    {
        int assigned = 0;
        for (int i = 0; i < count; i++)
        {
            final UnsafeBuffer topic = topic(prefix, i, length);
            assigned += aliases.aliasFor(topic, 0, length) < 0 ? 1 : 0;
        }
        return assigned;
    }

    @Test
    @DisplayName("MQTT-3.3.2-7: one connection keeps at most 64 KiB of topics, whatever its Topic Alias Maximum; "
        + "later topics go in full")
    void perConnection()
    {
        final OutboundAliasBudget budget = new OutboundAliasBudget(Long.MAX_VALUE);
        final OutboundTopicAliases aliases = new OutboundTopicAliases(budget);
        aliases.reset(65_535);
        final int length = 10_000 - OutboundTopicAliases.TOPIC_ALLOWANCE;
        assertThat(assigned(aliases, "t", 20, length)).isEqualTo(6);
        assertThat(budget.heldBytes()).as("six topics and the table's first 16 slots")
            .isEqualTo(60_000 + 16 * OutboundTopicAliases.SLOT_LENGTH);
        final UnsafeBuffer first = topic("t", 0, length);
        assertThat(aliases.aliasFor(first, 0, length)).as("a kept topic keeps its alias").isEqualTo(1);
        aliases.release();
        assertThat(budget.heldBytes()).isZero();
    }

    @Test
    @DisplayName("MQTT-3.3.2-7: the shard's connections together keep at most its budget; a connection's end gives "
        + "its share back, and a taken-back alias (its packet was not sent) too")
    void perShard()
    {
        final OutboundAliasBudget budget = new OutboundAliasBudget(100_000);
        final OutboundTopicAliases[] connections = new OutboundTopicAliases[4];
        int assigned = 0;
        for (int c = 0; c < connections.length; c++)
        {
            connections[c] = new OutboundTopicAliases(budget);
            connections[c].reset(1_024);
            assigned += assigned(connections[c], "c" + c + "/", 10, 952); // 1,000 bytes each with the allowance
        }
        assertThat(assigned).isEqualTo(40);
        assertThat(budget.heldBytes()).isEqualTo(40_000 + 4 * 16 * OutboundTopicAliases.SLOT_LENGTH);
        final OutboundTopicAliases big = new OutboundTopicAliases(budget);
        big.reset(1_024);
        assertThat(assigned(big, "big", 100, 952)).as("up to the budget, its table's growth counted").isEqualTo(58);
        assertThat(budget.heldBytes()).isLessThanOrEqualTo(100_000).isGreaterThan(99_000);
        connections[0].release();
        final OutboundTopicAliases next = new OutboundTopicAliases(budget);
        next.reset(1_024);
        assertThat(assigned(next, "more", 20, 952)).as("a connection's end gives room back").isEqualTo(10);
        next.release();
        final UnsafeBuffer topic = topic("undo", 0, 952);
        big.release();
        big.reset(10);
        assertThat(big.aliasFor(topic, 0, 952)).isNegative();
        final long held = budget.heldBytes();
        big.undoLast();
        assertThat(budget.heldBytes()).isEqualTo(held - 1_000);
        for (final OutboundTopicAliases connection : connections)
        {
            connection.release();
        }
        big.release();
        assertThat(budget.heldBytes()).isZero();
    }
}
