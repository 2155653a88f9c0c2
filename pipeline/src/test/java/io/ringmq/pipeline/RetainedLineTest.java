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
        final RetainedLine.Pending a = line.open(1, 10, 0, now);
        final RetainedLine.Pending b = line.open(2, 20, 0, now);
        a.waiting.add(new io.ringmq.pipeline.session.Subscription(null, "a/#", null));
        b.waiting.add(new io.ringmq.pipeline.session.Subscription(null, "b/#", null));
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
        final RetainedLine.Pending a = line.open(1, 10, 0, now);
        a.waiting.add(new io.ringmq.pipeline.session.Subscription(null, "a/#", null));
        final long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.due(turn)).isTrue();
        line.sent(RetainedLine.BYTES_PER_WINDOW, turn);
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
        final RetainedLine.Pending gone = line.open(1, 10, 0, now);
        final RetainedLine.Pending live = line.open(2, 20, 0, now);
        gone.waiting.add(new io.ringmq.pipeline.session.Subscription(null, "a/#", null));
        live.waiting.add(new io.ringmq.pipeline.session.Subscription(null, "b/#", null));
        final long turn = now + RetainedLine.PART_INTERVAL_MS;
        assertThat(line.next(turn, p -> p != gone)).isSameAs(live);
        assertThat(line.waiting(1)).as("no record any more").isEqualTo(-1);
        assertThat(line.of(2, 20)).isSameAs(live);
        assertThat(line.of(2, 21)).as("another connection of the session: its record is dropped").isNull();
        assertThat(line.waiting(2)).isEqualTo(-1);
    }
}
