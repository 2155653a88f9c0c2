package io.ringmq.pipeline;

import com.lmax.disruptor.EventPoller;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.status.ErrorLog;
import org.agrona.concurrent.Agent;

/**
 * Runs one or more consecutive stages inside an Agrona agent, each polled through its Disruptor
 * {@link EventPoller}, at most {@code batchLimit} events per stage per duty cycle (as the Disruptor's batch
 * limit and Aeron's drain limits), so stages sharing a thread with I/O take turns.
 * <p>
 * Fail closed: a stage that throws has the error counted and logged once per cause, and the slot is marked
 * {@link IngressEvent#failed}; that stage and every later one then see only {@link Stage#onFailed}, so nothing
 * acts on a half-filled slot, and the last stage closes the connection. When it has done work it wakes the next
 * thread downstream.
 */
public final class StageAgent implements Agent
{
    private final String roleName;
    private final Step[] steps;
    private final Sequence upstream;
    private final Sequence last;
    private RingBuffer<IngressEvent> ring;
    private Runnable afterWork = () ->
    {
    };

    StageAgent(final String roleName, final Step[] steps, final Sequence upstream, final Sequence last)
    {
        this.roleName = roleName;
        this.steps = steps;
        this.upstream = upstream;
        this.last = last;
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
     * @param ring the ring, to tell when events wait for the first of these stages.
     * @return this.
     */
    public StageAgent ring(final RingBuffer<IngressEvent> ring)
    {
        this.ring = ring;
        return this;
    }

    /**
     * @return true when events are waiting for these stages (for an idle strategy's last look before sleeping).
     */
    public boolean hasPendingWork()
    {
        for (final Step step : steps)
        {
            if (step.stage.hasPendingWork())
            {
                return true;
            }
        }
        final long available = null != upstream ? upstream.get() : null != ring ? ring.getCursor() : -1;
        return available > last.get();
    }

    public int doWork() throws Exception
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
    static final class Step implements EventPoller.Handler<IngressEvent>
    {
        private final Stage stage;
        private final EventPoller<IngressEvent> poller;
        private final ErrorLog errors;
        private final int batchLimit;
        private final OwnerThread owner;
        private int handled;

        Step(final Stage stage, final EventPoller<IngressEvent> poller, final ErrorLog errors, final int batchLimit)
        {
            this.stage = stage;
            this.poller = poller;
            this.errors = errors;
            this.batchLimit = batchLimit;
            this.owner = new OwnerThread(stage.name() + " stage");
        }

        int poll() throws Exception
        {
            handled = 0;
            poller.poll(this);
            return handled;
        }

        public boolean onEvent(final IngressEvent event, final long sequence, final boolean endOfBatch)
        {
            assert owner.isCurrent();
            final boolean more = ++handled < batchLimit;
            final boolean last = endOfBatch || !more; // the batch ends here either way: flush
            if (!event.failed)
            {
                try
                {
                    stage.onEvent(event, last);
                    return more;
                }
                catch (final Throwable error)
                {
                    event.failed = true; // written before the stage's sequence moves on: later stages see it
                    errors.record(stage.name() + " stage", error);
                }
            }
            try
            {
                stage.onFailed(event, last);
            }
            catch (final Throwable error)
            {
                errors.record(stage.name() + " stage (failed slot)", error);
            }
            return more;
        }
    }
}
