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
    private final RetainedLine line = new RetainedLine(new RetainedStore());

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
        }
        assertThat(victimBytes / 10).as("the other address's subscriber: a part every interval, about 10 MB/s")
            .isGreaterThan(9_000_000);
        assertThat(greedyBytes / 10).as("the greedy address: its share of the window")
            .isLessThanOrEqualTo(RetainedLine.BYTES_PER_ADDRESS_WINDOW + RetainedLine.PART_BYTES);
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
