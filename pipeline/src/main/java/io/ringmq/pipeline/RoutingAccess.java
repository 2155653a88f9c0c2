package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.ClientAcl;
import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionRegistry;
import io.ringmq.pipeline.session.Subscription;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectFlyweight;
import org.agrona.DirectBuffer;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The routing stage's half of access control: each session's {@link ClientAcl} (compiled at CONNECT from the user
 * name the auth stage admitted and the client id), the per-message read check of subscriptions wider than what
 * their subscriber may read, and the reload: when the auth stage publishes new {@link AccessRules}, every session's
 * rules are compiled anew and its subscriptions judged again; a connection with one now refused is revoked (5.0:
 * DISCONNECT 0x87), an offline session's refused subscription receives nothing. Routing stage only.
 */
final class RoutingAccess
{
    private final AtomicReference<AccessRules> published;
    private final ConnectionControl control;
    private final BrokerCounters counters;
    private final boolean useUserNameAsClientId;
    /** --check-retain-source: a retained message goes out only while its publisher may still write it. */
    private final boolean checkRetainSource;
    /** Routing shards above 0 follow the rules too, but only shard 0 revokes and counts. */
    private final boolean countsRevocations;
    private AccessRules rules;
    /** Wraps a will's or a retained message's topic for a check. */
    private final org.agrona.concurrent.UnsafeBuffer willTopic = new org.agrona.concurrent.UnsafeBuffer(new byte[0]);

    /**
     * @param published the rules in force, as the auth stage publishes them.
     * @param control   where a connection is revoked whose subscription reloaded rules refuse.
     */
    RoutingAccess(final AtomicReference<AccessRules> published, final ConnectionControl control,
        final BrokerCounters counters, final boolean useUserNameAsClientId, final boolean countsRevocations,
        final boolean checkRetainSource)
    {
        this.checkRetainSource = checkRetainSource;
        this.countsRevocations = countsRevocations;
        this.published = published;
        this.rules = published.get();
        this.control = control;
        this.counters = counters;
        this.useUserNameAsClientId = useUserNameAsClientId;
    }

    /**
     * @return the generation of the rules this stage judges by.
     */
    int generation()
    {
        return rules.generation();
    }

    /**
     * @return the rules this stage judges by.
     */
    AccessRules rules()
    {
        return rules;
    }

    /**
     * @return the client id of a CONNECT the auth stage admitted as {@link IngressEvent#aclUser}, as the broker
     * knows it (empty: one is to be assigned).
     */
    String clientIdOf(final ConnectFlyweight connect, final IngressEvent event)
    {
        return ClientIds.of(connect, event, useUserNameAsClientId);
    }

    /**
     * The session's rules for its new connection: its user's, as the auth stage admitted it
     * ({@link IngressEvent#aclUser}, never a User Name an enhanced authentication did not prove); a resumed
     * session's subscriptions are judged by them anew (one refused now receives nothing: it was allowed when it was
     * made).
     *
     * @param aclClientId the client id as the CONNECT gave it (before one is assigned), as the auth stage saw it.
     */
    void bind(final RoutingSession session, final IngressEvent event, final String aclClientId)
    {
        final String userName = event.aclUser;
        session.acl(aclOf(userName, aclClientId), userName, aclClientId);
        if (!event.sessionNew && rules.hasFile())
        {
            judge(session);
        }
    }

    /**
     * Judges each subscription of a session by its rules: only one wider than what it may read is checked per
     * message, and one refused receives nothing.
     *
     * @return whether one is refused.
     */
    private static boolean judge(final RoutingSession session)
    {
        boolean refused = false;
        for (final Subscription subscription : session.subscriptions())
        {
            final int verdict = session.acl().classify(subscription.filter());
            subscription.readChecked(verdict != ClientAcl.FULL);
            refused |= verdict == ClientAcl.DENIED;
        }
        return refused;
    }

    /**
     * A session restored from the store, before its owner is known: with an ACL file it receives nothing (fail
     * closed) unless {@link #restored(RoutingSession, String, String)} names its owner, as every record since the
     * owner was stored does; one stored by a build before is judged when its client reconnects.
     */
    void restored(final RoutingSession session)
    {
        if (rules.hasFile())
        {
            session.acl(ClientAcl.NOTHING, null, null);
        }
    }

