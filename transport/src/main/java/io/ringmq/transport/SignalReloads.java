package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The SIGHUPs of one broker process, from before the broker runs: one that comes while it starts (the file read
 * already, a recovery under way) is kept and applied once it runs.
 * <p>
 * SIGHUP reads the command line's config file again and reloads the password file, the ACL file, the listeners, the
 * limits that can change live and the log level, as it does Mosquitto's; a failed reload is logged and changes
 * nothing, a setting that needs a restart is named in the log and keeps its value.
 */
final class SignalReloads
{
    /** Serialises the SIGHUP handlers, each from reading the file to the end of its reload. */
    private static final Object SIGNAL_RELOADS = new Object();

    private final AtomicReference<Broker> running = new AtomicReference<>();
    private final AtomicBoolean pending = new AtomicBoolean();
    private final String[] args;

    /**
     * @param args the command line, read again at each signal (null: the same files again).
     */
    SignalReloads(final String[] args)
    {
        this.args = args;
    }

    /**
     * Handles SIGHUP with {@link #signal()} from now on: called before the broker starts, so a signal is handled.
     *
     * @return false where the platform has no SIGHUP, or where SIGHUP was ignored when the process started (said on
     *         standard error): reload is not available.
     */
    boolean onSighup()
    {
        final sun.misc.SignalHandler previous;
        try
        {
            previous = sun.misc.Signal.handle(new sun.misc.Signal("HUP"), hup -> signal());
        }
        catch (final IllegalArgumentException ex)
        {
            System.err.println("ringmq: no SIGHUP on this platform: reload is not available");
            return false;
        }
        if (previous == sun.misc.SignalHandler.SIG_IGN)
        {
            // a JVM started with SIGHUP ignored (nohup) keeps it ignored and installs no handler, without a word
            System.err.println("ringmq: SIGHUP was ignored when this process started (nohup?), and the JVM keeps it " +
                "ignored: SIGHUP and 'ringmq reload' cannot reload this broker (bin/ringmq restores SIGHUP first)");
            return false;
        }
        return true;
    }

    /**
     * A SIGHUP (its own thread).
     */
    void signal()
    {
        pending.set(true); // first: a start that ends now sees it, or this sees the broker
        final Broker broker = running.get();
        if (null != broker && pending.getAndSet(false))
        {
            reloadOnSignal(broker, args);
        }
    }

    /**
     * The broker runs: a signal that came while it started is applied now.
     */
    void started(final Broker broker)
    {
        running.set(broker);
        if (pending.getAndSet(false))
        {
            reloadOnSignal(broker, args);
        }
    }

    /**
     * One SIGHUP (each runs on a thread of its own): reads the command line's config file again and reloads the
     * broker with it, or with the same files when there are no arguments. One at a time, the file read once its turn
     * comes: a storm of signals around edits ends on the last edit, never on a copy read before it and applied after.
     */
    static void reloadOnSignal(final Broker broker, final String[] args)
    {
        synchronized (SIGNAL_RELOADS)
        {
            final BrokerContext next;
            final Main reread;
            try
            {
                reread = null == args ? null : Main.reread(args); // the config file may have changed
                next = null == reread ? null : reread.context().conclude();
                if (null != reread)
                {
                    Logging.level(reread.observability.logLevel); // checked before anything is taken
                }
            }
            catch (final IOException | IllegalArgumentException ex)
            {
                System.getLogger("io.ringmq").log(System.Logger.Level.WARNING,
                    "reload failed, keeping the old configuration: " + ex.getMessage());
                return;
            }
            try
            {
                broker.reload(next);
                if (null != reread)
                {
                    // the limits took, and the level with them
                    Logging.reconfigureLevel(reread.observability.logLevel);
                }
            }
            catch (final IOException | IllegalArgumentException ex)
            {
                // logged by the broker; the old configuration stays
            }
        }
    }
}
