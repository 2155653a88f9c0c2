package io.ringmq.pipeline.delivery;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Found by a reviewer (the test failed before the fix): a connection's outbound aliases allocate a slot array of its Topic Alias Maximum (up to 1,024) + 1 on their
 * first topic, which the shard's budget never counts: a topic costs its length + 48, so 400 subscribers that each
 * got one one-byte topic hold ~1.6 MB of slot arrays while the budget counts under 20 KB.
 */
class OutboundAliasSlotsReviewTest
{
    @Test
    @DisplayName("what the shard's outbound alias tables hold stays within its budget, slot arrays included")
    void slotArraysCounted() throws Exception
    {
        final long budgetBytes = 256 * 1024;
        final OutboundAliasBudget budget = new OutboundAliasBudget(budgetBytes);
        final java.lang.reflect.Field topics = OutboundTopicAliases.class.getDeclaredField("topics");
        topics.setAccessible(true);
        final UnsafeBuffer topic = new UnsafeBuffer("t".getBytes(StandardCharsets.UTF_8));
        long held = 0;
        int aliased = 0;
        for (int c = 0; c < 400; c++)
        {
            final OutboundTopicAliases aliases = new OutboundTopicAliases(budget);
            aliases.reset(65_535); // what a 5.0 subscriber may allow: 1,024 kept here
            if (aliases.aliasFor(topic, 0, 1) < 0)
            {
                aliased++;
                held += 4L * ((Object[])topics.get(aliases)).length; // at least 4 bytes a reference
            }
        }
        System.out.println("aliased=" + aliased + " counted=" + budget.heldBytes() + " slot arrays held=" + held +
            " budget=" + budgetBytes);
        assertThat(held).as("slot arrays of the connections the budget let alias, within the budget")
            .isLessThanOrEqualTo(budgetBytes);
    }
}
