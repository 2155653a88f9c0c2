package io.ringmq.pipeline.retained;

import io.ringmq.pipeline.Message;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RetainedStore.Walk}: a walk that stops (its step budget spent, or its visitor full) and goes on later, with
 * the store changing between its parts, as the routing stage sends a large SUBSCRIBE's retained messages.
 */
class RetainedWalkTest
{
    private final RetainedStore store = new RetainedStore(1_000_000, Long.MAX_VALUE / 4);

    private void put(final String topic, final String payload)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 0);
    }

    private static String topic(final Message message)
    {
        return new String(message.topic(), StandardCharsets.UTF_8);
    }

    /**
     * @return every topic matching {@code filter} now, by a walk in one go.
     */
    private Set<String> all(final String filter)
    {
        final Set<String> found = new TreeSet<>();
        store.match(filter, message -> found.add(topic(message)));
        return found;
    }

    @Test
    @DisplayName("MQTT-3.3.1-6: a walk in parts of a few steps each visits every matching message once")
    void partsVisitEachMessageOnce()
    {
        for (int a = 0; a < 30; a++)
        {
            for (int b = 0; b < 40; b++)
            {
                put("a" + a + "/b" + b, "x");
                put("a" + a + "/b" + b + "/c", "y");
            }
        }
        put("$SYS/x", "sys");
        for (final String filter : new String[]{"#", "a3/#", "+/b7", "+/+/c", "a1/+", "a29/b39/c", "+/#"})
        {
            final List<String> visited = new ArrayList<>();
            final RetainedStore.Walk walk = store.walk(filter);
            int parts = 0;
            while (!walk.done())
            {
                store.resume(walk, message -> visited.add(topic(message)), 7);
                parts++;
            }
            assertThat(visited).as(filter).doesNotHaveDuplicates();
            assertThat(new TreeSet<>(visited)).as(filter).isEqualTo(all(filter));
            assertThat(visited).as("'$' topics are not matched by a first-level wildcard [MQTT-4.7.2-1]")
                .noneMatch(t -> t.startsWith("$"));
            if (filter.equals("#"))
            {
                assertThat(parts).as(filter).isGreaterThan(100);
            }
        }
    }

    @Test
    @DisplayName("a message the visitor refuses (its part is full) is the first visited when the walk goes on")
    void aRefusedMessageComesFirstNextTime()
    {
        for (int i = 0; i < 500; i++)
        {
            put("t/" + i, "x");
        }
        final List<String> visited = new ArrayList<>();
        final RetainedStore.Walk walk = store.walk("t/#");
        final String[] refused = {null};
        while (!walk.done())
        {
            final int[] taken = {0};
            store.resume(walk, message ->
            {
                final String t = topic(message);
                if (null != refused[0])
                {
                    assertThat(t).as("the refused message first").isEqualTo(refused[0]);
                    refused[0] = null;
                }
                if (taken[0] == 9)
                {
                    refused[0] = t;
                    return false; // a part of nine
                }
                taken[0]++;
                visited.add(t);
                return true;
            }, Long.MAX_VALUE);
        }
        assertThat(visited).doesNotHaveDuplicates().hasSize(500);
    }

    @Test
    @DisplayName("the store changing between parts: a message there throughout is visited exactly once, one cleared " +
        "before its turn is not, a replaced one as it is now; only a topic cleared and put again (a new message, its " +
        "subscriber had it live) may come twice")
    void changesBetweenPartsNeitherRepeatNorSkip()
    {
        for (long seed = 1; seed <= 40; seed++)
        {
            final SplittableRandom random = new SplittableRandom(seed);
            final RetainedStore changing = new RetainedStore(1_000_000, Long.MAX_VALUE / 4);
            final Map<String, String> model = new HashMap<>(); // what the store holds now
            for (int i = 0; i < 400; i++)
            {
                final String t = "f/" + random.nextInt(8) + "/" + random.nextInt(60);
                put(changing, t, "v0");
                model.put(t, "v0");
            }
            final Set<String> throughout = new HashSet<>(model.keySet()); // there from start to end
            final Set<String> gone = new HashSet<>(); // cleared before their turn, not put again
            final Set<String> putAgain = new HashSet<>(); // cleared, then put again: a new node, at the end
            final List<String> visited = new ArrayList<>();
            final long s = seed;
            final RetainedStore.Walk walk = changing.walk(random.nextBoolean() ? "f/#" : "f/+/+");
            while (!walk.done())
            {
                changing.resume(walk, message ->
                {
                    final String t = topic(message);
                    visited.add(t);
                    assertThat(new String(message.payload(), StandardCharsets.UTF_8)).as("as it is now, seed " + s)
                        .isEqualTo(model.get(t));
                    return true;
                }, 1 + random.nextInt(20));
                // between parts: new topics (tables grow and move their children), clears (they shrink), replaces
                for (int c = random.nextInt(30); c > 0; c--)
                {
                    final String t = "f/" + random.nextInt(10) + "/" + random.nextInt(100);
                    final String value = random.nextInt(3) == 0 ? "" : "v" + c;
                    put(changing, t, value);
                    if (value.isEmpty())
                    {
                        model.remove(t);
                        throughout.remove(t);
                        if (!visited.contains(t))
                        {
                            gone.add(t);
                        }
                    }
                    else
                    {
                        if (!model.containsKey(t))
                        {
                            putAgain.add(t);
                        }
                        model.put(t, value);
                        gone.remove(t);
                    }
                }
            }
            final Set<String> once = new HashSet<>();
            for (final String t : visited)
            {
                if (!once.add(t))
                {
                    assertThat(putAgain).as("visited twice, seed " + seed).contains(t);
                }
            }
            assertThat(visited).as("seed " + seed).containsAll(throughout);
            assertThat(visited).as("seed " + seed).doesNotContainAnyElementsOf(gone);
        }
    }

    @Test
    @DisplayName("a paused walk holds nothing taken out of the trie since: a million topics put and cleared behind " +
        "one cost it no memory and its next part a step each of those left (review of a3054d0: 160 MiB, and two " +
        "steps each)")
    void aPausedWalkHoldsNoChainOfClearedTopics()
    {
        put("p/x", "held");
        for (int i = 0; i < 100; i++)
        {
            put("t" + i, "v");
        }
        final RetainedStore.Walk walk = store.walk("#");
        store.resume(walk, message -> !topic(message).equals("p/x"), 1_000); // stops on p/x, t0 next at the root
        assertThat(walk.done()).isFalse();
        for (int i = 100; i < 100 + 1_000_000; i++)
        {
            put("t" + i, "v");
            put("t" + (i - 100), "");
        }
        assertThat(store.pinCount()).as("its frames, held by nodes in the trie").isBetween(1, 3);
        final List<String> visited = new ArrayList<>();
        final long steps = store.resume(walk, message -> visited.add(topic(message)), Long.MAX_VALUE);
        assertThat(walk.done()).isTrue();
        assertThat(steps).as("the topics there now, not those cleared").isLessThan(1_000);
        assertThat(visited).contains("p/x").hasSize(101);
        assertThat(store.pinCount()).isZero();
    }

    @Test
    @DisplayName("MQTT-4.7.2-1: a first-level wildcard passes over '$' topics a step each: 100,000 of them are no " +
        "longer one step for a walk's budget (review of a3054d0: 10,000 '+/x' filters held routing 12 s)")
    void dollarTopicsCostAStepEach()
    {
        for (int i = 0; i < 10_000; i++)
        {
            put("$t" + i + "/x", "v");
        }
        put("a/x", "v");
        final List<String> visited = new ArrayList<>();
        final RetainedStore.Walk walk = store.walk("+/x");
        final long steps = store.resume(walk, message -> visited.add(topic(message)), 100);
        assertThat(steps).as("cut short by its budget").isGreaterThan(100);
        assertThat(walk.done()).isFalse();
        while (!walk.done())
        {
            store.resume(walk, message -> visited.add(topic(message)), 100);
        }
        assertThat(visited).containsExactly("a/x");
        final RetainedStore.Walk released = store.walk("+/x");
        store.resume(released, message -> true, 10);
        store.release(released);
        assertThat(store.pinCount()).as("a walk let go of holds nothing").isZero();
    }

    @Test
    @DisplayName("a walk that pauses deeper than it ever paused before goes on and lets go (review of c1b4440: 33 " +
        "levels down, resume and release threw)")
    void aDeepPausedWalkGoesOn()
    {
        put("p", "v");
        final String deep = "q" + "/q".repeat(40);
        put(deep, "deep");
        final RetainedStore.Walk walk = store.walk("#");
        store.resume(walk, message -> !topic(message).equals("p"), 1_000); // the root frame hands out q next
        store.resume(walk, message -> !topic(message).equals(deep), 1_000); // 42 frames down, none with a next
        final List<String> visited = new ArrayList<>();
        store.resume(walk, message -> visited.add(topic(message)), 1_000);
        assertThat(visited).containsExactly(deep);
        assertThat(walk.done()).isTrue();

        final RetainedStore.Walk released = store.walk("#");
        store.resume(released, message -> !topic(message).equals("p"), 1_000);
        store.resume(released, message -> !topic(message).equals(deep), 1_000);
        store.release(released);
        assertThat(store.pinCount()).isZero();
    }

    @Test
    @DisplayName("many walks paused at one child are handed on together when it leaves the trie, each to the child " +
        "after it, and each goes on from there")
    void walksPausedAtOneChildAreHandedOnTogether()
    {
        for (int i = 0; i < 10; i++)
        {
            put("x" + i, "v");
        }
        final List<RetainedStore.Walk> walks = new ArrayList<>();
        for (int w = 0; w < 1_000; w++)
        {
            final RetainedStore.Walk walk = store.walk("#");
            store.resume(walk, message -> !topic(message).equals("x0"), 1_000); // x0 refused: the root hands out x0
            walks.add(walk);
        }
        final RetainedStore.Walk other = store.walk("#");
        store.resume(other, message -> !topic(message).equals("x2"), 1_000); // the root hands out x2 next
        assertThat(store.pinCount()).isEqualTo(1_001);
        put("x0", ""); // the thousand handed on to x1
        put("x1", ""); // and on to x2, where one more pauses: the smaller list moves
        assertThat(store.pinCount()).isEqualTo(1_001);
        for (final RetainedStore.Walk walk : walks)
        {
            final List<String> visited = new ArrayList<>();
            while (!walk.done())
            {
                store.resume(walk, message -> visited.add(topic(message)), 1_000);
            }
            assertThat(visited).containsExactly("x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9");
        }
        store.release(other);
        assertThat(store.pinCount()).isZero();
    }

    private static void put(final RetainedStore target, final String topic, final String payload)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        target.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 0);
    }
}
