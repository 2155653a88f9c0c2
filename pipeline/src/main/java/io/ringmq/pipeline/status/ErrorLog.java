package io.ringmq.pipeline.status;

import java.util.HashSet;
import java.util.Set;

/**
 * Logs each distinct unexpected error once (by type, message and the frame that threw) and counts all of them,
 * so a fault that repeats per message neither floods the log nor goes unseen.
 */
public final class ErrorLog
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");
    private static final int MAX_DISTINCT = 1_000;

    private final Set<String> seen = new HashSet<>();
    private final BrokerCounters counters;

    public ErrorLog(final BrokerCounters counters)
    {
        this.counters = counters;
    }

    /**
     * Counts the error and logs it the first time its kind is seen.
     */
    public synchronized void record(final String where, final Throwable error)
    {
        counters.increment(BrokerCounters.UNEXPECTED_ERRORS);
        final StackTraceElement[] trace = error.getStackTrace();
        final String key = where + '|' + error.getClass().getName() + '|' + error.getMessage() + '|' +
            (trace.length > 0 ? trace[0] : "");
        if (seen.size() < MAX_DISTINCT && seen.add(key))
        {
            LOG.log(System.Logger.Level.ERROR, "unexpected error in " + where + " (logged once per cause)", error);
        }
    }
}
