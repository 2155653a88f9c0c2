package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The connection mode's check of one {@link Driver}'s held connections. With {@code -ping-interval} each connection
 * sends a PINGREQ once an interval through the hold, the connections' turns spread evenly across it; when the hold
 * ends every ready connection sends one more, whose PINGRESP proves the broker read everything sent before it. Each
 * round trip the driver hands in, PINGREQ queued to PINGRESP read, goes into {@link #pingTime} (with
 * {@code -ping-interval} the driver hands in only the hold's: not the final burst's).
 *
 * <p>Owned by its driver's thread; {@link #pingTime} is read once that thread has stopped. Allocates nothing.
 */
final class HeldPings
{
    /** PINGREQ to PINGRESP: the connection mode's check of held connections. */
    final Histogram pingTime = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    private final Settings settings;
    /** The driver's clients (the same list, as persistent mode replaces its subscribers in it). */
    private final List<Client> clients;
    private final FlushList flushList;
    /** The next connection to ping, and in which round. */
    private int pingCursor;
    private long pingRound;

    HeldPings(final Settings settings, final List<Client> clients, final FlushList flushList)
    {
        this.settings = settings;
        this.clients = clients;
        this.flushList = flushList;
    }

    /**
     * conn with -ping-interval: connection {@code i} of {@code n} pings at {@code start + i * interval / n}, then
     * every interval; a connection whose last PINGREQ is not answered yet skips its turn.
     *
     * @return PINGREQs queued.
     */
    int pingHeld(final long now, final long startNs)
    {
        final int count = clients.size();
        final long intervalNs = settings.pingIntervalNs;
        int queued = 0;
        while (count > 0 && now - (startNs + pingRound * intervalNs + intervalNs * pingCursor / count) >= 0)
        {
            final Client client = clients.get(pingCursor);
            if (client.state == Client.State.READY && 0 == client.pingsOutstanding)
            {
                client.queuePing();
                flushList.add(client);
                queued++;
            }
            if (++pingCursor == count)
            {
                pingCursor = 0;
                pingRound++;
            }
        }
        return queued;
    }

    /**
     * The hold is over: every ready connection sends a PINGREQ.
     */
    void pingAll()
    {
        for (final Client client : clients)
        {
            if (client.state == Client.State.READY)
            {
                client.queuePing(); // a PINGRESP proves the broker read everything sent before it
                flushList.add(client);
            }
        }
    }

    void onPingResponse(final long roundTripNs)
    {
        pingTime.recordValue(Math.min(roundTripNs, pingTime.getHighestTrackableValue()));
    }
}
