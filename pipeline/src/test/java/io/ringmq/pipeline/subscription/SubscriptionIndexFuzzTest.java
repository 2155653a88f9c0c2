package io.ringmq.pipeline.subscription;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Coverage-guided fuzz target (Jazzer) for the subscription index: the fuzzer writes a program of subscribes,
 * replacing subscribes, unsubscribes and matches over a small alphabet of levels (so filters and topics collide),
 * and every match must report exactly the (subscriber, options) pairs a naive reading of section 4.7 finds
 * [MQTT-4.7.1-2] [MQTT-4.7.1-3] [MQTT-4.7.2-1], once per matching filter; the index's size must follow every
 * add [MQTT-3.8.4-3] and remove.
 * <p>
 * Corpus: {@code src/test/resources/io/ringmq/pipeline/subscription/SubscriptionIndexFuzzTestInputs/matches/}.
 */
class SubscriptionIndexFuzzTest
{
    /** Topic levels: plain, empty, '$'-led, multi-byte, and a space. */
    private static final String[] LEVELS = {"a", "b", "", "$x", "$SYS", "\u00e9", "a b"};
    private static final int MAX_OPERATIONS = 64;

    @FuzzTest(maxDuration = "10s")
    void matches(final FuzzedDataProvider data)
    {
        final SubscriptionIndex<Integer> index = new SubscriptionIndex<>();
        final Map<String, Map<Integer, Integer>> model = new HashMap<>();
        int modelSize = 0;
        for (int op = 0; op < MAX_OPERATIONS && data.remainingBytes() > 0; op++)
        {
            final int kind = data.consumeInt(0, 3);
            if (kind == 0 || kind == 1)
            {
                final String filter = filter(data);
                final int subscriber = data.consumeInt(0, 5);
                final int options = data.consumeInt(0, 63);
                final boolean added = index.subscribe(filter, subscriber, options);
                final Integer previous = model.computeIfAbsent(filter, f -> new HashMap<>()).put(subscriber, options);
                assertThat(added).as("subscribe %s by %d is new", filter, subscriber).isEqualTo(null == previous);
                modelSize += null == previous ? 1 : 0;
            }
            else if (kind == 2)
            {
                final String filter = filter(data);
                final int subscriber = data.consumeInt(0, 5);
                final Map<Integer, Integer> holders = model.get(filter);
                final boolean expected = null != holders && null != holders.remove(subscriber);
                assertThat(index.unsubscribe(filter, subscriber)).as("unsubscribe %s by %d", filter, subscriber)
                    .isEqualTo(expected);
                modelSize -= expected ? 1 : 0;
            }
            else
            {
                final String topic = topic(data);
                final List<String> expected = new ArrayList<>();
                for (final Map.Entry<String, Map<Integer, Integer>> entry : model.entrySet())
                {
                    if (SubscriptionIndexTest.naiveMatches(entry.getKey(), topic))
                    {
                        entry.getValue().forEach((s, o) -> expected.add(s + ":" + o));
                    }
                }
                final byte[] bytes = topic.getBytes(StandardCharsets.UTF_8);
                final UnsafeBuffer buffer = new UnsafeBuffer(new byte[bytes.length + 2]);
                buffer.putBytes(1, bytes);
                final List<String> actual = new ArrayList<>();
                index.match(buffer, 1, bytes.length, (s, o) -> actual.add(s + ":" + o));
                expected.sort(null);
                actual.sort(null);
                assertThat(actual).as("topic '%s' against %s", topic, model).isEqualTo(expected);
            }
            assertThat(index.size()).isEqualTo(modelSize);
        }
    }

    /**
     * @return a valid filter: '#' only as the last level, '+' only as a whole level.
     */
    private static String filter(final FuzzedDataProvider data)
    {
        final int count = data.consumeInt(1, 5);
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < count; i++)
        {
            if (i > 0)
            {
                sb.append('/');
            }
            final int choice = data.consumeInt(0, LEVELS.length + 1);
            if (choice == LEVELS.length)
            {
                sb.append('+');
            }
            else if (choice == LEVELS.length + 1)
            {
                sb.append('#');
                break;
            }
            else
            {
                sb.append(LEVELS[choice]);
            }
        }
        return sb.toString();
    }

    private static String topic(final FuzzedDataProvider data)
    {
        final int count = data.consumeInt(1, 6);
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < count; i++)
        {
            if (i > 0)
            {
                sb.append('/');
            }
            sb.append(LEVELS[data.consumeInt(0, LEVELS.length - 1)]);
        }
        return sb.toString();
    }
}
