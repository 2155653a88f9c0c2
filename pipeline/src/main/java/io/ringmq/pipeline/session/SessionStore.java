package io.ringmq.pipeline.session;

/**
 * The persistence port for sessions: where the routing stage keeps the sessions it knows by client identifier.
 * Sessions live in memory today ({@link InMemorySessionStore}); a durable store (the persistence stage's group
 * commit) plugs in here without the stages changing. Single-threaded: the routing stage owns it.
 */
public interface SessionStore
{
    /**
     * @return the session of that client, or null.
     */
    Session find(String clientId);

    /**
     * Adds or replaces the session of its client.
     */
    void save(Session session);

    /**
     * Forgets a session, if it is still the one stored for its client.
     */
    void remove(Session session);

    /**
     * @return how many sessions are stored.
     */
    int size();
}
