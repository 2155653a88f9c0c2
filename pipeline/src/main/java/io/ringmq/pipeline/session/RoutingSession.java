package io.ringmq.pipeline.session;

import io.ringmq.pipeline.Message;
import org.agrona.collections.IntHashSet;

import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;

/**
 * The routing stage's half of one client's session: identity, subscriptions, will, inbound QoS 2 state, the
 * connection it is bound to, which delivery shard holds its other half, and its expiry timer. Owned by the
 * routing stage alone; other stages know it only by {@link #id()}. A session that subscribes to nothing and never
 * receives QoS 2 holds no collection: the subscriptions are made on the first SUBSCRIBE (and dropped with the last
 * UNSUBSCRIBE), the QoS 2 packet ids on the first QoS 2 PUBLISH (and kept while the session is connected).
 */
public final class RoutingSession
{
    /** No expiry timer is set. */
    public static final long NO_TIMER = -1;

    private final int id;
    private final String clientId;
    private long expirySeconds;
    /** Its subscriptions by filter as the client wrote it; null while it has none. */
    private HashMap<String, Subscription> subscriptions;
    /** Packet ids of inbound QoS 2 messages not yet released by PUBREL; null until its first QoS 2 PUBLISH. */
    private IntHashSet awaitingPubrel;
    private long connectionId = -1;
    private int agentIndex = -1;
    private int shard;
    private Message will;
    private long willDelaySeconds;
    private int version;
    private int maxQos = 2;
    private int forcedOptions;
    private int matchGeneration;
    private int matchQos;
    private int matchIndex;
    private long expiryTimerId = NO_TIMER;
    private long willTimerId = NO_TIMER;
    private io.ringmq.pipeline.auth.ClientAcl acl = io.ringmq.pipeline.auth.ClientAcl.OPEN;
    private String userName;
    private String aclClientId;
    /** Its owner as a retained message's source: made when first asked, kept while the owner stays. */
    private io.ringmq.pipeline.MessageSource source;
    /** Where what it holds is counted; null once discarded. */
    private SessionMemory memory;
    /** What it holds of {@link #memory} now: ids, names, will, filters; and packet ids awaiting PUBREL. */
    private long heldBytes;
    private long awaitedBytes;
    /** What its filters hold of {@link #heldBytes}: judged against its share ({@code --max-client-session-memory}). */
    private long filterBytes;

    /**
     * @param id         the session id other stages know it by.
     * @param expirySeconds how long the session outlives its connection (0: it ends with it; 3.1.1 clean
     *                      session 0 and 5.0's Session Expiry Interval, as the broker applies them).
     * @param shard         the delivery shard that holds its delivery half.
     */
    RoutingSession(final int id, final String clientId, final long expirySeconds, final int shard,
        final SessionMemory memory)
    {
        this.id = id;
        this.clientId = clientId;
        this.expirySeconds = expirySeconds;
        this.shard = shard;
        this.memory = memory;
        hold(SessionMemory.lengthOf(clientId));
    }

    /**
     * Counts a change of what it holds, while it is registered.
     */
    private void hold(final long bytes)
    {
        heldBytes += bytes;
        if (null != memory)
        {
            memory.add(bytes);
        }
    }

    /**
     * Counts a change of what its filters hold, while it is registered.
     */
    private void holdFilter(final long bytes)
    {
        filterBytes += bytes;
        hold(bytes);
    }

    /**
     * Counts a change of what its packet ids awaiting PUBREL hold, while it is registered.
     */
    private void holdAwaited(final long bytes)
    {
        awaitedBytes += bytes;
        if (null != memory)
        {
            memory.addAwaited(bytes);
        }
    }

    /**
     * It leaves the registry: what it holds is no longer counted, whatever is done with it afterwards.
     */
    void detach()
    {
        if (null != memory)
        {
            memory.add(-heldBytes);
            memory.addAwaited(-awaitedBytes);
            memory = null;
        }
    }

    /**
     * @return what it holds of {@code --max-session-memory} now in ids, names, will and filters.
     */
    public long heldBytes()
    {
        return heldBytes;
    }

    /**
     * @return what its filters hold of {@code --max-session-memory} now (part of {@link #heldBytes()}; the same on
     * every routing shard).
     */
    public long filterBytes()
    {
        return filterBytes;
    }

