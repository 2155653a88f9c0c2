package io.ringmq.transport;

import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The keys an I/O agent's selector finds ready, handled on the agent's thread: a listening socket's by its
 * {@link Acceptor}, a connection's by the {@link ConnectionWriter} (writable again) and the
 * {@link ConnectionReader} (readable). Ready keys go straight to a handler held in a field, so neither the agent's
 * own {@code selectNow} nor the idle strategy's sleeping {@code select} builds a selected-key set or an iterator.
 * It owns the handlers and whether the sleeping select has just handed the keys over.
 */
final class ReadyKeys
{
    private final Selector selector;
    private final ConnectionReader reader;
    private final ConnectionWriter writer;
    /** Reads the agent's clock again: after a sleep, before a key is handled. */
    private final Runnable tick;
    private final Consumer<SelectionKey> onReady = this::onReady;
    private final Consumer<SelectionKey> onReadyAfterSleep = this::onReadyAfterSleep;
    private int selectedWork;
    /** The sleeping select handed keys over: the duty cycle after it skips its selectNow (shared threading). */
    private boolean selectedInSleep;
    private final boolean skipSelectAfterSleep;
    /** Whether connections wait for ingress ring room: a key ready at a sleep's end is then read after them. */
    private final BooleanSupplier othersWait;

    /**
     * @param skipSelectAfterSleep whether the duty cycle after a sleep that handed keys over skips its
     *                             {@code selectNow} (shared threading).
     * @param othersWait           whether connections wait for ingress ring room (paused): ring room goes to them
     *                             first, so a key the sleeping select finds then is left to the duty cycle's
     *                             {@code selectNow}, which comes after their retry.
     */
    ReadyKeys(final Selector selector, final ConnectionReader reader, final ConnectionWriter writer,
        final Runnable tick, final boolean skipSelectAfterSleep, final BooleanSupplier othersWait)
    {
        this.selector = selector;
        this.reader = reader;
        this.writer = writer;
        this.tick = tick;
        this.skipSelectAfterSleep = skipSelectAfterSleep;
        this.othersWait = othersWait;
    }

    /**
     * The duty cycle's look at the selector: every ready key handled now.
     *
     * @return the work the keys' handlers did.
     */
    int selectNow() throws IOException
    {
        if (selectedInSleep)
        {
            // the sleeping select handed every ready key over a moment ago: a selectNow would find only what came
            // since, which the next cycle's finds, or the next sleep's (it returns at once for a ready key); shared
            // threading only, where this cycle's stages have the handed packets to work on, so the cycle does not
            // end idle and start a short idle spell that turns the adaptive polls on (a ring threading's would)
            selectedInSleep = false;
            return 0;
        }
        selectedWork = 0;
        selector.selectNow(onReady); // ready keys straight to the handler: no selected-key set, no iterator
        return selectedWork;
    }

    /**
     * @return the handler for a key the idle strategy's sleeping {@code select} found ready (this agent's thread):
     * it handles the key as this agent's own {@code selectNow} would, after the sleep, with the clock read again.
     */
    Consumer<SelectionKey> afterSleep()
    {
        return onReadyAfterSleep;
    }

    /**
     * Handles one ready key; the selector calls it for each, allocating nothing.
     */
    private void onReady(final SelectionKey key)
    {
        try
        {
            selectedWork += handle(key);
        }
        catch (final IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
    }

    /**
     * Handles a key the sleeping {@code select} found ready: the sleep may have lasted up to its timeout, so the
     * clock is read first (a packet's arrival stamp, a keep-alive's last-seen time).
     */
    private void onReadyAfterSleep(final SelectionKey key)
    {
        tick.run();
        if (othersWait.getAsBoolean())
        {
            // level-triggered: the key is ready again at the duty cycle's selectNow, which follows the retry of
            // the connections that wait for ring room, and is not skipped (a key handled earlier in this select
            // may have asked for the skip before its read paused its connection)
            selectedInSleep = false;
            return;
        }
        selectedInSleep = skipSelectAfterSleep;
        onReady(key);
    }

    private int handle(final SelectionKey key) throws IOException
    {
        if (!key.isValid())
        {
            return 0;
        }
        if (key.isAcceptable())
        {
            return ((Acceptor)key.attachment()).accept();
        }
        final Connection connection = (Connection)key.attachment();
        if (key.isWritable())
        {
            writer.flush(connection);
        }
        return key.isValid() && key.isReadable() ? reader.read(connection) : 0;
    }
}
