package io.ringmq.pipeline;

import com.lmax.disruptor.RingBuffer;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.ErrorLog;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A stage's turn on its thread ({@link StageAgent.Step#poll()}): batch after batch up to the turn's limit, each batch
 * ended (the stage's flush and commit) before the next, and the turn over at the first short batch.
 */
class StageTurnTest
{
    private final BrokerCounters counters = new BrokerCounters();
    private final RingBuffer<IngressEvent> ring = RingBuffer.createSingleProducer(() -> new IngressEvent(64), 64);
    private final StagePoller poller = new StagePoller(ring);
    /** The size of each batch the stage saw end. */
    private final List<Integer> batches = new ArrayList<>();
    private int inBatch;
    /** Events the stage leaves waiting from this count on (it waits for room), or -1. */
    private int stopAt = -1;
    private int handled;
    private final Stage stage = new Stage()
    {
        public boolean onEvent(final IngressEvent event)
        {
            if (handled == stopAt)
            {
                return false;
            }
            handled++;
            inBatch++;
            return true;
        }

        public void onBatchEnd()
        {
            batches.add(inBatch);
            inBatch = 0;
        }

        public String name()
        {
            return "counting";
        }
    };

    StageTurnTest()
    {
        ring.addGatingSequences(poller.sequence());
    }

    private void publish(final int count)
    {
        for (int i = 0; i < count; i++)
        {
            ring.publish(ring.next());
        }
    }

    @Test
    @DisplayName("a turn runs batches up to its limit, ending each before the next")
    void batchesUpToTheTurnLimit()
    {
        final StageAgent.Step step = new StageAgent.Step(stage, poller, new ErrorLog(counters), 4, 10, null, 0);
        publish(25);

        assertThat(step.poll()).isEqualTo(10);
        assertThat(batches).containsExactly(4, 4, 2);
        assertThat(step.poll()).isEqualTo(10);
        assertThat(step.poll()).isEqualTo(5);
        assertThat(batches).containsExactly(4, 4, 2, 4, 4, 2, 4, 1);
        assertThat(step.poll()).isZero();
    }

    @Test
    @DisplayName("a short batch ends the turn: nothing more waits, or the stage waits for room")
    void aShortBatchEndsTheTurn()
    {
        final StageAgent.Step step = new StageAgent.Step(stage, poller, new ErrorLog(counters), 4, 16, null, 0);
        publish(6);
        assertThat(step.poll()).isEqualTo(6);
        assertThat(batches).containsExactly(4, 2);

        stopAt = 9;
        publish(8);
        assertThat(step.poll()).as("stops where the stage waits").isEqualTo(3);
        assertThat(batches).containsExactly(4, 2, 3);
        stopAt = -1;
        assertThat(step.poll()).isEqualTo(5);
    }

    @Test
    @DisplayName("one batch per turn unless a turn limit is given; a limit below the batch is refused")
    void oneBatchPerTurnByDefault()
    {
        final StageAgent.Step step = new StageAgent.Step(stage, poller, new ErrorLog(counters), 4);
        publish(10);
        assertThat(step.poll()).isEqualTo(4);
        assertThat(batches).containsExactly(4);
        assertThatThrownBy(() -> new StageAgent.Step(stage, poller, new ErrorLog(counters), 4, 3, null, 0))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new StageAgent.Step(stage, poller, new ErrorLog(counters), 0, 4, null, 0))
            .isInstanceOf(IllegalArgumentException.class);
    }
}