    /**
     * @return what its packet ids awaiting PUBREL hold of {@code --max-session-memory} now.
     */
    public long awaitedBytes()
    {
        return awaitedBytes;
    }

    public int id()
    {
        return id;
    }

    public String clientId()
    {
        return clientId;
    }

    public boolean isPersistent()
    {
        return expirySeconds > 0;
    }

    /**
     * @return how long the session outlives its connection, in seconds (0xFFFFFFFF: as long as the broker keeps
     * sessions at all).
     */
    public long expirySeconds()
    {
        return expirySeconds;
    }

    /**
     * A 5.0 DISCONNECT's Session Expiry Interval replaces the CONNECT's [MQTT-3.14.2-2].
     */
    public void expirySeconds(final long expirySeconds)
    {
        this.expirySeconds = expirySeconds;
    }

    /**
     * @return the protocol level of its current (or last) connection.
     */
    public int version()
    {
        return version;
    }

    public void version(final int version)
    {
        this.version = version;
    }

    /**
     * @return the highest QoS its current (or last) connection may use, as its listener allows: its SUBSCRIBEs are
     * granted at most it.
     */
    public int maxQos()
    {
        return maxQos;
    }

    public void maxQos(final int maxQos)
    {
        this.maxQos = maxQos;
    }

    /**
     * @return subscription options its current connection's SUBSCRIBEs get whatever they say: No Local and Retain As
     * Published for another broker's 3.1.1 bridge (protocol level 0x84), none otherwise.
     */
    public int forcedOptions()
    {
        return forcedOptions;
    }

    public void forcedOptions(final int options)
    {
        this.forcedOptions = options;
    }

    /**
     * @return its will's Will Delay Interval in seconds (0: published as soon as the connection is lost).
     */
    public long willDelaySeconds()
    {
        return willDelaySeconds;
    }

    public void willDelaySeconds(final long willDelaySeconds)
    {
        this.willDelaySeconds = willDelaySeconds;
    }

    /**
     * @return its subscriptions ({@code $share/...} included); a view, empty when it has none.
     */
    public Collection<Subscription> subscriptions()
    {
        return null == subscriptions ? Collections.emptyList() : subscriptions.values();
    }

    /**
     * @return its subscription to a filter as the client wrote it, or null.
     */
    public Subscription subscription(final String filter)
    {
        return null == subscriptions ? null : subscriptions.get(filter);
    }

    public int subscriptionCount()
    {
        return null == subscriptions ? 0 : subscriptions.size();
    }

    public void addSubscription(final String filter, final Subscription subscription)
    {
        if (null == subscriptions)
        {
            subscriptions = new HashMap<>(4);
        }
        if (null == subscriptions.put(filter, subscription))
        {
            holdFilter(SessionMemory.subscriptionLength(filter));
        }
    }

    /**
     * @return the subscription it had to that filter, or null.
     */
    public Subscription removeSubscription(final String filter)
    {
        if (null == subscriptions)
        {
            return null;
        }
        final Subscription removed = subscriptions.remove(filter);
        if (null != removed)
        {
            holdFilter(-SessionMemory.subscriptionLength(filter));
        }
        if (subscriptions.isEmpty())
        {
            subscriptions = null;
        }
        return removed;
    }

    public void clearSubscriptions()
    {
        if (null != subscriptions)
        {
            for (final String filter : subscriptions.keySet())
            {
                holdFilter(-SessionMemory.subscriptionLength(filter));
            }
        }
        subscriptions = null;
    }

    /**
     * @return whether an inbound QoS 2 message with that packet id was received and not yet released by PUBREL.
     */
    public boolean awaitsPubrel(final int packetId)
    {
        return null != awaitingPubrel && awaitingPubrel.contains(packetId);
    }

    /**
     * An inbound QoS 2 message was received: its packet id awaits PUBREL.
     */
    public void awaitPubrel(final int packetId)
    {
        if (null == awaitingPubrel)
        {
            awaitingPubrel = new IntHashSet(4);
            holdAwaited(SessionMemory.PUBREL_SET_LENGTH);
        }
        if (awaitingPubrel.add(packetId))
        {
            holdAwaited(SessionMemory.PUBREL_ID_LENGTH);
        }
    }

    /**
     * The inbound QoS 2 exchange of that packet id ended (PUBREL), or never began (its store write failed).
     */
    public void releasePubrel(final int packetId)
    {
        if (null != awaitingPubrel && awaitingPubrel.remove(packetId))
        {
            holdAwaited(-SessionMemory.PUBREL_ID_LENGTH);
        }
    }

