package io.ringmq.transport;

import io.ringmq.pipeline.status.BrokerCounters;

/**
 * One log line per interval naming every limit hit and every drop since the last line, with how many, so an
 * operator sees limits at work without a line per event (and nothing is logged on the hot path). Runs in I/O
 * agent 0's duty cycle.
 */
final class LimitReport
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");
    private static final String[] MARKS = {"refused", "dropped", "full", "timeouts", "too_large", "shed", "not_sent",
        "backlogged", "blocked", "past_their"};

    private final BrokerCounters counters;
    private final long intervalMs;
    private final long[] last = new long[BrokerCounters.count()];
    private final boolean[] limit = new boolean[BrokerCounters.count()];
    private long nextMs;

    LimitReport(final BrokerCounters counters, final long intervalMs, final long nowMs)
    {
        this.counters = counters;
        this.intervalMs = intervalMs;
        this.nextMs = nowMs + intervalMs;
        for (int i = 0; i < limit.length; i++)
        {
            final String key = BrokerCounters.key(i);
            for (final String mark : MARKS)
            {
                limit[i] |= key.contains(mark);
            }
            last[i] = counters.get(i);
        }
    }

    /**
     * @return the line logged, or null when it was not time yet or no limit was hit.
     */
    String poll(final long nowMs)
    {
        if (intervalMs <= 0 || nowMs < nextMs)
        {
            return null;
        }
        nextMs = nowMs + intervalMs;
        StringBuilder line = null;
        for (int i = 0; i < limit.length; i++)
        {
            if (!limit[i])
            {
                continue;
            }
            final long value = counters.get(i);
            final long delta = value - last[i];
            last[i] = value;
            if (delta > 0)
            {
                line = null == line ? new StringBuilder("limits hit in the last " + intervalMs / 1000 + " s: ") :
                    line.append(", ");
                line.append(BrokerCounters.label(i)).append(" +").append(delta);
            }
        }
        if (null == line)
        {
            return null;
        }
        final String text = line.toString();
        LOG.log(System.Logger.Level.WARNING, text);
        return text;
    }
}
