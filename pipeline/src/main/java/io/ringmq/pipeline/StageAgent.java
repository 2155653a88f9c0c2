package io.ringmq.pipeline;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.ErrorLog;
import io.ringmq.pipeline.status.LatencySink;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.Agent;

/**
 * Runs one or more stages inside an Agrona agent, each polled through its {@link StagePoller}, in batches of at most
 * {@code batchLimit} events and at most {@code turnLimit} per stage per duty cycle (as the Disruptor's batch limit
 * and Aeron's drain limits), so stages sharing a thread with I/O take turns.
 * <p>
 * Fail closed: a stage that throws has the error counted and logged once per cause, and the slot is marked
 * {@link IngressEvent#failed}; that stage and every later one then see only {@link Stage#onFailed}, so nothing
 * acts on a half-filled slot, and the delivery shard of the connection closes it. When it has done work it wakes
 * the threads downstream.
 */
public final class StageAgent implements Agent
{
    private final String roleName;
    private final Step[] steps;
    private Runnable afterWork = () ->
    {
    };

    StageAgent(final String roleName, final Step[] steps)
    {
        this.roleName = roleName;
        this.steps = steps;
    }

    /**
     * @param afterWork called after a duty cycle that handled events, e.g. to wake the next stage's thread.
     * @return this.
     */
    public StageAgent afterWork(final Runnable afterWork)
    {
        this.afterWork = afterWork;
        return this;
    }

    /**
     * @return true when events are waiting for these stages (for an idle strategy's last look before sleeping).
     */
    public boolean hasPendingWork()
    {
        for (final Step step : steps)
        {
            if (step.stage.hasPendingWork() || step.poller.hasAvailable())
            {
                return true;
            }
        }
        return false;
    }

    /**
     * @return true when a stage of this agent has work waiting for room another thread frees
     * ({@link Stage#waitsForRoom()}); asked on the agent's thread.
     */
    public boolean waitsForRoom()
    {
        for (final Step step : steps)
        {
            if (step.stage.waitsForRoom())
            {
                return true;
            }
        }
        return false;
    }

    /**
     * @return how long the agent's thread may sleep before one of its stages has work due on its own clock
     * ({@link Stage#wakeWithinMs()}); asked on the agent's thread.
     */
    public long wakeWithinMs()
    {
        long within = Long.MAX_VALUE;
        for (final Step step : steps)
        {
            within = Math.min(within, step.stage.wakeWithinMs());
        }
        return within;
    }

    public int doWork()
    {
        int work = 0;
        for (final Step step : steps)
        {
            work += step.stage.doDutyCycle();
            work += step.poll();
        }
        if (work > 0)
        {
            afterWork.run();
        }
        return work;
    }

    public String roleName()
    {
        return roleName;
    }

    /**
     * One stage and its poller.
     */
    static final class Step implements StagePoller.Handler
    {
        private final Stage stage;
        private final StagePoller poller;
        private final ErrorLog errors;
        private final int batchLimit;
        /** The most events handled per {@link #poll()}, in batches of at most {@link #batchLimit}. */
        private final int turnLimit;
        private final OwnerThread owner;
        private final BrokerCounters counters;
        private final int workCounter;
        private LatencySink latency;

        Step(final Stage stage, final StagePoller poller, final ErrorLog errors, final int batchLimit)
        {
            this(stage, poller, errors, batchLimit, batchLimit, null, 0);
        }

        /**
         * @param turnLimit   the most events handled per {@link #poll()} (at least {@code batchLimit}), each batch
         *                    of at most {@code batchLimit} ended ({@link Stage#onBatchEnd()}) before the next.
         * @param workCounter the counter of events this stage handled, added once per batch.
         */
        Step(final Stage stage, final StagePoller poller, final ErrorLog errors, final int batchLimit,
            final int turnLimit, final BrokerCounters counters, final int workCounter)
        {
            if (batchLimit < 1 || turnLimit < batchLimit)
            {
                throw new IllegalArgumentException("batch limit " + batchLimit + ", turn limit " + turnLimit);
            }
            this.stage = stage;
            this.poller = poller;
            this.errors = errors;
            this.batchLimit = batchLimit;
            this.turnLimit = turnLimit;
            this.owner = new OwnerThread(stage.name() + " stage");
            this.counters = counters;
            this.workCounter = workCounter;
        }

        Stage stage()
        {
            return stage;
        }

        /**
         * Handles what waits, batch by batch, until a batch comes back short (nothing more waits, or the stage
         * stopped for room) or the turn's limit is reached; each batch ends (the stage's flush, its commit) before
         * the next, so a long turn sends and commits as often as a short one.
         *
         * @return events handled.
         */
        int poll()
        {
            assert owner.isCurrent();
            int total = 0;
            int limit;
            int handled;
            do
            {
                limit = Math.min(batchLimit, turnLimit - total);
                handled = pollBatch(limit);
                total += handled;
            }
            while (handled == limit && total < turnLimit);
            return total;
        }

        private int pollBatch(final int limit)
        {
            final int handled = poller.poll(this, limit);
            if (handled > 0)
            {
                if (null != counters)
                {
                    counters.add(workCounter, handled);
                }
                try
                {
                    stage.onBatchEnd();
                }
                catch (final Throwable error)
                {
                    errors.record(stage.name() + " stage (end of batch)", error);
                }
            }
            return handled;
        }

        /**
         * @param latency where to report each PUBLISH's time from ingress to the end of this stage; set before the
         *                step's thread starts, null for none.
         */
        void latency(final LatencySink latency)
        {
            this.latency = latency;
        }

        public void endOfBatch()
        {
            try
            {
                stage.commitBatch();
            }
            catch (final Throwable error)
            {
                errors.record(stage.name() + " stage (commit)", error); // the stage marked the batch failed
            }
        }

        public boolean onEvent(final IngressEvent event, final long sequence)
        {
            if (!event.failed)
            {
                try
                {
                    final boolean done = stage.onEvent(event);
                    if (done && null != latency && IngressEvent.PACKET == event.kind &&
                        PacketType.PUBLISH == event.packetType)
                    {
                        latency.record(System.nanoTime() - event.ingressNs);
                    }
                    return done;
                }
                catch (final Throwable error)
                {
                    event.failed = true; // written before this stage's sequence moves on: later stages see it
                    errors.record(stage.name() + " stage", error);
                }
            }
            try
            {
                stage.onFailed(event);
            }
            catch (final Throwable error)
            {
                errors.record(stage.name() + " stage (failed slot)", error);
            }
            return true;
        }
    }
}
