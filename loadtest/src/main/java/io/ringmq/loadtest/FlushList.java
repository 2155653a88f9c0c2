package io.ringmq.loadtest;

import java.io.IOException;
import java.util.Arrays;

/**
 * The clients of one {@link Driver} with bytes queued, each listed once ({@link Client#flushListed}), and written at
 * the end of the duty cycle that queued them: a cycle writes only the clients that have something to send, however
 * many of them the driver owns. A client whose socket did not take all it had stays listed for the next cycle; one
 * whose write fails is handed back to the driver to end ({@link Driver#broken}).
 *
 * <p>Owned by its driver's thread; allocates nothing once the list has had room for every client.
 */
final class FlushList
{
    private final Driver driver;
    private Client[] clients = new Client[16];
    private int count;

    FlushList(final Driver driver)
    {
        this.driver = driver;
    }

    /**
     * Lists {@code client} for the end of this duty cycle's flush, once.
     */
    void add(final Client client)
    {
        if (client.flushListed)
        {
            return;
        }
        if (count == clients.length)
        {
            clients = Arrays.copyOf(clients, count * 2);
        }
        clients[count++] = client;
        client.flushListed = true;
    }

    /**
     * Writes what each listed client has queued; one the socket did not take all of stays listed for the next cycle.
     */
    void flushListed()
    {
        int kept = 0;
        for (int i = 0; i < count; i++)
        {
            final Client client = clients[i];
            clients[i] = null;
            if (client.state != Client.State.CLOSED && client.pendingOut() > 0)
            {
                flush(client);
            }
            if (client.state != Client.State.CLOSED && client.pendingOut() > 0)
            {
                clients[kept++] = client;
            }
            else
            {
                client.flushListed = false;
            }
        }
        count = kept;
    }

    /**
     * Writes what {@code client} has queued now, as much as its socket takes; a failed write ends the connection.
     */
    void flush(final Client client)
    {
        try
        {
            client.flush();
        }
        catch (final IOException ex)
        {
            driver.broken(client, ex);
        }
    }
}
