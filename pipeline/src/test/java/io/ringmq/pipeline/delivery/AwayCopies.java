package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SessionWindows;
import org.agrona.concurrent.UnsafeBuffer;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the unit tests of {@link AwayRoom} build on: a pool with no bound, the windows' registry, copies of a given size,
 * a look at private fields, and the checks of a plan's lists and drops that the randomized tests share.
 */
final class AwayCopies
{
    final SharedMessage.Pool pool = new SharedMessage.Pool(0, 0, Long.MAX_VALUE);
    final SessionWindows windows = new SessionWindows(4096);
    /** A shard's sessions, for the tests that list their sessions away here ({@link #session}, {@link #queue}). */
    final ShardSessions sessions = new ShardSessions();
    private int nextId;

    /**
     * @return a copy with a one-byte topic and {@code payloadLength} bytes of payload, with no reference yet.
     */
    SharedMessage copy(final int payloadLength)
    {
        final UnsafeBuffer bytes = new UnsafeBuffer(new byte[payloadLength + 1]);
        return pool.copy(bytes, 0, 1, bytes, 0, 0, bytes, 1, payloadLength, Message.NEVER, 1);
    }

    /**
     * @return a new session whose client is away, kept in {@link #sessions}.
     */
    DeliverySession session()
    {
        final DeliverySession session = new DeliverySession(nextId++, true, 16, windows);
        sessions.put(session);
        return session;
    }

    /**
     * @return a copy a connected client holds too (a reference of its own, never released): a pin, which no plan frees.
     */
    SharedMessage pinned(final int payloadLength)
    {
        final SharedMessage copy = copy(payloadLength);
        copy.retain();
        return copy;
    }

    /**
     * Queues {@code copy} (one more reference) for {@code session}, listed as away with a queue in {@link #sessions}.
     */
    void queue(final DeliverySession session, final SharedMessage copy)
    {
        copy.retain();
        session.enqueue(copy, 1, false, null, 0);
        sessions.queuedAway(session);
    }

    /**
     * An attacker's pin mass (review of 59223744, helper-155): {@code queues} new sessions away, each queueing the same
     * {@code copies} pins, one-byte copies a connected client holds too.
     */
    void pinMass(final int queues, final int copies)
    {
        final List<DeliverySession> mass = new ArrayList<>();
        for (int s = 0; s < queues; s++)
        {
            mass.add(session());
        }
        for (int m = 0; m < copies; m++)
        {
            final SharedMessage pin = pinned(10);
            for (final DeliverySession session : mass)
            {
                queue(session, pin);
            }
        }
    }

    static Object field(final Object o, final String name) throws ReflectiveOperationException
    {
        final Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }

    static void setField(final Object o, final String name, final Object value) throws ReflectiveOperationException
    {
        final Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        f.set(o, value);
    }

    /**
     * Checks the offerer lists and counts the room holds at a plan's end: each copy's list is exactly the queues that
     * offer it, none offers a copy blocked in the plan.
     */
    static void checkOfferLists(final AwayRoom room) throws ReflectiveOperationException
    {
        final int count = (int)field(room, "count");
        final long plan = (long)field(room, "plan");
        final SharedMessage[] offered = (SharedMessage[])field(room, "offered");
        final int[] sameOffer = (int[])field(room, "sameOffer");
        final Map<SharedMessage, List<Integer>> offering = new IdentityHashMap<>();
        for (int i = 0; i < count; i++)
        {
            if (null != offered[i])
            {
                assertThat(offered[i].blockedInPlan).as("queue " + i + " offers a blocked copy").isNotEqualTo(plan);
                assertThat(offered[i].offeredInPlan).isEqualTo(plan);
                offering.computeIfAbsent(offered[i], k -> new ArrayList<>()).add(i);
            }
        }
        for (final Map.Entry<SharedMessage, List<Integer>> e : offering.entrySet())
        {
            final SharedMessage c = e.getKey();
            final List<Integer> listed = new ArrayList<>();
            for (int j = c.firstOfferer; j != -1; j = sameOffer[j])
            {
                assertThat(listed).as("a queue twice in one list").doesNotContain(j);
                assertThat(listed.size()).as("a list that loops").isLessThan(count);
                listed.add(j);
                assertThat(offered[j]).as("queue " + j + " listed for a copy it does not offer").isSameAs(c);
            }
            assertThat(listed).as("the list is exactly the queues offering it").containsExactlyInAnyOrderElementsOf(
                e.getValue());
            assertThat(c.offeredBy).as("offeredBy").isEqualTo(listed.size());
        }
    }

    /**
     * Checks a plan's drops: places go down in each queue, a copy's drops come together, and each copy is dropped from
     * every entry naming it and held by nothing but sessions away.
     *
     * @return the copies taken, in the plan's order.
     */
    static List<SharedMessage> checkDrops(final AwayRoom room, final String as)
    {
        final List<SharedMessage> taken = new ArrayList<>();
        final Map<DeliverySession, Integer> lastPlace = new IdentityHashMap<>();
        final Map<SharedMessage, Integer> dropsOf = new IdentityHashMap<>();
        for (int d = 0; d < room.drops(); d++)
        {
            final DeliverySession session = room.dropSession(d);
            final int place = room.dropPlace(d);
            final Integer last = lastPlace.put(session, place);
            assertThat(last == null || place < last).as(as + ": places go down").isTrue();
            final SharedMessage m = session.queuedMessage(place);
            assertThat(m.heldOnlyAway()).as(as + ": a copy held elsewhere dropped").isTrue();
            if (taken.isEmpty() || taken.get(taken.size() - 1) != m)
            {
                assertThat(taken).as(as + ": a copy's drops are together").doesNotContain(m);
                taken.add(m);
            }
            dropsOf.merge(m, 1, Integer::sum);
        }
        dropsOf.forEach((m, k) -> assertThat(k).as(as + ": dropped from every entry naming it").isEqualTo(
            m.awayQueued));
        return taken;
    }

    /**
     * Carries out the room's last plan as {@code MessageDelivery.reclaim} does, and checks it freed exactly
     * {@code planned}.
     */
    void carryOut(final AwayRoom room, final long planned, final String as)
    {
        final long freeBefore = pool.freeBytes();
        for (int d = 0; d < room.drops(); d++)
        {
            final SharedMessage m = room.dropSession(d).queuedMessage(room.dropPlace(d));
            room.dropSession(d).removeQueued(room.dropPlace(d));
            pool.release(m);
        }
        room.clear();
        assertThat(pool.freeBytes() - freeBefore).as(as + " exact").isEqualTo(planned);
    }
}