    /**
     * Its connection ended: QoS 2 packet ids it no longer awaits need no set.
     */
    public void trim()
    {
        if (null != awaitingPubrel && awaitingPubrel.isEmpty())
        {
            awaitingPubrel = null;
            holdAwaited(-SessionMemory.PUBREL_SET_LENGTH);
        }
    }

    public long connectionId()
    {
        return connectionId;
    }

    public int agentIndex()
    {
        return agentIndex;
    }

    public boolean isOnline()
    {
        return connectionId >= 0;
    }

    /**
     * Binds (or with -1, unbinds) the session to a connection.
     */
    public void connection(final int agentIndex, final long connectionId)
    {
        this.agentIndex = agentIndex;
        this.connectionId = connectionId;
    }

    /**
     * @return the delivery shard that holds this session's delivery half.
     */
    public int shard()
    {
        return shard;
    }

    public void shard(final int shard)
    {
        this.shard = shard;
    }

    public Message will()
    {
        return will;
    }

    public void will(final Message will)
    {
        hold(SessionMemory.lengthOf(will) - SessionMemory.lengthOf(this.will));
        this.will = will;
    }

    /**
     * Folds overlapping subscriptions into one delivery at the highest QoS [MQTT-3.3.5-1].
     *
     * @return true the first time this session matches in a given match generation.
     */
    public boolean markMatched(final int generation, final int qos, final int index)
    {
        if (matchGeneration == generation)
        {
            matchQos = Math.max(matchQos, qos);
            return false;
        }
        matchGeneration = generation;
        matchQos = qos;
        matchIndex = index;
        return true;
    }

    public int matchQos()
    {
        return matchQos;
    }

    /**
     * @return where this session stands among the targets of the current match generation.
     */
    public int matchIndex()
    {
        return matchIndex;
    }

    /**
     * @return the expiry timer of this offline persistent session, or {@link #NO_TIMER}.
     */
    public long expiryTimerId()
    {
        return expiryTimerId;
    }

    public void expiryTimerId(final long timerId)
    {
        this.expiryTimerId = timerId;
    }

    /**
     * @return the timer of its delayed will, or {@link #NO_TIMER}.
     */
    public long willTimerId()
    {
        return willTimerId;
    }

    public void willTimerId(final long timerId)
    {
        this.willTimerId = timerId;
    }

    /**
     * @return the rules of the session's client as of its last CONNECT (or reload): what it may read.
     */
    public io.ringmq.pipeline.auth.ClientAcl acl()
    {
        return acl;
    }

    /**
     * @param userName    who the rules are for (null: anonymous).
     * @param aclClientId the client id they were compiled with; null when the CONNECT did not name the user the
     *                    client was admitted as (the session then gets {@code ClientAcl.NOTHING} after a reload).
     */
    public void acl(final io.ringmq.pipeline.auth.ClientAcl acl, final String userName, final String aclClientId)
    {
        this.acl = acl;
        hold(SessionMemory.lengthOf(userName) - SessionMemory.lengthOf(this.userName) +
            extraLength(aclClientId) - extraLength(this.aclClientId));
        if (null != source && (!java.util.Objects.equals(userName, this.userName) ||
            !java.util.Objects.equals(aclClientId, this.aclClientId)))
        {
            source = null;
        }
        this.userName = userName;
        this.aclClientId = aclClientId;
    }

    /**
     * @return its owner as the source of a retained message it publishes, or its will, or null while its owner is
     * unknown (a session a build before stored, until its client reconnects).
     */
    public io.ringmq.pipeline.MessageSource messageSource()
    {
        if (null == source && null != aclClientId)
        {
            source = new io.ringmq.pipeline.MessageSource(userName, aclClientId);
        }
        return source;
    }

    /**
     * @return what a client id for its rules holds besides its own client id (nothing when it is that one).
     */
    private long extraLength(final String aclClientId)
    {
        return aclClientId == clientId ? 0 : SessionMemory.lengthOf(aclClientId);
    }

    public String userName()
    {
        return userName;
    }

    public String aclClientId()
    {
        return aclClientId;
    }

    public String toString()
    {
        return "RoutingSession[" + id + ", " + clientId + (isPersistent() ? ", expires after " + expirySeconds + " s" : "") + "]";
    }
}
