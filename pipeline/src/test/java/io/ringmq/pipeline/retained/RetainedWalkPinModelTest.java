package io.ringmq.pipeline.retained;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static io.ringmq.pipeline.retained.RetainedWalkModelTest.FILTERS;
import static io.ringmq.pipeline.retained.RetainedWalkModelTest.check;
import static io.ringmq.pipeline.retained.RetainedWalkModelTest.f;
import static io.ringmq.pipeline.retained.RetainedWalkModelTest.matches;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Walks paused at the same place (groups resumed in lockstep), releases of paused walks, reuse of ended walks, topics
 * up to 40 levels deep, and a full check of the registry of paused frames ({@code RetainedStore#pins}, their anchors)
 * against every paused walk after each operation (helper-135's and helper-136's reviews of c1b4440 and b2986d0).
 */
class RetainedWalkPinModelTest
{
    static String topic(final SplittableRandom r, final int maxDepth)
    {
        final String[] levels = {"a", "b", "", "$x", "c"};
        final int depth = 1 + r.nextInt(maxDepth);
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < depth; i++)
        {
            if (i > 0) sb.append('/');
            sb.append(levels[r.nextInt(i == 0 ? levels.length : 3)]).append(i == 0 ? "" : Integer.toString(r.nextInt(2)));
        }
        return sb.toString();
    }

    @Test
    @DisplayName("MQTT-3.3.1-6: walks paused together, released, reused, four levels deep: each visits what was there " +
        "throughout once, and the paused frames are each in one anchor's list, of a child in the trie")
    void shallow() throws Exception
    {
        run(1, 250, 4);
    }

    @Test
    @DisplayName("MQTT-3.3.1-6: the same with topics up to 40 levels deep")
    void deep() throws Exception
    {
        run(1, 30, 40);
    }

    void run(final long from, final long to, final int maxDepth) throws Exception
    {
        final List<RetainedStore.Walk> ended = new ArrayList<>();
        for (long seed = from; seed <= to; seed++)
        {
            final SplittableRandom r = new SplittableRandom(seed);
            final RetainedStore store = new RetainedStore(1_000_000, Long.MAX_VALUE / 4);
            final Map<String, String> model = new HashMap<>();
            final List<List<RetainedWalkModelTest.W>> groups = new ArrayList<>();
            final List<RetainedStore.Walk> released = new ArrayList<>();
            int version = 0;
            for (int op = 0; op < 400; op++)
            {
                final int kind = r.nextInt(12);
                if (kind < 6)
                {
                    final boolean clear = r.nextInt(2) == 0;
                    final List<String> existing = new ArrayList<>(new java.util.TreeSet<>(model.keySet()));
                    final String t = clear && !existing.isEmpty() && r.nextInt(4) != 0 ?
                        existing.get(r.nextInt(existing.size())) : topic(r, maxDepth);
                    final String v = clear ? "" : "v" + (++version);
                    final byte[] tb = t.getBytes(StandardCharsets.UTF_8);
                    final byte[] pb = v.getBytes(StandardCharsets.UTF_8);
                    final int res = store.put(new UnsafeBuffer(tb), 0, tb.length, new UnsafeBuffer(pb), 0, pb.length, 0);
                    if (res == RetainedStore.CLEARED)
                    {
                        if (model.remove(t) != null) for (final List<RetainedWalkModelTest.W> g : groups) for (final RetainedWalkModelTest.W w : g) w.throughout.remove(t);
                    }
                    else if (res == RetainedStore.STORED)
                    {
                        for (final List<RetainedWalkModelTest.W> g : groups) for (final RetainedWalkModelTest.W w : g) w.putAgainOrNew.add(t);
                        model.put(t, v);
                    }
                    else
                    {
                        model.put(t, v);
                    }
                }
                else if (kind < 7 && groups.size() < 5)
                {
                    final String filter = FILTERS[r.nextInt(FILTERS.length)];
                    final int n = 1 + r.nextInt(4);
                    final List<RetainedWalkModelTest.W> g = new ArrayList<>();
                    for (int i = 0; i < n; i++)
                    {
                        final RetainedWalkModelTest.W w = new RetainedWalkModelTest.W();
                        w.filter = filter;
                        w.walk = !ended.isEmpty() && r.nextBoolean() ? store.walk(filter, ended.remove(ended.size() - 1)) :
                            store.walk(filter);
                        for (final String t : model.keySet()) if (matches(filter, t)) w.throughout.add(t);
                        g.add(w);
                    }
                    groups.add(g);
                }
                else if (kind < 8 && !groups.isEmpty())
                {
                    // release a paused walk (its subscription gone)
                    final List<RetainedWalkModelTest.W> g = groups.get(r.nextInt(groups.size()));
                    final RetainedWalkModelTest.W w = g.remove(r.nextInt(g.size()));
                    store.release(w.walk);
                    released.add(w.walk);
                    if (r.nextBoolean()) store.release(w.walk); // twice: harmless
                    if (g.isEmpty()) groups.remove(g);
                }
                else if (!groups.isEmpty())
                {
                    final List<RetainedWalkModelTest.W> g = groups.get(r.nextInt(groups.size()));
                    final int refuseAt = r.nextInt(5);
                    final int budget = 1 + r.nextInt(10);
                    final boolean lockstep = r.nextInt(4) != 0;
                    final List<RetainedWalkModelTest.W> which = lockstep ? new ArrayList<>(g) : List.of(g.get(r.nextInt(g.size())));
                    for (final RetainedWalkModelTest.W w : which)
                    {
                        RetainedWalkModelTest.resumeChecked(store, w, model, seed, refuseAt, budget);
                        if (w.walk.done())
                        {
                            check(seed, w);
                            g.remove(w);
                            ended.add(w.walk);
                        }
                    }
                    if (g.isEmpty()) groups.remove(g);
                }
                final List<RetainedStore.Walk> paused = new ArrayList<>();
                for (final List<RetainedWalkModelTest.W> g : groups) for (final RetainedWalkModelTest.W w : g) paused.add(w.walk);
                final List<RetainedStore.Walk> notPaused = new ArrayList<>(released);
                for (final RetainedStore.Walk e : ended) if (!paused.contains(e)) notPaused.add(e);
                checkRegistry(seed, op, store, paused, notPaused);
            }
            final boolean releaseRest = r.nextBoolean();
            for (final List<RetainedWalkModelTest.W> g : groups)
            {
                for (final RetainedWalkModelTest.W w : g)
                {
                    if (releaseRest)
                    {
                        store.release(w.walk);
                        continue;
                    }
                    while (!w.walk.done())
                    {
                        store.resume(w.walk, m ->
                        {
                            w.visits.merge(new String(m.topic(), StandardCharsets.UTF_8), 1, Integer::sum);
                            return true;
                        }, 3);
                    }
                    check(seed, w);
                }
            }
            assertThat(store.pinCount()).as("seed " + seed).isZero();
            assertThat((Map<?, ?>)f(RetainedStore.class, "pins").get(store)).isEmpty();
            if (ended.size() > 50) ended.subList(0, ended.size() - 50).clear();
        }
    }

    @SuppressWarnings("unchecked")
    static void checkRegistry(final long seed, final int op, final RetainedStore store,
        final List<RetainedStore.Walk> paused, final List<RetainedStore.Walk> notPaused) throws Exception
    {
        final Set<Object> live = RetainedWalkModelTest.liveNodes(store);
        final Field parentF = f(f(RetainedStore.class, "root").get(store).getClass(), "parent");
        final Map<Object, Object> pins = (Map<Object, Object>)f(RetainedStore.class, "pins").get(store);
        final Class<?> pinClass = Class.forName(RetainedStore.class.getName() + "$Pin");
        final Class<?> anchorClass = Class.forName(RetainedStore.class.getName() + "$Anchor");
        final Field pAnchor = f(pinClass, "anchor"), pBefore = f(pinClass, "before"), pAfter = f(pinClass, "after");
        final Field aNode = f(anchorClass, "node"), aHead = f(anchorClass, "head"), aCount = f(anchorClass, "count");
        final Field wNext = f(RetainedStore.Walk.class, "next"), wNodes = f(RetainedStore.Walk.class, "nodes"),
            wSize = f(RetainedStore.Walk.class, "size"), wPins = f(RetainedStore.Walk.class, "pins"),
            wPinned = f(RetainedStore.Walk.class, "pinned");
        final String at = "seed " + seed + " op " + op;
        // pin -> the anchor whose list holds it
        final Map<Object, Object> listedIn = new IdentityHashMap<>();
        final Set<Object> anchorsInMap = Collections.newSetFromMap(new IdentityHashMap<>());
        final java.util.function.BiConsumer<Object, String> walkList = (anchor, what) ->
        {
            try
            {
                Object before = null;
                int n = 0;
                for (Object p = aHead.get(anchor); null != p; p = pAfter.get(p))
                {
                    assertThat(listedIn.put(p, anchor)).as(at + " " + what + " pin in one list").isNull();
                    assertThat(pBefore.get(p)).as(at + " " + what + " before").isSameAs(before);
                    assertThat(pAnchor.get(p)).as(at + " " + what + " pin's anchor").isSameAs(anchor);
                    before = p;
                    n++;
                }
                assertThat((int)aCount.get(anchor)).as(at + " " + what + " count").isEqualTo(n);
            }
            catch (final IllegalAccessException e)
            {
                throw new AssertionError(e);
            }
        };
        for (final Map.Entry<Object, Object> e : pins.entrySet())
        {
            final Object anchor = e.getValue();
            assertThat(anchorsInMap.add(anchor)).as(at + " anchor under one key").isTrue();
            assertThat(aNode.get(anchor)).as(at + " anchor keyed by its node").isSameAs(e.getKey());
            assertThat(live).as(at + " key live").contains(e.getKey());
            assertThat((int)aCount.get(anchor)).as(at + " no empty anchor in the map").isPositive();
            walkList.accept(anchor, "mapped");
        }
        // every paused walk's frame with a next child: its pin is in the list of its anchor
        final Set<Object> orphans = Collections.newSetFromMap(new IdentityHashMap<>());
        int mappedFrames = 0;
        for (final RetainedStore.Walk walk : paused)
        {
            final int size = (int)wSize.get(walk);
            assertThat(size).as(at + " paused walk not done").isPositive();
            final Object[] next = (Object[])wNext.get(walk);
            final Object[] nodes = (Object[])wNodes.get(walk);
            final Object[] wp = (Object[])wPins.get(walk);
            for (int i = 0; i < size; i++)
            {
                final Object pin = null == wp || i >= wp.length ? null : wp[i];
                final Object anchor = null == pin ? null : pAnchor.get(pin);
                assertThat(next[i]).as(at + " a paused frame holds no node: its anchor does").isNull();
                if (null == anchor)
                {
                    continue; // it handed out nothing next when it paused
                }
                assertThat((boolean)wPinned.get(walk)).as(at + " pinned").isTrue();
                final Object node = aNode.get(anchor);
                if (null == node)
                {
                    assertThat(anchorsInMap).as(at + " orphan not in map").doesNotContain(anchor);
                    if (orphans.add(anchor))
                    {
                        walkList.accept(anchor, "orphan");
                    }
                }
                else
                {
                    mappedFrames++;
                    assertThat(pins.get(node)).as(at + " frame's anchor is the map's").isSameAs(anchor);
                    assertThat(live).as(at + " next live").contains(node);
                    assertThat(parentF.get(node)).as(at + " next under the frame's node").isSameAs(nodes[i]);
                }
                assertThat(listedIn.get(pin)).as(at + " frame in its anchor's list").isSameAs(anchor);
            }
        }
        int mappedPins = 0;
        for (final Object a : anchorsInMap) mappedPins += (int)aCount.get(a);
        assertThat(mappedPins).as(at + " no pin beyond the paused frames").isEqualTo(mappedFrames);
        assertThat(store.pinCount()).isEqualTo(mappedFrames);
        for (final RetainedStore.Walk walk : notPaused)
        {
            assertThat((boolean)wPinned.get(walk)).as(at + " ended/released not pinned").isFalse();
            final Object[] wp = (Object[])wPins.get(walk);
            if (null == wp) continue;
            for (final Object pin : wp)
            {
                if (null == pin) continue;
                assertThat(pAnchor.get(pin)).as(at + " ended/released pin in no list").isNull();
                assertThat(pBefore.get(pin)).isNull();
                assertThat(pAfter.get(pin)).isNull();
                assertThat(listedIn).doesNotContainKey(pin);
            }
        }
    }
}
