package io.ringmq.pipeline.session;

import java.util.HashMap;
import java.util.Map;

/**
 * Sessions in a hash map: they survive a client's disconnect but not a broker restart.
 */
public final class InMemorySessionStore implements SessionStore
{
    private final Map<String, Session> sessions = new HashMap<>();

    public Session find(final String clientId)
    {
        return sessions.get(clientId);
    }

    public void save(final Session session)
    {
        sessions.put(session.clientId(), session);
    }

    public void remove(final Session session)
    {
        sessions.remove(session.clientId(), session);
    }

    public int size()
    {
        return sessions.size();
    }
}
