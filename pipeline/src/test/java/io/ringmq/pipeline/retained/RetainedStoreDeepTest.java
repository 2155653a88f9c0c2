package io.ringmq.pipeline.retained;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SmallStack;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The retained store on topics and filters as deep as a 65,535-byte topic allows, on a thread with a small stack,
 * and a seeded randomized comparison against a naive matcher over a map.
 */
class RetainedStoreDeepTest
{
    private static final int MAX_LEVELS = 32_768;

    private final RetainedStore store = new RetainedStore();

    private static String levels(final String level, final int count)
    {
        return String.join("/", Collections.nCopies(count, level));
    }

    private static String mixed(final int count)
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

    private static int put(final RetainedStore target, final String topic, final String payload)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        return target.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 1);
    }

    /**
     * @return the payloads of the matching messages, sorted (payloads name the topics in these tests, which keeps
     * assertion messages short for topics of 65,535 bytes).
     */
    private static List<String> match(final RetainedStore target, final String filter)
    {
        final List<String> found = new ArrayList<>();
        target.match(filter, (Message m) -> found.add(new String(m.payload(), StandardCharsets.UTF_8)));
        Collections.sort(found);
        return found;
    }

    @ParameterizedTest(name = "{0} levels")
    @ValueSource(ints = {MAX_LEVELS, 65_535 / 2})
    @DisplayName("MQTT-4.7.1-2, MQTT-4.7.1-3: a deep retained topic is stored, matched and cleared, no recursion")
    void deepTopicOnASmallStack(final int depth) throws Exception
    {
        final String topic = levels("a", depth);
        SmallStack.run(() ->
        {
            final int initialCapacity = store.stackCapacity();
            assertThat(put(store, topic, "deep")).isEqualTo(RetainedStore.STORED);
            assertThat(put(store, levels("a", depth - 1) + "/b", "sibling")).isEqualTo(RetainedStore.STORED);
            assertThat(put(store, "a", "shallow")).isEqualTo(RetainedStore.STORED);
            assertThat(put(store, topic, "deep")).isEqualTo(RetainedStore.REPLACED);
            assertThat(store.size()).isEqualTo(3);

            assertThat(match(store, topic)).containsExactly("deep");
            assertThat(match(store, levels("+", depth))).containsExactly("deep", "sibling");
            // the alternating filter ends in '+' on an even depth, in "a" on an odd one, where "sibling" ends in "b"
            if (depth % 2 == 0)
            {
                assertThat(match(store, mixed(depth))).containsExactly("deep", "sibling");
            }
            else
            {
                assertThat(match(store, mixed(depth))).containsExactly("deep");
            }
            assertThat(match(store, levels("a", depth / 2) + "/#")).containsExactly("deep", "sibling");
            assertThat(match(store, topic + "/#")).containsExactly("deep"); // "a/#" matches "a" [MQTT-4.7.1-2]
            assertThat(match(store, "#")).containsExactly("deep", "shallow", "sibling");
            assertThat(match(store, "+/#")).containsExactly("deep", "shallow", "sibling");
            assertThat(match(store, "a/#")).containsExactly("deep", "shallow", "sibling");
            assertThat(match(store, topic + "/a")).isEmpty();
            assertThat(match(store, levels("+", depth - 1))).isEmpty();
            assertThat(match(store, levels("+", depth + 1))).isEmpty();
            assertThat(store.stackCapacity()).isEqualTo(initialCapacity);

            assertThat(put(store, topic, "")).isEqualTo(RetainedStore.CLEARED);
            assertThat(put(store, levels("a", depth - 1) + "/b", "")).isEqualTo(RetainedStore.CLEARED);
            assertThat(store.size()).isEqualTo(1);
            assertThat(store.bytes()).isEqualTo("a".length() + "shallow".length());
            assertThat(match(store, "#")).containsExactly("shallow");
            assertThat(match(store, levels("+", depth))).isEmpty();
        });
    }

    @Test
    @DisplayName("MQTT-4.7.1-3: 65,536 empty levels (65,535 slashes) stored and matched by '+' and '#', no recursion")
    void emptyLevelsOnASmallStack() throws Exception
    {
        final int depth = 65_536;
        final String topic = levels("", depth);
        SmallStack.run(() ->
        {
            assertThat(put(store, topic, "empty-levels")).isEqualTo(RetainedStore.STORED);
            assertThat(match(store, levels("+", depth))).containsExactly("empty-levels");
            assertThat(match(store, "#")).containsExactly("empty-levels");
            assertThat(match(store, topic + "/#")).containsExactly("empty-levels");
            assertThat(match(store, levels("+", depth - 1))).isEmpty();
            assertThat(put(store, topic, "")).isEqualTo(RetainedStore.CLEARED);
            assertThat(store.size()).isZero();
            assertThat(match(store, "#")).isEmpty();
        });
    }

    @Test
    @DisplayName("MQTT-4.7.2-1: a deep topic starting with '$' is not matched by '+' or '#' in the first level")
    void deepDollarTopic() throws Exception
    {
        final String topic = "$SYS/" + levels("a", MAX_LEVELS - 1);
        SmallStack.run(() ->
        {
            put(store, topic, "sys");
            assertThat(match(store, "#")).isEmpty();
            assertThat(match(store, levels("+", MAX_LEVELS))).isEmpty();
            assertThat(match(store, "$SYS/#")).containsExactly("sys");
            assertThat(match(store, "$SYS/" + levels("+", MAX_LEVELS - 1))).containsExactly("sys");
        });
    }

    @Test
    @DisplayName("MQTT-4.7.1-2, MQTT-4.7.2-1, MQTT-3.3.1-10: seeded random puts, clears and filters agree with a naive"
        + " matcher, limits included")
    void randomizedAgainstNaiveMatcher()
    {
        final SplittableRandom random = new SplittableRandom(0x5EED_2026L);
        final int maxCount = 40;
        final long maxBytes = 1_000;
        final RetainedStore limited = new RetainedStore(maxCount, maxBytes);
        final Map<String, String> model = new HashMap<>();
        long modelBytes = 0;
        final int[] seen = new int[5]; // by result + 2: REFUSED_BYTES .. CLEARED
        for (int round = 0; round < 4_000; round++)
        {
            final String topic = randomTopic(random);
            final String payload = random.nextInt(5) == 0 ? "" :
                String.valueOf((char)('a' + random.nextInt(26))).repeat(1 + random.nextInt(40));
            final String old = model.get(topic);
            final long oldBytes = null == old ? 0 : topic.length() + old.length();
            final int expected;
            if (payload.isEmpty())
            {
                expected = RetainedStore.CLEARED;
                if (null != old)
                {
                    model.remove(topic);
                    modelBytes -= oldBytes;
                }
            }
            else if (null == old && model.size() >= maxCount)
            {
                expected = RetainedStore.REFUSED_COUNT;
            }
            else if (modelBytes - oldBytes + topic.length() + payload.length() > maxBytes)
            {
                expected = RetainedStore.REFUSED_BYTES;
            }
            else
            {
                expected = null == old ? RetainedStore.STORED : RetainedStore.REPLACED;
                model.put(topic, payload);
                modelBytes += topic.length() + payload.length() - oldBytes;
            }
            assertThat(put(limited, topic, payload)).as("put %s=%s", topic, payload).isEqualTo(expected);
            seen[expected + 2]++;
            assertThat(limited.size()).isEqualTo(model.size());
            assertThat(limited.bytes()).isEqualTo(modelBytes);

            for (int f = 0; f < 5; f++)
            {
                final String filter = randomFilter(random);
                final List<String> naive = new ArrayList<>();
                for (final Map.Entry<String, String> e : model.entrySet())
                {
                    if (naiveMatches(filter, e.getKey()))
                    {
                        naive.add(e.getKey() + "=" + e.getValue());
                    }
                }
                Collections.sort(naive);
                final List<String> actual = new ArrayList<>();
                limited.match(filter, (Message m) -> actual.add(
                    new String(m.topic(), StandardCharsets.UTF_8) + "=" + new String(m.payload(), StandardCharsets.UTF_8)));
                Collections.sort(actual);
                assertThat(actual).as("filter %s in round %d", filter, round).isEqualTo(naive);
            }
        }
        assertThat(seen).as("every put result occurs").doesNotContain(0);
    }

    private static final String[] TOPIC_LEVELS = {"a", "b", "c", "", "$s"};
    private static final String[] FILTER_LEVELS = {"a", "b", "c", "", "$s", "+", "+"};

    private static String randomTopic(final SplittableRandom random)
    {
        final int depth = 1 + random.nextInt(5);
        final StringBuilder builder = new StringBuilder();
        for (int i = 0; i < depth; i++)
        {
            if (i > 0)
            {
                builder.append('/');
            }
            builder.append(TOPIC_LEVELS[random.nextInt(TOPIC_LEVELS.length)]);
        }
        return builder.toString();
    }

    private static String randomFilter(final SplittableRandom random)
    {
        final int depth = random.nextInt(6);
        final StringBuilder builder = new StringBuilder();
        for (int i = 0; i < depth; i++)
        {
            if (i > 0)
            {
                builder.append('/');
            }
            builder.append(FILTER_LEVELS[random.nextInt(FILTER_LEVELS.length)]);
        }
        if (0 == depth || random.nextInt(3) == 0)
        {
            builder.append(0 == depth ? "#" : "/#");
        }
        return builder.toString();
    }

    /**
     * The specification read literally, level by level over split strings.
     */
    private static boolean naiveMatches(final String filter, final String topic)
    {
        final String[] f = filter.split("/", -1);
        final String[] t = topic.split("/", -1);
        if (topic.startsWith("$") && (f[0].equals("+") || f[0].equals("#")))
        {
            return false; // [MQTT-4.7.2-1]
        }
        for (int i = 0; i < f.length; i++)
        {
            if (f[i].equals("#"))
            {
                return true; // this level and below, the parent included [MQTT-4.7.1-2]
            }
            if (i >= t.length || !(f[i].equals("+") || f[i].equals(t[i])))
            {
                return false;
            }
        }
        return f.length == t.length;
    }
}
