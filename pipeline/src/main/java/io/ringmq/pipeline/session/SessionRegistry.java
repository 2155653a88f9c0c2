package io.ringmq.pipeline.session;

import io.ringmq.pipeline.OwnerThread;
import org.agrona.collections.IntArrayList;
import org.agrona.collections.IntArrayQueue;
import org.agrona.collections.Object2ObjectHashMap;

import java.util.Arrays;

/**
 * The routing stage's registry of sessions: client id to session, session id to session. Session ids are small
 * ints, reused, so delivery shards index their halves of sessions by id in plain arrays.
 * <p>
 * An id freed by {@link #discard} is not reused at once: it waits in {@link #takeDiscarded} until the routing
 * stage has told the delivery shards (in the output of the event it is processing), so a shard never confuses an
 * old session's state with a new one's. This is also where a durable store will plug in. The client ids are an
 * open-addressing map (no entry object per session). Routing stage only.
 */
public final class SessionRegistry
{
    private final Object2ObjectHashMap<String, RoutingSession> byClientId = new Object2ObjectHashMap<>();
    private final IntArrayQueue free = new IntArrayQueue();
    private final IntArrayList discarded = new IntArrayList();
    private final OwnerThread owner = new OwnerThread("session registry");
    private final SessionMemory memory;
    private RoutingSession[] byId = new RoutingSession[1024];
    private int nextId;

    /**
     * @param memory where its sessions count what they hold.
     */
    public SessionRegistry(final SessionMemory memory)
    {
        this.memory = memory;
    }

    /**
     * A registry without a bound on what its sessions hold (tests of one structure).
     */
    public SessionRegistry()
    {
        this(new SessionMemory(Long.MAX_VALUE, Long.MAX_VALUE));
    }

    /**
     * @return where its sessions count what they hold ({@code --max-session-memory}).
     */
    public SessionMemory memory()
    {
        return memory;
    }

    /**
     * @return the session of that client, or null.
     */
    public RoutingSession find(final String clientId)
    {
        assert owner.isCurrent();
        return byClientId.get(clientId);
    }

    /**
     * @return the session with that id, or null.
     */
    public RoutingSession get(final int id)
    {
        return id >= 0 && id < byId.length ? byId[id] : null;
    }

    /**
     * Creates the session of a client, replacing none: the caller discards an existing one first.
     */
    public RoutingSession create(final String clientId, final long expirySeconds, final int shard)
    {
        assert owner.isCurrent();
        final int id = free.isEmpty() ? nextId++ : free.pollInt();
        if (id >= byId.length)
        {
            byId = Arrays.copyOf(byId, byId.length * 2);
        }
        final RoutingSession session = new RoutingSession(id, clientId, expirySeconds, shard, memory);
        byId[id] = session;
        byClientId.put(clientId, session);
        return session;
    }

    /**
     * Forgets a session; its id is reused only after {@link #takeDiscarded} has handed it on.
     */
    public void discard(final RoutingSession session)
    {
        assert owner.isCurrent();
        if (byId[session.id()] == session)
        {
            session.detach(); // what it holds is free now, whoever still has the object
            byId[session.id()] = null;
            if (byClientId.get(session.clientId()) == session)
            {
                byClientId.remove(session.clientId());
            }
            discarded.addInt(session.id());
        }
    }

    /**
     * @return the ids discarded since the last call, which the caller must now tell the delivery shards about;
     * they become free for reuse once {@link #releaseDiscarded} is called.
     */
    public IntArrayList takeDiscarded()
    {
        return discarded;
    }

    /**
     * The delivery shards were told of the first {@code count} discarded ids: they may be reused.
     */
    public void releaseDiscarded(final int count)
    {
        for (int i = 0; i < count; i++)
        {
            free.addInt(discarded.getInt(i));
        }
        if (count == discarded.size())
        {
            discarded.clear();
        }
        else
        {
            final IntArrayList rest = new IntArrayList(discarded.size() - count, IntArrayList.DEFAULT_NULL_VALUE);
            for (int i = count; i < discarded.size(); i++)
            {
                rest.addInt(discarded.getInt(i));
            }
            discarded.clear();
            discarded.addAll(rest);
        }
    }

    /**
     * @return the number of sessions, online or not.
     */
    public int size()
    {
        return byClientId.size();
    }

    /**
     * Lets the next thread that touches the registry own it: recovery fills it before the routing thread starts.
     */
    public void releaseOwner()
    {
        owner.release();
    }
}
