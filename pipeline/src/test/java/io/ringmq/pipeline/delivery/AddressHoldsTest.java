package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SessionWindows;
import io.ringmq.pipeline.auth.AddressKeys;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the connected sessions of one client address hold together: a copy's bytes once per address however many of
 * its sessions' entries name it, an entry's allowance for each further one, and nothing left once they are gone.
 */
class AddressHoldsTest
{
    private static final int LENGTH = 1_000;
    private final SharedMessage.Pool pool = new SharedMessage.Pool(0, 16, Long.MAX_VALUE);
    private final SessionWindows windows = new SessionWindows(64);
    private final AddressHolds holds = new AddressHolds();

    private SharedMessage message()
    {
        final UnsafeBuffer bytes = new UnsafeBuffer(new byte[LENGTH]);
        return pool.copy(bytes, 0, 1, bytes, 0, 0, bytes, 1, LENGTH - 1, Message.NEVER, 1);
    }

    private DeliverySession bound(final int id, final long addressKey)
    {
        final DeliverySession session = new DeliverySession(id, true, 16, windows);
        session.bind(100 + id, holds, addressKey);
        return session;
    }

    @Test
    @DisplayName("sessions of one address sharing a copy: its bytes once and 32 bytes for each further entry; " +
        "another address holding it too is charged it once as well, whichever holds it first (review of c670a19: " +
        "the second address was charged it whole for each of its entries)")
    void aSharedCopyIsChargedOncePerAddress()
    {
        final DeliverySession a1 = bound(1, 1);
        final DeliverySession a2 = bound(2, 1);
        final DeliverySession b1 = bound(3, 2);
        final DeliverySession b2 = bound(4, 2);
        final SharedMessage copy = message();
        b1.enqueue(copy, 1, false, null, 0);
        a1.enqueue(copy, 1, false, null, 0);
        a2.addInflight(copy, 1, false, null, 0);
        b2.enqueue(copy, 1, false, null, 0);
        final long a = holdBytes(a1);
        assertThat(a).isEqualTo(LENGTH + SharedMessage.Pool.ENTRY_ALLOWANCE);
        assertThat(holdBytes(b1)).isEqualTo(LENGTH + SharedMessage.Pool.ENTRY_ALLOWANCE);
        a1.dequeue();
        assertThat(holdBytes(a2)).isEqualTo(LENGTH);
        a2.removeInflight(a2.findInflight(1));
        assertThat(holdBytes(a2)).isZero();
        assertThat(a2.addressHold().tabled()).isZero();
        assertThat(copy.holder).as("counted on the copy by the first address while it held it").isSameAs(b1.addressHold());
        b1.unbind();
        b2.unbind();
        assertThat(copy.holder).isNull();
    }

    @Test
    @DisplayName("a session whose client goes away keeps what it has in flight charged to that address, not what it " +
        "queues, until it comes back or ends; with nothing in flight it leaves the address at once")
    void aSessionAwayKeepsItsWindowCharged()
    {
        final DeliverySession session = bound(1, 1);
        session.addInflight(message(), 1, false, null, 0);
        session.enqueue(message(), 1, false, null, 0);
        assertThat(holdBytes(session)).isEqualTo(2L * LENGTH);
        session.goAway();
        assertThat(session.isOnline()).isFalse();
        assertThat(holdBytes(session)).as("its window alone").isEqualTo(LENGTH);
        session.enqueue(message(), 1, false, null, 0);
        assertThat(holdBytes(session)).as("queued while away: not the address's").isEqualTo(LENGTH);
        session.bind(300, holds, 2);
        assertThat(holds.addresses()).as("left the first address, joined the second").isEqualTo(1);
        assertThat(holdBytes(session)).as("all of it, at the new address").isEqualTo(3L * LENGTH);
        session.removeInflight(session.findInflight(1));
        session.goAway();
        assertThat(session.addressHold()).as("nothing in flight: no address holds it").isNull();
        assertThat(holds.addresses()).isZero();
    }

    @Test
    @DisplayName("an address is forgotten once its last session leaves, and a session that is not limited has no hold")
    void anAddressIsForgottenWithItsLastSession()
    {
        final DeliverySession a1 = bound(1, 1);
        final DeliverySession none = bound(2, AddressKeys.NONE);
        a1.enqueue(message(), 1, false, null, 0);
        none.enqueue(message(), 1, false, null, 0);
        assertThat(holds.addresses()).isEqualTo(1);
        a1.unbind();
        assertThat(holds.addresses()).isZero();
        a1.bind(200, holds, 1);
        assertThat(holdBytes(a1)).as("charged again with what it holds").isEqualTo(LENGTH);
        a1.clear(pool);
        assertThat(holds.addresses()).isZero();
        assertThat(a1.isOnline()).isFalse();
    }

