package io.ringmq.pipeline.status;

import org.agrona.BitUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.errors.DistinctErrorLog;

/**
 * Logs each distinct unexpected error once (by where it was caught, its type, message and stack trace) and counts
 * all of them, so a fault that repeats per message neither floods the log nor goes unseen. Every observation goes
 * into an Agrona {@link DistinctErrorLog} in the counters file (a count and the first and last time per distinct
 * error), which {@code ringmq stat --errors} reads from outside the broker.
 */
public final class ErrorLog
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");

    private final BrokerCounters counters;
    private final AtomicBuffer buffer;
    private final DistinctErrorLog log;
    private int knownEnd;
    private boolean fullLogged;

    /**
     * An error log in the error region of the counters' file.
     */
    public ErrorLog(final BrokerCounters counters)
    {
        this.counters = counters;
        buffer = counters.file().errorLogBuffer();
        log = new DistinctErrorLog(buffer, SystemEpochClock.INSTANCE);
    }

    /**
     * Counts the error, records it in the distinct error log, and logs it the first time its kind is seen.
     */
    public synchronized void record(final String where, final Throwable error)
    {
        counters.increment(BrokerCounters.UNEXPECTED_ERRORS);
        final UnexpectedError observation = new UnexpectedError(where, error);
        if (!log.record(observation))
        {
            if (!fullLogged)
            {
                fullLogged = true;
                LOG.log(System.Logger.Level.ERROR, "distinct error log full; new kinds of error are counted only",
                    error);
            }
            return;
        }
        // a new distinct error is appended where the last one ended (records are only ever appended, and this
        // method is the only writer)
        final int length = knownEnd + DistinctErrorLog.ENCODED_ERROR_OFFSET < buffer.capacity() ?
            buffer.getIntVolatile(knownEnd + DistinctErrorLog.LENGTH_OFFSET) : 0;
        if (length > 0)
        {
            knownEnd = BitUtil.align(knownEnd + length, DistinctErrorLog.RECORD_ALIGNMENT);
            LOG.log(System.Logger.Level.ERROR, "unexpected error in " + where + " (logged once per cause)", error);
        }
    }

    /**
     * What the distinct error log records: where the error was caught, with the error as its cause. It has no
     * stack trace of its own, so two errors are the same when they were caught in the same place and their causes
     * match.
     */
    static final class UnexpectedError extends RuntimeException
    {
        private static final long serialVersionUID = 1L;

        UnexpectedError(final String where, final Throwable cause)
        {
            super("unexpected error in " + where, cause, false, false);
        }
    }
}
