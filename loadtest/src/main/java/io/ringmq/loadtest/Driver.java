package io.ringmq.loadtest;


import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * One generator thread: a selector, the clients it owns, and the duty cycle that moves them through the run's phases
 * ({@link #DIALING}, {@link #RUNNING}, {@link #DRAINING}, {@link #STOPPED}). Each role is a final class of its own,
 * called directly on this thread:
 *
 * <pre>
 *   one duty cycle (loop)
 *     phase changed?    Publishers.start (RUNNING) | DRAINING: HeldPings.pingAll (conn), then Publishers.drain
 *     Dialer.dial       connects, as concurrency and -conn-rate allow; TCP up -> CONNECT queued
 *     Publishers        publish: paced from the DueQueue, or flood | DRAINING: finish -> each one's last PINGREQ
 *     HeldPings         conn with -ping-interval: each held connection's PINGREQ in its turn
 *     selectNow         onKey -> Client.read(this) -> onConnack, onSuback, onMessage -> DeliveryRecorder
 *     FlushList         writes each client with bytes queued, once
 *     counters out      publishedCount, uniqueCount: once per cycle, not per message
 *     idle              select, or DeadlineSleeper until the next message is due
 * </pre>
 *
 * The driver itself keeps the phases, the selector and its keys, which ping round trips count (with
 * {@code -ping-interval}, only the hold's), persistent mode's
 * subscribers going away and coming back, and how connections end (refused, failed, lost) with their counts.
 *
 * <p>Per message the work is O(log publishers), not O(publishers) ({@link Publishers}); only clients with bytes queued
 * are flushed ({@link FlushList}); keys are handled by the selector's consumer forms, which allocate no selected-key
 * set or iterator.
 */
final class Driver implements Runnable, Client.Handler
{
    static final int DIALING = 0;
    static final int RUNNING = 1;
    static final int DRAINING = 2;
    static final int STOPPED = 3;
    /** The longest a paced publisher driver sleeps in select while RUNNING (a phase change wakes it anyway). */
    private static final long MAX_PACED_SELECT_MS = 10;
    /**
     * How often a driver of paced publishers only polls its sockets while it wakes for due messages: they read only
     * acknowledgements and PINGRESPs, and a window of 32 QoS 1 messages refills every poll at up to 128,000 msg/s.
     */
    private static final long PACED_POLL_INTERVAL_NS = 250_000;

    final List<Client> clients = new ArrayList<>();
    private final Settings settings;
    private final Selector selector;
    /** Clients with bytes queued, each once; flushed once per duty cycle. */
    private final FlushList flushList = new FlushList(this);
    final Dialer dialer;
    final Publishers publishers;
    final DeliveryRecorder deliveries;
    final HeldPings pings;
    private final Consumer<SelectionKey> keyHandler = this::onKey;
    private final DeadlineSleeper sleeper = new DeadlineSleeper();
    /** Whether any client of this driver subscribes (then every cycle polls: deliveries are timed on arrival). */
    private boolean hasSubscribers;
    private long lastPollNs;
    private volatile int phase = DIALING;
    private volatile boolean subscribersWanted = true;
    private boolean subscribersOnline = true;
    volatile long resumedSessions;
    private volatile long runStartNs;
    volatile int ready;
    volatile int failed;
    volatile long refused;
    /** Subscriptions the broker refused (SUBACK 0x80 and above); each such subscriber counts as failed too. */
    volatile long subscribeRefused;
    /** Connections that were ready and then ended without the generator asking (EOF, reset, DISCONNECT). */
    volatile long connectionsLost;
    /** TLS handshakes that failed (an unknown CA, a name mismatch, no common version); those clients count as failed. */
    volatile long tlsFailures;
    /** The first failed handshake's reason, as the JDK gave it; null when none failed. */
    volatile String tlsError;
    /** DISCONNECTs a 5.0 broker sent, by reason code. */
    final long[] brokerDisconnects = new long[256];
    /** Messages queued by this driver's publishers so far, for the progress line; written once per duty cycle. */
    volatile long publishedCount;
    /** Unique deliveries to this driver's subscribers so far, for the progress line; written once per duty cycle. */
    volatile long uniqueCount;

    /**
     * @param drivers how many drivers the scenario runs: each dials its share of {@code -dial-concurrency} and
     *                {@code -conn-rate}.
     */
    Driver(final Settings settings, final ShareGroupTracker group, final int drivers)
        throws IOException
    {
        this.settings = settings;
        this.selector = Selector.open();
        this.dialer = new Dialer(settings, selector, this, flushList, drivers);
        this.publishers = new Publishers(settings, flushList);
        this.deliveries = new DeliveryRecorder(settings, group);
        this.pings = new HeldPings(settings, clients, flushList);
    }

    void add(final Client client)
    {
        clients.add(client);
        dialer.add(client);
        if (client.publisher)
        {
            publishers.add(client);
        }
        else
        {
            hasSubscribers = true;
        }
    }

    /**
     * persistent mode: takes every subscriber away (DISCONNECT) or brings it back on a new connection.
     */
    void subscribersOnline(final boolean online)
    {
        subscribersWanted = online;
        selector.wakeup();
    }

    private void moveSubscribers(final boolean online) throws IOException
    {
        for (int i = 0; i < clients.size(); i++)
        {
            final Client client = clients.get(i);
            if (client.publisher)
            {
                continue;
            }
            if (!online && client.state == Client.State.READY)
            {
                client.queueDisconnect();
                try
                {
                    client.flush();
                }
                catch (final IOException ex)
                {
                    onTlsFailure(ex); // the generator ends this connection itself: not counted as lost
                }
                ready--;
                close(client);
            }
            else if (online && client.state == Client.State.CLOSED)
            {
                final Client next = client.reconnect(settings);
                clients.set(i, next);
                dialer.add(next);
            }
        }
    }

    void phase(final int phase, final long startNs)
    {
        this.runStartNs = startNs;
        this.phase = phase;
        selector.wakeup();
    }

    public void run()
    {
        try
        {
            loop();
        }
        catch (final IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
        finally
        {
            for (final Client client : clients)
            {
                try
                {
                    client.channel.close();
                }
                catch (final IOException ignore)
                {
                    // closing anyway
                }
            }
            try
            {
                selector.close();
            }
            catch (final IOException ignore)
            {
                // closing anyway
            }
        }
    }

    private void loop() throws IOException
    {
        int lastPhase = DIALING;
        boolean polled = false;
        while (phase != STOPPED)
        {
            final long now = System.nanoTime();
            final int current = phase;
            if (current != lastPhase)
            {
                onPhaseChange(current, now);
                lastPhase = current;
            }
            if (subscribersWanted != subscribersOnline)
            {
                subscribersOnline = subscribersWanted;
                moveSubscribers(subscribersOnline);
            }
            int work = dialer.dial(now);
            if (current == RUNNING || (current == DRAINING && !publishers.done))
            {
                work += publishers.publish(now);
            }
            if (current == DRAINING && !publishers.done)
            {
                publishers.finish(now); // after publish: the last PINGREQ follows the last message
            }
            if (current == RUNNING && settings.connectionsOnly() && settings.pingIntervalNs > 0)
            {
                work += pings.pingHeld(now, runStartNs);
            }
            // no second poll when the idle select that ended the last cycle handled its keys already
            if (!polled && (hasSubscribers || settings.rate == 0 || now - lastPollNs >= PACED_POLL_INTERVAL_NS))
            {
                lastPollNs = now;
                work += selector.selectNow(keyHandler);
            }
            flushList.flushListed();
            if (publishers.published != publishedCount)
            {
                publishedCount = publishers.published; // counters leave the thread once per duty cycle, not per message
            }
            if (deliveries.unique != uniqueCount)
            {
                uniqueCount = deliveries.unique;
            }
            polled = work == 0 && idle(now) > 0;
        }
    }

    private void onPhaseChange(final int current, final long now)
    {
        if (current == RUNNING)
        {
            publishers.start(runStartNs);
        }
        else if (current == DRAINING)
        {
            if (settings.connectionsOnly())
            {
                pings.pingAll();
            }
            publishers.drain(now);
        }
    }

    /**
     * A driver of subscribers sleeps in {@code select} so a delivery is timed the moment it arrives; a driver of
     * paced publishers sleeps until the next message is due (its own acknowledgements can wait that long): in
     * {@code select} when that is a millisecond or more away, else parked ({@link DeadlineSleeper}).
     *
     * @return the keys a select handled.
     */
    private int idle(final long now)
    {
        final boolean publishing = phase == RUNNING || (phase == DRAINING && !publishers.done);
        try
        {
            if (publishers.isEmpty() || !publishing || settings.rate == 0)
            {
                final boolean timed = !publishers.isEmpty() || settings.pingIntervalNs > 0;
                return selector.select(keyHandler, phase == RUNNING && timed ? 1 : 100);
            }
            // the first in the queue may have finished or gone: then the next pass drops it, without sleeping
            final long waitNs = publishers.waitNs(now);
            if (waitNs >= 1_000_000)
            {
                // nothing due soon (or no publisher left): sleep on the sockets, waking before the next is due
                return selector.select(keyHandler, phase == RUNNING ?
                    Math.min(MAX_PACED_SELECT_MS, waitNs / 1_000_000) : 1);
            }
            if (waitNs > 0)
            {
                sleeper.sleepUntil(now + waitNs); // the first one's due time
            }
            else
            {
                // overdue yet no work this cycle: every publisher due is stalled (its window full, or its socket's
                // backlog), so wait on the sockets, where its acknowledgement wakes it, instead of spinning a core
                return selector.select(keyHandler, 1);
            }
        }
        catch (final IOException ignore)
        {
            // the next selectNow reports it
        }
        return 0;
    }

    /**
     * One ready key, from {@code selectNow} or {@code select} in their consumer forms.
     */
    private void onKey(final SelectionKey key)
    {
        final Client client = (Client)key.attachment();
        try
        {
            if (!key.isValid())
            {
                return;
            }
            if (key.isConnectable())
            {
                if (client.channel.finishConnect())
                {
                    key.interestOps(SelectionKey.OP_READ);
                    dialer.onTcpConnected(client);
                }
                return;
            }
            if (key.isReadable())
            {
                if (!client.read(this))
                {
                    dropped(client);
                }
                else if (client.pendingOut() > 0)
                {
                    flushList.add(client); // acknowledgements, a SUBSCRIBE after CONNACK, TLS handshake steps
                }
            }
        }
        catch (final IOException ex)
        {
            if (client.state == Client.State.CONNECTING || client.state == Client.State.DIALING)
            {
                refused++;
            }
            broken(client, ex);
        }
    }

    /**
     * A socket that failed to read or write: a TLS failure is counted, and the connection ended.
     */
    void broken(final Client client, final IOException ex)
    {
        onTlsFailure(ex);
        dropped(client);
    }

    private void onTlsFailure(final IOException ex)
    {
        if (ex instanceof javax.net.ssl.SSLException)
        {
            tlsFailures++;
            if (null == tlsError)
            {
                tlsError = TlsClientContext.describe((javax.net.ssl.SSLException)ex);
            }
        }
    }

    public void onPingResponse(final Client client, final long roundTripNs)
    {
        if (settings.pingIntervalNs > 0 && phase != RUNNING)
        {
            return; // with -ping-interval the figures are the hold's pings, not the final check's burst
        }
        pings.onPingResponse(roundTripNs);
    }

    public void onConnack(final Client client, final int code)
    {
        if (!dialer.onConnack(client, code))
        {
            refused++;
            fail(client);
            return;
        }
        client.state = Client.State.CONNECTED;
        if (client.resuming && client.sessionPresent)
        {
            resumedSessions++;
        }
        if (!client.publisher && settings.subscribers > 0 && !settings.connectionsOnly() && !client.resuming)
        {
            client.queueSubscribe(settings.filterFor(client.id), settings.qos);
        }
        else
        {
            client.state = Client.State.READY;
            ready++;
            if (client.publisher && phase != DIALING)
            {
                publishers.listDue(client); // ready after the run began: what it owes is due already, and goes late
            }
        }
    }

    public void onSuback(final Client client, final int code)
    {
        if (code >= 0x80) // e.g. 0x9E: shared subscriptions not supported, 0x8F: filter invalid, 3.1.1's 0x80
        {
            subscribeRefused++;
            fail(client);
            return;
        }
        client.state = Client.State.READY;
        ready++;
    }

    public void onDisconnect(final Client client, final int reasonCode)
    {
        brokerDisconnects[reasonCode & 0xFF]++;
    }

    public void onMessage(final Client client, final int publisherId, final int sequence, final long stampNs)
    {
        deliveries.onMessage(client, publisherId, sequence, stampNs);
    }

    /**
     * A connection the broker ended, or that broke, without the generator asking: a client never ready counts as
     * failed, one that was ready as lost.
     */
    private void dropped(final Client client)
    {
        if (client.state == Client.State.CLOSED)
        {
            return;
        }
        if (client.state == Client.State.READY)
        {
            connectionsLost++;
            close(client);
        }
        else
        {
            fail(client);
        }
    }

    void fail(final Client client)
    {
        failed++;
        close(client);
    }

    private void close(final Client client)
    {
        if (client.state == Client.State.CLOSED)
        {
            return;
        }
        dialer.onClose(client);
        client.state = Client.State.CLOSED;
        try
        {
            client.channel.close();
        }
        catch (final IOException ignore)
        {
            // closing anyway
        }
    }

}