    @Test
    @DisplayName("an address that held 20,000 copies another address held first, and then 10, keeps a table for about " +
        "10, not 20,000: many addresses that each burst once and stay connected cannot hold the heap in empty tables")
    void aDrainedTableShrinks()
    {
        final DeliverySession first = bound(2, 2);
        final DeliverySession session = bound(1, 1);
        for (int i = 0; i < 20_000; i++)
        {
            final SharedMessage copy = message();
            first.enqueue(copy, 1, false, null, 0);
            session.enqueue(copy, 1, false, null, 0);
        }
        assertThat(session.addressHold().tableCapacity()).isGreaterThanOrEqualTo(20_000);
        while (session.queueSize() > 10)
        {
            session.dequeue();
        }
        assertThat(session.addressHold().tabled()).isEqualTo(10);
        assertThat(session.addressHold().tableCapacity()).isLessThanOrEqualTo(AddressHolds.COMPACT_ABOVE);
        assertThat(holdBytes(session)).isEqualTo(10L * LENGTH);
    }

    @Test
    @DisplayName("10,000 random entries, moves, replacements, clients going away and unbinds over 3 addresses and 12 " +
        "copies: each hold stays what its entries are charged (a session away: its window's alone), and every address " +
        "is forgotten, at 0 bytes, once its sessions leave")
    void randomHistoriesBalance()
    {
        final SplittableRandom random = new SplittableRandom(12);
        final List<SharedMessage> copies = new ArrayList<>();
        for (int i = 0; i < 12; i++)
        {
            copies.add(message());
        }
        final List<DeliverySession> sessions = new ArrayList<>();
        for (int i = 0; i < 9; i++)
        {
            sessions.add(bound(i, 1 + i % 3));
        }
        for (int step = 0; step < 10_000; step++)
        {
            final DeliverySession session = sessions.get(random.nextInt(sessions.size()));
            switch (random.nextInt(7))
            {
                case 0 -> session.enqueue(copies.get(random.nextInt(copies.size())), 1, false, null, 0);
                case 1 ->
                {
                    if (session.queueSize() > 0)
                    {
                        final SharedMessage head = session.peekMessage();
                        session.dequeue();
                        if (session.hasInflightRoom())
                        {
                            session.addInflight(head, 1, false, null, 0);
                        }
                    }
                }
                case 2 ->
                {
                    for (int slot = 0; slot < session.windowCapacity(); slot++)
                    {
                        if (null != session.inflightMessage(slot))
                        {
                            session.removeInflight(slot);
                            break;
                        }
                    }
                }
                case 3 ->
                {
                    if (session.queueSize() > 0)
                    {
                        session.replaceQueued(0, copies.get(random.nextInt(copies.size())));
                    }
                }
                case 4 ->
                {
                    if (session.queueSize() > 0)
                    {
                        session.removeNewestQueued();
                    }
                }
                case 5 -> session.goAway(); // its window stays its address's, its queue no longer
                default ->
                {
                    session.unbind();
                    session.bind(1_000 + step, holds, 1 + random.nextInt(3));
                }
            }
            for (final DeliverySession each : sessions)
            {
                assertThat(holdBytes(each)).as("step " + step).isEqualTo(expected(sessions, each));
            }
        }
        for (final DeliverySession session : sessions)
        {
            session.unbind();
        }
        assertThat(holds.addresses()).isZero();
        for (final SharedMessage copy : copies)
        {
            assertThat(copy.holder).as("no address counts entries on it").isNull();
        }
    }

    /**
     * @return what the address of {@code session} should hold: per copy its sessions name, its bytes and an allowance
     * for each further entry.
     */
    private static long expected(final List<DeliverySession> sessions, final DeliverySession of)
    {
        final AddressHolds.Hold hold = of.addressHold();
        if (null == hold)
        {
            return 0;
        }
        final java.util.Map<SharedMessage, Integer> entries = new java.util.IdentityHashMap<>();
        for (final DeliverySession session : sessions)
        {
            if (session.addressHold() != hold)
            {
                continue;
            }
            for (int slot = 0; slot < session.windowCapacity(); slot++)
            {
                if (null != session.inflightMessage(slot))
                {
                    entries.merge(session.inflightMessage(slot), 1, Integer::sum);
                }
            }
            for (int i = 0; i < session.queueSize() && !session.isAwayCharged(); i++)
            {
                entries.merge(session.queuedMessage(i), 1, Integer::sum);
            }
        }
        long bytes = 0;
        for (final java.util.Map.Entry<SharedMessage, Integer> entry : entries.entrySet())
        {
            bytes += entry.getKey().length() + (entry.getValue() - 1L) * SharedMessage.Pool.ENTRY_ALLOWANCE;
        }
        return bytes;
    }

    private static long holdBytes(final DeliverySession session)
    {
        return null == session.addressHold() ? 0 : session.addressHold().bytes();
    }
}
