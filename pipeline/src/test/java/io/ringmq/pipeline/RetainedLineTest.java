package io.ringmq.pipeline;

import io.ringmq.pipeline.retained.RetainedStore;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RetainedLine}'s turns, on a clock the test moves.
 */
class RetainedLineTest
{
    private final RetainedDrains drains = new RetainedDrains();
    private final SessionWindows windows = new SessionWindows(16);
    private final RetainedLine line = new RetainedLine(new RetainedStore(), drains, windows);

    @Test
    @DisplayName("a session's parts come a part interval apart, sessions in turn")
    void partsComeInTurn()
    {
        final long now = 1_000;
        final RetainedLine.Pending a = record(1, 10, 0, now, "a/#");
        final RetainedLine.Pending b = record(2, 20, 0, now, "b/#");
        assertThat(line.due(now)).isFalse();
        assertThat(line.dueInMs(now)).isEqualTo(RetainedLine.PART_INTERVAL_MS);
        final long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, p -> true)).isSameAs(a);
        line.served(a, turn);
        assertThat(line.next(turn, p -> true)).as("then the other session").isSameAs(b);
        line.served(b, turn);
        assertThat(line.next(turn, p -> true)).as("each waits its interval again").isNull();
    }

    @Test
    @DisplayName("the parts carry at most 64 MiB a second together: past it every session's turn waits for the next " +
        "second")
    void partsShareAWindow()
    {
        final long now = 1_000;
        final RetainedLine.Pending a = record(1, 10, 0, now, "a/#");
        final long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.due(turn)).isTrue();
        line.sent(a, RetainedLine.BYTES_PER_WINDOW, turn);
        assertThat(line.due(turn)).as("the window is spent").isFalse();
        assertThat(line.next(turn, p -> true)).isNull();
        assertThat(line.dueInMs(turn)).as("until the window ends").isEqualTo(RetainedLine.WINDOW_MS);
        final long next = turn + RetainedLine.WINDOW_MS;
        assertThat(line.due(next)).isTrue();
        assertThat(line.next(next, p -> true)).isSameAs(a);
    }

    @Test
    @DisplayName("a record whose connection ended is dropped when its turn comes, and the next served")
    void endedConnectionsAreDropped()
    {
        final long now = 1_000;
        final RetainedLine.Pending gone = record(1, 10, 0, now, "a/#");
        final RetainedLine.Pending live = record(2, 20, 0, now, "b/#");
        final long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, p -> p != gone)).isSameAs(live);
        assertThat(line.waiting(1)).as("no record any more").isEqualTo(-1);
        assertThat(line.of(2, 20)).isSameAs(live);
        assertThat(line.of(2, 21)).as("another connection of the session: its record is dropped").isNull();
        assertThat(line.waiting(2)).isEqualTo(-1);
    }

    @Test
    @DisplayName("one client address's sessions take at most a quarter of the window together: a thousand of them " +
        "reading nothing leave another address's subscriber its 10 MB/s (review of 75ed794: 52 KB/s)")
    void oneAddressTakesItsShare()
    {
        long now = 1_000;
        for (int s = 1; s <= 1_000; s++)
        {
            record(s, s * 10L, 7, now, "#");
        }
        final RetainedLine.Pending victim = record(5_000, 50_000, 9, now, "#");
        long victimBytes = 0;
        long greedyBytes = 0;
        final long end = now + 10_000;
        while (now < end)
        {
            final RetainedLine.Pending p = line.next(now, x -> true);
            if (null == p)
            {
                now += Math.max(1, Math.min(line.dueInMs(now), end - now));
                continue;
            }
            line.sent(p, RetainedLine.PART_BYTES, now);
            if (p == victim)
            {
                victimBytes += RetainedLine.PART_BYTES;
            }
            else
            {
                greedyBytes += RetainedLine.PART_BYTES;
            }
            line.served(p, now);
            readAll(p);
        }
        assertThat(victimBytes / 10).as("the other address's subscriber: a part every interval, about 10 MB/s")
            .isGreaterThan(9_000_000);
        assertThat(greedyBytes / 10).as("the greedy address: its share of the window")
            .isLessThanOrEqualTo(RetainedLine.BYTES_PER_ADDRESS_WINDOW + RetainedLine.PART_BYTES);
    }

    @Test
    @DisplayName("MQTT-3.3.1-6: a session's next part waits while its connection owes more than a part of the last, " +
        "and goes once its client read it")
    void aSlowReaderGetsItsNextPartAsItReads()
    {
        final long now = 1_000;
        final RetainedLine.Pending p = record(1, 10, 0, now, "#");
        long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, x -> true)).as("the first part: nothing owed is known").isSameAs(p);
        line.served(p, turn);
        drains.report(p.drainSlot, 10, RetainedLine.OWED_BEFORE_NEXT_PART + 1, true);
        turn += RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, x -> true)).as("it owes more than a part").isNull();
        assertThat(line.size()).as("still in line").isEqualTo(1);
        drains.report(p.drainSlot, 10, RetainedLine.OWED_BEFORE_NEXT_PART, false);
        turn += 10 * RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, x -> true)).as("read down to a part").isSameAs(p);
    }

    @Test
    @DisplayName("a part its connection's agent has not written of (another connection's tag in the slot, or none) " +
        "holds the next a quarter second, no longer")
    void anUnconfirmedPartHoldsTheNextAQuarterSecond()
    {
        final long now = 1_000;
        final RetainedLine.Pending p = record(1, 10, 0, now, "#");
        final long first = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(first, x -> true)).isSameAs(p);
        line.served(p, first);
        drains.report(p.drainSlot, 11, 0, true); // another connection's write, as one that held the slot before
        assertThat(line.next(first + RetainedLine.PART_INTERVAL_MS, x -> true)).isNull();
        assertThat(line.next(first + RetainedLine.UNCONFIRMED_WAIT_MS - 1, x -> true)).isNull();
        assertThat(line.next(first + 2 * RetainedLine.UNCONFIRMED_WAIT_MS, x -> true)).isSameAs(p);
    }

    @Test
    @DisplayName("a QoS 1 subscription's part waits while its session's in-flight window is full, and carries that " +
        "room and a quarter of --max-queued at most")
    void aFullWindowHoldsAReliablePart()
    {
        final long now = 1_000;
        final RetainedLine.Pending p = reliableRecord(3, 30, now);
        windows.free(3, 0);
        final long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, x -> true)).as("no room in flight").isNull();
        assertThat(line.reliableRoom(3, 1_000)).as("at least one message, were it to go").isEqualTo(250);
        windows.free(3, 20);
        assertThat(line.next(turn + 10 * RetainedLine.PART_INTERVAL_MS, x -> true)).isSameAs(p);
        assertThat(line.reliableRoom(3, 1_000)).isEqualTo(270);
        assertThat(line.reliableRoom(3, 0)).isEqualTo(20);
        windows.free(3, 0);
        assertThat(line.reliableRoom(3, 0)).isEqualTo(1);
    }

    @Test
    @DisplayName("a QoS 1 subscription's part waits while its connection owes more than a part too, its window free: " +
        "messages retained at QoS 0 go to it at QoS 0, never shed (review of 63b35296: five subscribers of '#' at " +
        "QoS 1 reading nothing ran the broker past its memory budget)")
    void aReliablePartWaitsForItsQos0ToBeRead()
    {
        final long now = 1_000;
        final RetainedLine.Pending p = reliableRecord(4, 40, now);
        windows.free(4, 32);
        long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, x -> true)).isSameAs(p);
        line.served(p, turn);
        turn += RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, x -> true)).as("nothing written of it: its QoS 1 messages are not watched")
            .isSameAs(p);
        line.served(p, turn);
        drains.report(p.drainSlot, 40, RetainedLine.OWED_BEFORE_NEXT_PART + 1, true);
        turn += RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, x -> true)).as("its QoS 0 messages are owed").isNull();
        drains.report(p.drainSlot, 40, 0, false);
        assertThat(line.next(turn + 10 * RetainedLine.PART_INTERVAL_MS, x -> true)).isSameAs(p);
    }

    @Test
    @DisplayName("the slots are shared: past 1,024 sessions at once the rest are paced by the clock alone, and a " +
        "slot given back goes to the next")
    void slotsAreSharedAndGivenBack()
    {
        final long now = 1_000;
        final RetainedLine.Pending[] records = new RetainedLine.Pending[RetainedDrains.SLOTS + 1];
        for (int s = 0; s < records.length; s++)
        {
            records[s] = record(s, s + 100L, 0, now, "#");
        }
        assertThat(records[RetainedDrains.SLOTS].drainSlot).isEqualTo(RetainedDrains.NONE);
        final int slot = records[0].drainSlot;
        line.drop(records[0]);
        assertThat(records[0].drainSlot).isEqualTo(RetainedDrains.NONE);
        line.drop(records[0]); // twice: given back once
        assertThat(record(5_000, 5_000, 0, now, "#").drainSlot).isEqualTo(slot);
        assertThat(record(5_001, 5_001, 0, now, "#").drainSlot).isEqualTo(RetainedDrains.NONE);
    }

    @Test
    @DisplayName("a part whose walk found nothing in its steps counts nothing against its address, and its session " +
        "keeps its turns (review: the count threw, and the session never got a retained message again)")
    void aPartOfNothingKeepsItsTurns()
    {
        final long now = 1_000;
        final RetainedLine.Pending p = record(1, 10, 7, now, "#");
        final long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, x -> true)).isSameAs(p);
        line.sent(p, 0, turn);
        line.served(p, turn);
        readAll(p);
        assertThat(line.next(turn + RetainedLine.PART_INTERVAL_MS, x -> true)).isSameAs(p);
    }

    /**
     * The session's client read all it was sent, as its agent writes after a flush.
     */
    private void readAll(final RetainedLine.Pending pending)
    {
        if (pending.drainSlot != RetainedDrains.NONE)
        {
            drains.report(pending.drainSlot, pending.connectionId, 0, true);
        }
    }

    /**
     * @return a record of a session opened at {@code nowMs}, one QoS 1 subscription of '#' waiting.
     */
    private RetainedLine.Pending reliableRecord(final int sessionId, final long connectionId, final long nowMs)
    {
        final RetainedLine.Pending pending = line.open(sessionId, connectionId, 0, nowMs);
        final io.ringmq.pipeline.session.Subscription qos1 =
            new io.ringmq.pipeline.session.Subscription(null, "#", null);
        qos1.update(1, 0);
        pending.waiting.add(qos1);
        return pending;
    }

    /**
     * @return a record of a session opened at {@code nowMs}, one subscription waiting.
     */
    private RetainedLine.Pending record(final int sessionId, final long connectionId, final long addressKey,
        final long nowMs, final String filter)
    {
        final RetainedLine.Pending pending = line.open(sessionId, connectionId, addressKey, nowMs);
        pending.waiting.add(new io.ringmq.pipeline.session.Subscription(null, filter, null));
        return pending;
    }
}
