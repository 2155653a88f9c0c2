package io.ringmq.pipeline.subscription;

import io.ringmq.pipeline.SmallStack;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Topics and filters as deep as a 65,535-byte topic allows, matched on a thread with a small stack: the index
 * walks them iteratively, so nothing a client subscribes to or publishes on can overflow the routing stage's
 * stack.
 */
class DeepTopicTest
{
    /** The most levels of one non-empty character a 65,535-byte topic holds. */
    private static final int MAX_LEVELS = 32_768;

    private final SubscriptionIndex<String> index = new SubscriptionIndex<>();

    /**
     * @return {@code count} levels of {@code level} joined by '/'.
     */
    static String levels(final String level, final int count)
    {
        return String.join("/", Collections.nCopies(count, level));
    }

    /**
     * @return {@code count} levels alternating between "a" (even) and "+" (odd).
     */
    static String mixed(final int count)
    {
        final StringBuilder builder = new StringBuilder(count * 2);
        for (int i = 0; i < count; i++)
        {
            if (i > 0)
            {
                builder.append('/');
            }
            builder.append(i % 2 == 0 ? 'a' : '+');
        }
        return builder.toString();
    }

    private List<String> match(final String topic)
    {
        final List<String> matched = new ArrayList<>();
        final UnsafeBuffer buffer = SubscriptionIndex.bufferOf(topic);
        index.match(buffer, 0, buffer.capacity(), (subscriber, options) -> matched.add(subscriber));
        Collections.sort(matched);
        return matched;
    }

    @ParameterizedTest(name = "{0} levels")
    @ValueSource(ints = {MAX_LEVELS, 65_535 / 2})
    @DisplayName("MQTT-4.7.1-2, MQTT-4.7.1-3: exact, '+' and '#' filters on a topic of the deepest kind, no recursion")
    void deepTopicMatchesOnASmallStack(final int depth) throws Exception
    {
        final String topic = levels("a", depth);
        SmallStack.run(() ->
        {
            index.subscribe(topic, "exact", 0);
            index.subscribe(levels("+", depth), "all-plus", 0);
            index.subscribe(mixed(depth), "mixed", 0);
            index.subscribe(levels("a", depth / 2) + "/#", "half-hash", 0);
            index.subscribe(topic + "/#", "parent-hash", 0); // "a/#" matches "a" [MQTT-4.7.1-2]
            index.subscribe(levels("+", depth - 1) + "/#", "plus-hash", 0);
            index.subscribe("#", "hash", 0);
            index.subscribe("+/#", "root-plus-hash", 0);
            index.subscribe(topic + "/a", "too-deep", 0);
            index.subscribe(levels("+", depth - 1), "one-short", 0);
            index.subscribe(levels("+", depth + 1), "one-long", 0);
            index.subscribe(levels("a", depth - 1) + "/b", "last-differs", 0);

            assertThat(match(topic)).containsExactly(
                "all-plus", "exact", "half-hash", "hash", "mixed", "parent-hash", "plus-hash", "root-plus-hash");
            assertThat(match(levels("a", depth - 1))).containsExactly(
                "half-hash", "hash", "one-short", "plus-hash", "root-plus-hash");
        });
    }

    @Test
    @DisplayName("MQTT-4.7.1-3: 65,536 empty levels (65,535 slashes) matched by '+' in every level, no recursion")
    void emptyLevelsOnASmallStack() throws Exception
    {
        final int depth = 65_536;
        final String topic = levels("", depth);
        assertThat(topic).hasSize(65_535);
        SmallStack.run(() ->
        {
            index.subscribe(levels("+", depth), "all-plus", 0);
            index.subscribe(topic, "exact", 0);
            index.subscribe(topic + "/#", "parent-hash", 0);
            index.subscribe(levels("+", depth - 1), "one-short", 0);

            assertThat(match(topic)).containsExactly("all-plus", "exact", "parent-hash");
        });
    }

