package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AclFile;
import io.ringmq.pipeline.auth.ClientAcl;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubscribeFlyweight;
import io.ringmq.protocol.TopicFilterList;
import io.ringmq.protocol.Topics;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The auth stage's access control: each admitted connection's rules (compiled once, at CONNECT, from its user
 * name and client id; forgotten when it ends), the verdict on every PUBLISH (write) and every SUBSCRIBE filter
 * (read: {@link ClientAcl#FULL}, PARTIAL or DENIED), and a will's topic at CONNECT. Verdicts go in the slot as
 * primitives; anything else but an explicit grant refuses (fail closed). A reloaded ACL file is taken here, on
 * the auth stage's thread, and published as {@link AccessRules} for the routing stage. Auth stage only.
 */
final class AccessControl
{
    private final ByConnection<Client> clients = new ByConnection<>();
    private final AtomicReference<AclFile> reloaded = new AtomicReference<>();
    private final AtomicReference<AccessRules> published;
    private final boolean useUserNameAsClientId;
    private final BrokerCounters counters;
    private final PublishFlyweight publish = new PublishFlyweight();
    private final SubscribeFlyweight subscribe = new SubscribeFlyweight();
    private AccessRules rules;
    private String autoIdPrefix = "auto-";
    /** The characters the random part of an assigned id may have: what the prefix leaves of the longest id. */
    private int assignedRoom = 1_024;

    /**
     * @param published the rules in force, shared with the routing stage (this class alone sets it).
     */
    AccessControl(final AtomicReference<AccessRules> published, final boolean useUserNameAsClientId,
        final BrokerCounters counters)
    {
        this.published = published;
        this.rules = published.get();
        this.useUserNameAsClientId = useUserNameAsClientId;
        this.counters = counters;
    }

    /**
     * @return no ACL file, client ids as sent: for stages built without one (tests).
     */
    static AccessControl open(final BrokerCounters counters)
    {
        return new AccessControl(new AtomicReference<>(AccessRules.OPEN), false, counters);
    }

    /**
     * @param prefix what the client ids this stage assigns start with ({@code --auto-id-prefix}).
     * @param maxClientIdLength the longest client id a client may connect with: it resumes with the one assigned.
     */
    void autoIdPrefix(final String prefix, final int maxClientIdLength)
    {
        autoIdPrefix = prefix;
        // checked at start and reload with the same limits; never fewer than 16 random digits whatever comes
        assignedRoom = Math.max(LimitSettings.MIN_ASSIGNED_RANDOM,
            maxClientIdLength - prefix.getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
    }

    /**
     * @return a new client id: the prefix and a random UUID (Mosquitto's form), or as many of its hex digits as
     * {@code --max-client-id-length} leaves room for (at least 16, checked at start).
     */
    private String assignId()
    {
        final String uuid = java.util.UUID.randomUUID().toString();
        return autoIdPrefix + (uuid.length() <= assignedRoom ? uuid :
            uuid.replace("-", "").substring(0, Math.min(32, assignedRoom)));
    }

    /**
     * @return whether a CONNECT must be refused before its credentials are checked: with
     * {@code --use-username-as-clientid}, one without a user name (as Mosquitto, not authorized), unless an
     * enhanced authentication is to name its user.
     */
    boolean refuses(final ConnectFlyweight connect)
    {
        return useUserNameAsClientId && !connect.hasUserName() && !EnhancedAuthentication.asks(connect);
    }

    /**
     * @param user the user an enhanced authentication proved (null: none).
     * @return whether the CONNECT it ended must still be refused: its User Name names another user (the exchange did
     * not prove that one, and it must choose neither a session nor rules), or client ids are user names and the
     * exchange named no user.
     */
    boolean refusesExchange(final ConnectFlyweight connect, final String user)
    {
        return connect.hasUserName() ? !connect.userName().asString().equals(user) :
            useUserNameAsClientId && null == user;
    }

    /**
     * @return whether the client id is the user name ({@code --use-username-as-clientid}).
     */
    boolean usesUserNameAsClientId()
    {
        return useUserNameAsClientId;
    }

    /**
     * An admitted CONNECT: the connection's rules, and the verdict on its will.
     *
     * @param userName the user it was admitted as (null: anonymous), which its rules are for.
     */
    void admit(final IngressEvent event, final ConnectFlyweight connect, final String userName)
    {
        String clientId = ClientIds.of(connect, userName, useUserNameAsClientId);
        if (clientId.isEmpty())
        {
            // assigned here, before the rules are compiled, so that %c stands for it as in Mosquitto; random, so
            // that no client can guess it and take the session over [MQTT-3.1.3-6]
            clientId = assignId();
            event.assignedClientId = clientId;
        }
        event.clientId = clientId;
        final ClientAcl acl = rules.forClient(userName, clientId);
        clients.put(event.connectionId, new Client(userName, clientId, acl));
        event.aclGeneration = rules.generation();
        event.aclUser = userName;
        final Slice will = connect.hasWill() ? connect.willTopic() : null;
        if (null != will && !acl.canWrite(will.buffer(), will.offset(), will.length()))
        {
            counters.increment(BrokerCounters.ACL_PUBLISH_DENIED); // the will is dropped, the client admitted
            event.aclVerdict = IngressEvent.ACL_DENIED;
            return;
        }
        event.aclVerdict = IngressEvent.ACL_ALLOWED;
    }

    /**
     * A PUBLISH: may the connection write to its topic? 3.1.1 clients are acknowledged and the message dropped,
     * 5.0 clients get 0x87 (the delivery shard answers).
     */
    void onPublish(final IngressEvent event)
    {
        event.aclGeneration = rules.generation();
        if (event.connectionId == IngressEvent.SYSTEM_CONNECTION)
        {
            event.aclVerdict = IngressEvent.ACL_ALLOWED; // the broker's own $SYS messages
            return;
        }
        final Client client = clients.get(event.connectionId);
        if (null == client ||
            (!event.located && publish.wrapValidated(event.packet, 0, event.packetLength, event.version) < 0))
        {
            event.aclVerdict = IngressEvent.ACL_DENIED; // not admitted, or a corrupt slot: fail closed
            return;
        }
        final Slice wrapped = publish.topic();
        final int topicOffset = event.located ? event.topicOffset : wrapped.offset();
        final int topicLength = event.located ? event.topicLength : wrapped.length();
        if (client.acl.canWrite(event.packet, topicOffset, topicLength))
        {
            event.aclVerdict = IngressEvent.ACL_ALLOWED;
            return;
        }
        event.aclVerdict = IngressEvent.ACL_DENIED;
        counters.increment(ClientAcl.isSys(event.packet, topicOffset, topicLength) ?
            BrokerCounters.SYS_PUBLISH_REFUSED : BrokerCounters.ACL_PUBLISH_DENIED);
    }

    /**
     * A SUBSCRIBE: how much of what each filter matches the connection may read [MQTT-3.9.3-1].
     */
    void onSubscribe(final IngressEvent event)
    {
        event.aclGeneration = rules.generation();
        final Client client = clients.get(event.connectionId);
        if (null == client)
        {
            return; // undecided: every filter refused
        }
        if (client.acl.isOpen())
        {
            event.aclVerdict = IngressEvent.ACL_ALLOWED; // no ACL file: every filter, without reading them
            return;
        }
        if (subscribe.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        final TopicFilterList filters = subscribe.filters();
        final byte[] verdicts = event.aclFilters(filters.count());
        for (int i = 0; i < filters.count(); i++)
        {
            final int verdict = client.acl.classify(unshared(filters.filter(i).asString()));
            verdicts[i] = (byte)verdict;
            if (verdict == ClientAcl.DENIED)
            {
                counters.increment(BrokerCounters.ACL_SUBSCRIBE_DENIED);
            }
        }
        event.aclFilterCount = filters.count();
        event.aclVerdict = IngressEvent.ACL_PER_FILTER;
    }

    /**
     * @return the filter a subscription reads through: a {@code $share/{name}/{filter}}'s filter, split as the
     * routing stage splits it when it subscribes ({@link Topics#shareNameEnd}); any other filter as written.
     */
    static String unshared(final String filter)
    {
        final int nameEnd = Topics.shareNameEnd(filter);
        return nameEnd < 0 ? filter : filter.substring(nameEnd + 1);
    }

    void forget(final long connectionId)
    {
        clients.remove(connectionId);
    }

    /**
     * Hands a reloaded ACL file over (any thread); it is taken at the auth stage's next duty cycle.
     */
    void reload(final AclFile file)
    {
        reloaded.set(file);
    }

    boolean hasPendingWork()
    {
        return null != reloaded.get();
    }

    /**
     * Takes a reloaded file: every connection's rules are compiled anew, then the rules are published for the
     * routing stage, which refuses the subscriptions they no longer allow.
     *
     * @return the work done.
     */
    int doDutyCycle()
    {
        // a plain read each cycle; the atomic swap (a locked instruction) only when a reload left a file
        final AclFile file = null == reloaded.get() ? null : reloaded.getAndSet(null);
        if (null == file)
        {
            return 0;
        }
        rules = rules.next(file);
        final AccessRules next = rules;
        clients.forEachValue(client -> client.acl = next.forClient(client.userName, client.clientId));
        published.set(rules); // after this stage's own: a slot judged by the new rules never reaches routing first
        return 1 + clients.size();
    }

    /**
     * An admitted connection, as its rules see it.
     */
    private static final class Client
    {
        final String userName;
        final String clientId;
        ClientAcl acl;

        Client(final String userName, final String clientId, final ClientAcl acl)
        {
            this.userName = userName;
            this.clientId = clientId;
            this.acl = acl;
        }
    }
}
