package io.ringmq.transport;

import java.util.ArrayList;

/**
 * An I/O agent's connections with complete packets buffered that could not be handed on yet: paused because the
 * ingress ring was full, or resumed after their CONNACK. Each duty cycle retries them; a retry reports work only
 * when a packet moved, so a ring that stays full lets the agent sleep (briefly, see {@link #isStalled()}) instead
 * of spinning on it.
 */
final class PausedConnections
{
    /**
     * Offers a connection's buffered packets again.
     */
    interface Retry
    {
        /**
         * @return packets handed on.
         */
        int retry(Connection connection);

        /**
         * @return false when no packet could go on now (the ingress ring is full): the retries wait, in order, and
         * cost nothing until then.
         */
        default boolean hasRoom()
        {
            return true;
        }
    }

    private final ArrayList<Connection> connections = new ArrayList<>();
    private boolean stalled;

    void add(final Connection connection)
    {
        if (!connection.retrying)
        {
            connection.retrying = true;
            connections.add(connection);
        }
    }

    /**
     * Retries every connection once, oldest first, while the ring has room (a full ring is not asked again for each
     * of them: each retry would frame a packet only to be refused); drops those closed, or no longer paused.
     *
     * @return packets handed on (the progress made), 0 when the ring is still full.
     */
    int retry(final Retry retry)
    {
        if (connections.isEmpty())
        {
            stalled = false;
            return 0;
        }
        int progress = 0;
        int kept = 0;
        final int count = connections.size();
        for (int i = 0; i < count; i++)
        {
            final Connection connection = connections.get(i);
            if (!connection.closed && !retry.hasRoom())
            {
                connections.set(kept++, connection); // not tried: it keeps its place, and is tried first next time
                continue;
            }
            if (!connection.closed)
            {
                progress += retry.retry(connection);
            }
            if (connection.closed || !connection.paused)
            {
                connection.retrying = false;
            }
            else
            {
                connections.set(kept++, connection);
            }
        }
        for (int i = connections.size() - 1; i >= kept; i--)
        {
            connections.remove(i);
        }
        stalled = kept > 0 && progress == 0;
        return progress;
    }

    /**
     * @return true when connections wait and the last retry moved nothing: the ring is still full, so the agent
     * should sleep rather than spin, briefly: on a thread of its own the stage thread that frees room wakes it, and
     * the short nap bounds a wake-up missed; in shared threading the stages run on its thread after it.
     */
    boolean isStalled()
    {
        return stalled;
    }

    int size()
    {
        return connections.size();
    }
}