    @Test
    @DisplayName("MQTT-4.7.2-1: a deep topic starting with '$' is not matched by '+' or '#' in the first level")
    void deepDollarTopic() throws Exception
    {
        final String topic = "$SYS/" + levels("a", MAX_LEVELS - 1);
        SmallStack.run(() ->
        {
            index.subscribe("#", "hash", 0);
            index.subscribe(levels("+", MAX_LEVELS), "all-plus", 0);
            index.subscribe("$SYS/" + levels("+", MAX_LEVELS - 1), "dollar-plus", 0);
            index.subscribe("$SYS/#", "dollar-hash", 0);
            index.subscribe(topic, "exact", 0);

            assertThat(match(topic)).containsExactly("dollar-hash", "dollar-plus", "exact");
        });
    }

    @Test
    @DisplayName("a deep subscription is unsubscribed and pruned without recursion; the work stack shrinks back")
    void deepUnsubscribeAndStackShrinks() throws Exception
    {
        final String topic = levels("a", MAX_LEVELS);
        final String allPlus = levels("+", MAX_LEVELS);
        SmallStack.run(() ->
        {
            index.subscribe(topic, "exact", 0);
            index.subscribe(allPlus, "all-plus", 0);
            final int initialCapacity = index.stackCapacity();
            assertThat(match(topic)).containsExactly("all-plus", "exact");
            assertThat(index.stackCapacity()).isEqualTo(initialCapacity);

            assertThat(index.unsubscribe(topic, "exact")).isTrue();
            assertThat(index.unsubscribe(allPlus, "all-plus")).isTrue();
            assertThat(index.size()).isZero();
            assertThat(match(topic)).isEmpty();

            index.subscribe(levels("a", 3), "shallow", 0);
            assertThat(match("a/a/a")).containsExactly("shallow");
        });
    }

    @Test
    @DisplayName("a subscriber is reported once per matching filter; the caller folds")
    void reportedOncePerFilter()
    {
        index.subscribe("a/b", "s", 1);
        index.subscribe("a/+", "s", 2);
        index.subscribe("a/#", "s", 0);
        index.subscribe("#", "s", 1);
        final List<Integer> options = new ArrayList<>();
        final UnsafeBuffer topic = SubscriptionIndex.bufferOf("a/b");
        index.match(topic, 0, 3, (subscriber, o) -> options.add(o));
        Collections.sort(options);
        assertThat(options).containsExactly(0, 1, 1, 2);
    }

    @Test
    @DisplayName("a matcher that throws leaves the index usable; a matcher may match again inside a match")
    void throwingAndReentrantMatchers()
    {
        index.subscribe("a/+", "plus", 0);
        index.subscribe("a/b", "exact", 0);
        index.subscribe("a/#", "hash", 0);
        final UnsafeBuffer topic = SubscriptionIndex.bufferOf("a/b");
        try
        {
            index.match(topic, 0, 3, (subscriber, o) ->
            {
                throw new IllegalStateException("boom");
            });
        }
        catch (final IllegalStateException expected)
        {
            // the stage counts it; the index must still match correctly afterwards
        }
        assertThat(match("a/b")).containsExactly("exact", "hash", "plus");

        final List<String> outer = new ArrayList<>();
        final List<String> inner = new ArrayList<>();
        index.match(topic, 0, 3, (subscriber, o) ->
        {
            outer.add(subscriber);
            index.match(topic, 0, 3, (s, p) -> inner.add(s));
        });
        Collections.sort(outer);
        assertThat(outer).containsExactly("exact", "hash", "plus");
        assertThat(inner).hasSize(9);
    }

    @Test
    @DisplayName("matching allocates nothing in steady state")
    void matchAllocatesNothing()
    {
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        index.subscribe("sport/tennis/+", "a", 0);
        index.subscribe("sport/#", "b", 0);
        index.subscribe("+/+/player1", "c", 0);
        index.subscribe("sport/tennis/player1", "d", 0);
        final UnsafeBuffer topic = SubscriptionIndex.bufferOf("sport/tennis/player1");
        final int[] count = new int[1];
        final SubscriptionIndex.Matcher<String> matcher = (subscriber, options) -> count[0]++;
        for (int i = 0; i < 20_000; i++)
        {
            index.match(topic, 0, topic.capacity(), matcher);
        }
        final long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 100_000; i++)
        {
            index.match(topic, 0, topic.capacity(), matcher);
        }
        final long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertThat(count[0]).isEqualTo(120_000 * 4);
        // 100,000 matches: even one object per match would be over a megabyte; allow the probe's own noise
        assertThat(allocated).isLessThan(10_000);
    }
}
