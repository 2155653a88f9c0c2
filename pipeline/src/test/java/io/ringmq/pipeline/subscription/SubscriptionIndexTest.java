package io.ringmq.pipeline.subscription;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

class SubscriptionIndexTest
{
    private final SubscriptionIndex<String> index = new SubscriptionIndex<>();

    private Set<String> match(final String topic)
    {
        final Set<String> matched = new TreeSet<>();
        index.match(SubscriptionIndex.bufferOf(topic), 0, topic.getBytes().length,
            (subscriber, options) -> matched.add(subscriber));
        return matched;
    }

    @Test
    @DisplayName("MQTT-4.7.1-2, MQTT-4.7.1-3: the specification's own wildcard examples")
    void specificationExamples()
    {
        index.subscribe("sport/tennis/player1/#", "hash", 0);
        index.subscribe("sport/tennis/+", "plus", 0);
        index.subscribe("sport/+", "sport-plus", 0);
        index.subscribe("+", "root-plus", 0);
        index.subscribe("/+", "slash-plus", 0);
        index.subscribe("+/+", "plus-plus", 0);
        index.subscribe("#", "all", 0);
        assertThat(match("sport/tennis/player1")).containsExactly("all", "hash", "plus");
        assertThat(match("sport/tennis/player1/ranking")).containsExactly("all", "hash");
        assertThat(match("sport/tennis/player1/score/wimbledon")).containsExactly("all", "hash");
        assertThat(match("sport")).containsExactly("all", "root-plus");
        assertThat(match("sport/")).containsExactly("all", "plus-plus", "sport-plus");
        assertThat(match("/finance")).containsExactly("all", "plus-plus", "slash-plus");
    }

    @Test
    @DisplayName("MQTT-4.7.2-1: '#' and '+' at the first level do not match '$' topics")
    void dollarTopics()
    {
        index.subscribe("#", "all", 0);
        index.subscribe("+/monitor/Clients", "plus", 0);
        index.subscribe("$SYS/#", "sys", 0);
        index.subscribe("$SYS/monitor/+", "sys-plus", 0);
        assertThat(match("$SYS/monitor/Clients")).containsExactly("sys", "sys-plus");
        assertThat(match("a/monitor/Clients")).containsExactly("all", "plus");
    }

    @Test
    void resubscribeReplacesAndUnsubscribePrunes()
    {
        assertThat(index.subscribe("a/+/c", "s", 0)).isTrue();
        assertThat(index.subscribe("a/+/c", "s", 2)).isFalse();
        final List<Integer> options = new ArrayList<>();
        index.match(SubscriptionIndex.bufferOf("a/b/c"), 0, 5, (subscriber, o) -> options.add(o));
        assertThat(options).containsExactly(2);
        assertThat(index.unsubscribe("a/+/c", "s")).isTrue();
        assertThat(index.unsubscribe("a/+/c", "s")).isFalse();
        assertThat(index.size()).isZero();
        assertThat(match("a/b/c")).isEmpty();
    }

    @Test
    @DisplayName("100,000 filters: every topic finds exactly its subscribers")
    void hundredThousandFilters()
    {
        final String[] devices = new String[100_000];
        for (int i = 0; i < devices.length; i++)
        {
            devices[i] = "device-" + i;
            index.subscribe("devices/" + i + "/telemetry", devices[i], 0);
        }
        index.subscribe("devices/+/telemetry", "all-telemetry", 0);
        index.subscribe("devices/#", "everything", 0);
        assertThat(index.size()).isEqualTo(100_002);
        assertThat(match("devices/77777/telemetry")).containsExactly("all-telemetry", "device-77777", "everything");
        assertThat(match("devices/100000/telemetry")).containsExactly("all-telemetry", "everything");
        for (int i = 0; i < 100_000; i += 2)
        {
            index.unsubscribe("devices/" + i + "/telemetry", devices[i]); // subscribers are compared by identity
        }
        assertThat(index.size()).isEqualTo(50_002);
        assertThat(match("devices/2/telemetry")).containsExactly("all-telemetry", "everything");
        assertThat(match("devices/3/telemetry")).containsExactly("all-telemetry", "device-3", "everything");
    }

    @Test
    void agreesWithANaiveMatcher()
    {
        for (long seed = 0x5EED_0801L; seed < 0x5EED_0801L + 500; seed++)
        {
            final SplittableRandom random = new SplittableRandom(seed);
            agreesWithANaiveMatcher(filterSet(random), topics(random), seed);
        }
    }

    private static void agreesWithANaiveMatcher(final List<String> filters, final List<String> topics,
        final long seed)
    {
        final SubscriptionIndex<String> fresh = new SubscriptionIndex<>();
        for (final String filter : filters)
        {
            fresh.subscribe(filter, filter, 0);
        }
        for (final String topic : topics)
        {
            final Set<String> expected = new TreeSet<>();
            for (final String filter : filters)
            {
                if (naiveMatches(filter, topic))
                {
                    expected.add(filter);
                }
            }
            final Set<String> actual = new TreeSet<>();
            fresh.match(SubscriptionIndex.bufferOf(topic), 0, topic.length(), (s, o) -> actual.add(s));
            assertThat(actual).as("seed %d: topic '%s' against %s", seed, topic, filters).isEqualTo(expected);
        }
    }

    /**
     * Up to 12 filters: '#' alone, or one to four levels of "a", "b", "", "$x" and "+", a third of them ending in "/#".
     */
    private static List<String> filterSet(final SplittableRandom random)
    {
        final List<String> filters = new ArrayList<>();
        final int count = random.nextInt(13);
        for (int i = 0; i < count; i++)
        {
            if (random.nextBoolean())
            {
                filters.add("#");
                continue;
            }
            final String filter = levels(random, new String[]{"a", "b", "", "$x", "+"}, 4);
            filters.add(random.nextInt(3) == 0 ? filter + "/#" : filter);
        }
        return filters;
    }

    /**
     * Up to 10 topics of one to five levels of "a", "b", "" and "$x".
     */
    private static List<String> topics(final SplittableRandom random)
    {
        final List<String> topics = new ArrayList<>();
        final int count = random.nextInt(11);
        for (int i = 0; i < count; i++)
        {
            topics.add(levels(random, new String[]{"a", "b", "", "$x"}, 5));
        }
        return topics;
    }

    private static String levels(final SplittableRandom random, final String[] choices, final int maxLevels)
    {
        final List<String> levels = new ArrayList<>();
        final int count = random.nextInt(1, maxLevels + 1);
        for (int i = 0; i < count; i++)
        {
            levels.add(choices[random.nextInt(choices.length)]);
        }
        return String.join("/", levels);
    }

    /**
     * Section 4.7 read literally, level by level.
     */
    static boolean naiveMatches(final String filter, final String topic)
    {
        final String[] f = filter.split("/", -1);
        final String[] t = topic.split("/", -1);
        if (topic.startsWith("$") && (f[0].equals("#") || f[0].equals("+")))
        {
            return false;
        }
        for (int i = 0; i < f.length; i++)
        {
            if (f[i].equals("#"))
            {
                return true;
            }
            if (i >= t.length)
            {
                return false;
            }
            if (!f[i].equals("+") && !f[i].equals(t[i]))
            {
                return false;
            }
        }
        return f.length == t.length;
    }
}
