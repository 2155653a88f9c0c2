package io.ringmq.pipeline.retained;

import io.ringmq.pipeline.Message;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Walks paused and gone on with while the store changes, against a model of it (helper-134's review of a3054d0): up to
 * four walks paused at once, refusals, clears and puts again, expiry sweeps (also the one a put at a bound makes),
 * the broker's exempt {@code $SYS} messages, empty levels and {@code $} topics, twenty filter shapes. After every
 * operation each node's list of children is checked against its child table, and the paused walks' frames are held
 * only by nodes in the trie.
 */
class RetainedWalkModelTest
{
    static String[] LEVELS = {"a", "b", "", "$x", "$SYS", "c"};
    static String[] FILTERS = {"#", "+", "+/#", "+/+", "a/#", "a/+", "+/a/#", "$SYS/#", "$x/+", "/#", "+/+/+",
        "a/+/#", "#/", "a", "a/b", "+/", "/+", "$x/#", "b/+/a", "+/b/+"};

    static String randomTopic(final SplittableRandom r)
    {
        final int depth = 1 + r.nextInt(4);
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < depth; i++)
        {
            if (i > 0) sb.append('/');
            sb.append(LEVELS[r.nextInt(i == 0 ? LEVELS.length : 3)]).append(i == 0 ? "" : Integer.toString(r.nextInt(3)));
        }
        return sb.toString();
    }

    static boolean matches(final String filter, final String topic)
    {
        final String[] f = filter.split("/", -1);
        final String[] t = topic.split("/", -1);
        if (topic.startsWith("$") && (f[0].equals("+") || f[0].equals("#"))) return false;
        int i = 0;
        for (; i < f.length; i++)
        {
            if (f[i].equals("#")) return true;
            if (i >= t.length) return false;
            if (!f[i].equals("+") && !f[i].equals(t[i])) return false;
        }
        return i == t.length;
    }

    static final class W
    {
        String filter;
        RetainedStore.Walk walk;
        Set<String> throughout = new HashSet<>();
        Set<String> putAgainOrNew = new HashSet<>();
        Map<String, Integer> visits = new HashMap<>();
    }

    @Test
    @DisplayName("MQTT-3.3.1-6: a message there throughout a walk is visited once, only a new one or one put again " +
        "may come twice, each as the store holds it then and matching the filter [MQTT-4.7.2-1]; the trie's links " +
        "hold, and a paused walk holds nothing taken out of the trie")
    void randomizedAgainstModel() throws Exception
    {
        for (long seed = 1; seed <= 300; seed++)
        {
            final SplittableRandom r = new SplittableRandom(seed);
            final boolean bounded = r.nextBoolean();
            final RetainedStore store = bounded ? new RetainedStore(20 + r.nextInt(30), 1 << 20, true) :
                new RetainedStore(1_000_000, Long.MAX_VALUE / 4);
            final Map<String, String> model = new HashMap<>();
            long now = 1_000_000;
            final Map<String, Long> expiry = new HashMap<>();
            final List<W> walks = new ArrayList<>();
            int version = 0;
            for (int op = 0; op < 400; op++)
            {
                final int kind = r.nextInt(10);
                if (kind < 5)
                {
                    final String t = randomTopic(r);
                    final boolean clear = r.nextInt(3) == 0;
                    final String v = clear ? "" : "v" + (++version);
                    final boolean exempt = t.startsWith("$SYS") && r.nextBoolean();
                    final long exp = !clear && r.nextInt(4) == 0 ? now + r.nextInt(2000) : Message.NEVER;
                    final byte[] tb = t.getBytes(StandardCharsets.UTF_8);
                    final byte[] pb = v.getBytes(StandardCharsets.UTF_8);
                    final int res = store.put(new UnsafeBuffer(tb), 0, tb.length, new UnsafeBuffer(pb), 0, pb.length,
                        0, exempt, null, 0, 0, exp);
                    syncAfterPossibleSweep(store, model, expiry, walks, now);
                    if (res == RetainedStore.CLEARED)
                    {
                        if (model.remove(t) != null) removed(walks, t);
                        expiry.remove(t);
                    }
                    else if (res == RetainedStore.STORED || res == RetainedStore.REPLACED)
                    {
                        if (res == RetainedStore.STORED)
                        {
                            if (model.containsKey(t))
                            {
                                assertThat(expiry).as("seed " + seed + " swept in put").containsKey(t);
                                removed(walks, t);
                            }
                            for (final W w : walks) w.putAgainOrNew.add(t);
                        }
                        model.put(t, v);
                        if (exp != Message.NEVER && !exempt) expiry.put(t, exp); else expiry.remove(t);
                    }
                }
                else if (kind < 6)
                {
                    now += r.nextInt(1500);
                    store.sweepExpired(now);
                    syncAfterPossibleSweep(store, model, expiry, walks, now);
                }
                else if (kind < 7 && walks.size() < 4)
                {
                    final W w = new W();
                    w.filter = FILTERS[r.nextInt(FILTERS.length)];
                    w.walk = store.walk(w.filter);
                    for (final String t : model.keySet()) if (matches(w.filter, t)) w.throughout.add(t);
                    walks.add(w);
                }
                else if (!walks.isEmpty())
                {
                    final W w = walks.get(r.nextInt(walks.size()));
                    resumeChecked(store, w, model, seed, r.nextInt(5), 1 + r.nextInt(10));
                    if (w.walk.done())
                    {
                        check(seed, w);
                        walks.remove(w);
                    }
                }
                checkLinks(store);
                checkPins(store);
            }
            for (final W w : walks)
            {
                while (!w.walk.done())
                {
                    store.resume(w.walk, m ->
                    {
                        final String t = new String(m.topic(), StandardCharsets.UTF_8);
                        assertThat(matches(w.filter, t)).isTrue();
                        w.visits.merge(t, 1, Integer::sum);
                        return true;
                    }, 3);
                }
                check(seed, w);
            }
            assertThat(store.pinCount()).as("seed " + seed + ": every walk ended, none kept").isZero();
        }
    }

    /**
     * The children the paused walks hand out next are all in the trie: none taken out stays reachable from a walk.
     */
    @SuppressWarnings("unchecked")
    static void checkPins(final RetainedStore store) throws Exception
    {
        final Map<Object, Object> pins = (Map<Object, Object>)f(RetainedStore.class, "pins").get(store);
        assertThat(liveNodes(store)).containsAll(pins.keySet());
    }

    /**
     * @return the nodes in the store's trie, its root included.
     */
    @SuppressWarnings("unchecked")
    static Set<Object> liveNodes(final RetainedStore store) throws Exception
    {
        final Set<Object> live = Collections.newSetFromMap(new IdentityHashMap<>());
        final Object root = f(RetainedStore.class, "root").get(store);
        final Field children = f(root.getClass(), "children");
        final Deque<Object> stack = new ArrayDeque<>();
        stack.push(root);
        while (!stack.isEmpty())
        {
            final Object node = stack.pop();
            live.add(node);
            ((io.ringmq.pipeline.subscription.LevelTable<Object>)children.get(node)).forEach(stack::push);
        }
        return live;
    }

    /**
     * Goes on with a walk for {@code budget} steps, refusing its message number {@code refuseAt}: each visited matches
     * the filter and is as the model holds it.
     */
    static void resumeChecked(final RetainedStore store, final W w, final Map<String, String> model, final long seed,
        final int refuseAt, final long budget)
    {
        final int[] n = {0};
        store.resume(w.walk, m ->
        {
            final String t = new String(m.topic(), StandardCharsets.UTF_8);
            if (n[0]++ == refuseAt)
            {
                return false;
            }
            assertThat(matches(w.filter, t)).as("seed " + seed + " " + w.filter + " visited " + t).isTrue();
            assertThat(new String(m.payload(), StandardCharsets.UTF_8)).as("seed " + seed + " current " + t)
                .isEqualTo(model.get(t));
            w.visits.merge(t, 1, Integer::sum);
            return true;
        }, budget);
    }

    static void syncAfterPossibleSweep(final RetainedStore store, final Map<String, String> model,
        final Map<String, Long> expiry, final List<W> walks, final long now)
    {
        // the store may have swept expired ones: reconcile the model with the store's content
        final Set<String> present = new HashSet<>();
        store.match("#", m -> present.add(new String(m.topic(), StandardCharsets.UTF_8)));
        store.match("$SYS/#", m -> present.add(new String(m.topic(), StandardCharsets.UTF_8)));
        store.match("$x/#", m -> present.add(new String(m.topic(), StandardCharsets.UTF_8)));
        store.match("$x", m -> present.add(new String(m.topic(), StandardCharsets.UTF_8)));
        store.match("$SYS", m -> present.add(new String(m.topic(), StandardCharsets.UTF_8)));
        for (final Iterator<String> it = model.keySet().iterator(); it.hasNext(); )
        {
            final String t = it.next();
            if (!present.contains(t))
            {
                it.remove();
                expiry.remove(t);
                removed(walks, t);
            }
        }
    }

    static void removed(final List<W> walks, final String t)
    {
        for (final W w : walks) w.throughout.remove(t);
    }

    static void check(final long seed, final W w)
    {
        for (final String t : w.throughout)
        {
            assertThat(w.visits.getOrDefault(t, 0)).as("seed " + seed + " " + w.filter + " throughout " + t)
                .isEqualTo(1);
        }
        for (final Map.Entry<String, Integer> e : w.visits.entrySet())
        {
            if (e.getValue() > 1)
            {
                assertThat(w.putAgainOrNew).as("seed " + seed + " twice " + e.getKey()).contains(e.getKey());
            }
        }
    }

    static Field f(final Class<?> c, final String name) throws Exception
    {
        final Field field = c.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }

    static void checkLinks(final RetainedStore store) throws Exception
    {
        final Object root = f(RetainedStore.class, "root").get(store);
        final Class<?> nc = root.getClass();
        final Field children = f(nc, "children"), first = f(nc, "first"), last = f(nc, "last"),
            previous = f(nc, "previous"), next = f(nc, "next"), parent = f(nc, "parent");
        final Deque<Object> stack = new ArrayDeque<>();
        stack.push(root);
        while (!stack.isEmpty())
        {
            final Object node = stack.pop();
            final io.ringmq.pipeline.subscription.LevelTable<?> table =
                (io.ringmq.pipeline.subscription.LevelTable<?>)children.get(node);
            final Set<Object> inTable = Collections.newSetFromMap(new IdentityHashMap<>());
            table.forEach(inTable::add);
            final Set<Object> inList = Collections.newSetFromMap(new IdentityHashMap<>());
            Object prev = null;
            for (Object c = first.get(node); c != null; c = next.get(c))
            {
                assertThat(inList.add(c)).isTrue();
                assertThat(previous.get(c)).isSameAs(prev);
                assertThat(parent.get(c)).isSameAs(node);
                prev = c;
            }
            assertThat(last.get(node)).isSameAs(prev);
            assertThat(inList).isEqualTo(inTable);
            inTable.forEach(stack::push);
        }
    }
}