    /**
     * A restored session's owner, as stored at its last CONNECT: its rules are its user's, as if its client had just
     * gone away.
     */
    void restored(final RoutingSession session, final String userName, final String aclClientId)
    {
        session.acl(aclOf(userName, aclClientId), userName,
            aclClientId.equals(session.clientId()) ? session.clientId() : aclClientId);
    }

    /**
     * A subscription restored from the store: judged by its session's rules when its owner is known, else when its
     * client reconnects (nothing reaches it before).
     */
    void restored(final Subscription subscription)
    {
        final RoutingSession session = subscription.session();
        subscription.readChecked(null == session.aclClientId() ? rules.hasFile() :
            session.acl().classify(subscription.filter()) != ClientAcl.FULL);
    }

    /**
     * @return whether a message on {@code topic[offset, offset + length)} may reach the subscription: always,
     * unless it is wider than its subscriber may read (only those pay for a check).
     */
    boolean mayRead(final Subscription subscription, final DirectBuffer topic, final int offset, final int length)
    {
        if (!subscription.readChecked() || subscription.session().acl().canRead(topic, offset, length))
        {
            return true;
        }
        counters.increment(BrokerCounters.ACL_READ_FILTERED);
        return false;
    }

    /**
     * @return the source a retained message the session publishes keeps: its owner, or
     * {@link MessageSource#UNKNOWN} while its owner is unknown (kept whether or not {@code --check-retain-source}
     * checks it, so a check turned on later covers every message kept before, as Mosquitto's store does).
     */
    static MessageSource sourceOf(final RoutingSession session)
    {
        final MessageSource owner = session.messageSource();
        return null == owner ? MessageSource.UNKNOWN : owner;
    }

    /**
     * @return whether a retained message may go out to a new subscription as far as its source goes: its
     * publisher may still write its topic under the rules in force (Mosquitto's {@code check_retain_source}); one
     * without a source (the broker's, or one stored by a build before), any with the check off, and any without an
     * ACL file may.
     */
    boolean sourceMayWrite(final Message retained)
    {
        final MessageSource source = retained.source();
        if (!checkRetainSource || null == source || !rules.hasFile())
        {
            return true;
        }
        willTopic.wrap(retained.topic());
        return source.mayWrite(rules, willTopic, 0, retained.topic().length);
    }

    private ClientAcl aclOf(final String userName, final String aclClientId)
    {
        return null != aclClientId || !rules.hasFile() ? rules.forClient(userName, aclClientId) : ClientAcl.NOTHING;
    }

    /**
     * @return the session's will as it goes out now, or null when the rules in force no longer let its client write
     * its topic (its CONNECT was judged by the rules of then; an ACL reload came since), counted by routing shard 0
     * as a refused PUBLISH. A session restored from a record of a build before (which did not store its owner) is
     * not judged again: its will was judged at its CONNECT.
     */
    Message willOf(final RoutingSession session)
    {
        final Message will = session.will();
        if (null == will)
        {
            return null;
        }
        if (null != session.aclClientId()) // bound at a CONNECT or restored with its owner: its user's rules
        {
            willTopic.wrap(will.topic());
            if (!session.acl().canWrite(willTopic, 0, will.topic().length))
            {
                if (countsRevocations)
                {
                    counters.increment(BrokerCounters.ACL_PUBLISH_DENIED);
                }
                return null;
            }
        }
        return Wills.toPublish(will).withSource(sourceOf(session));
    }

    /**
     * Takes the rules the auth stage published, when they are new. Walks every session once per reload.
     *
     * @return the work done.
     */
    int follow(final SessionRegistry sessions)
    {
        return follow(sessions, published.get());
    }

    /**
     * Takes {@code now}, the rules routing shard 0 held at a slot another routing shard replays (so each takes a
     * reload at the same slot), when they are new.
     *
     * @return the work done.
     */
    int follow(final SessionRegistry sessions, final AccessRules now)
    {
        if (now == rules)
        {
            return 0;
        }
        rules = now;
        int revoked = 0;
        for (int id = 0, seen = 0; seen < sessions.size(); id++)
        {
            final RoutingSession session = sessions.get(id);
            if (null == session)
            {
                continue;
            }
            seen++;
            session.acl(aclOf(session.userName(), session.aclClientId()), session.userName(), session.aclClientId());
            if (judge(session) && session.isOnline())
            {
                if (countsRevocations)
                {
                    counters.increment(BrokerCounters.CONNECTIONS_REVOKED); // before its client can see it
                }
                control.revoke(session.agentIndex(), session.connectionId());
                revoked++;
            }
        }
        return 1 + sessions.size();
    }
}
