package io.ringmq.pipeline;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * What each client may do and hold, a part of {@link BrokerContext} (the {@code LimitOptions} flags of the command
 * line): connections, in-flight and queued messages, packet, client id and topic sizes, subscriptions, retained
 * messages, sessions and their expiry, keep-alive, and what every CONNACK announces. Most are live limits: a reload's
 * copy of the context gets its own.
 */
public final class LimitSettings extends LiveSettings<LimitSettings>
{
    /** The largest --max-packet-size: the outbound ring for it is 512 MiB per I/O agent. */
    public static final int MAX_PACKET_SIZE_LIMIT = 64 * 1024 * 1024;
    /**
     * The fewest random characters an assigned client id has after {@link #autoIdPrefix()}: 16 hex digits, 60 bits
     * and more of a random UUID (all 36 of its characters where {@link #maxClientIdLength()} leaves room).
     */
    public static final int MIN_ASSIGNED_RANDOM = 16;
    /** The strategies a shared subscription group may pick its member by. */
    public static final java.util.List<String> SHARED_STRATEGIES =
        java.util.List.of("round-robin", "random", "sticky", "hash-client", "hash-topic", "least-loaded");

    private int maxConnections = 100_000;
    private int maxInflight = 32;
    private int maxQueued = 1_000;
    private int maxPacketSize = 1024 * 1024;
    private int connectTimeoutMs = 10_000;
    private int stalledClientTimeoutMs = 10_000;
    private int maxClientIdLength = 1_024;
    private int maxSubscriptionsPerClient = 10_000;
    private long maxQueuedBytes = 16L * 1024 * 1024;
    private int maxRetainedMessages = 100_000;
    /** AUTO: a quarter of the heap, where retained messages live, at most 256 MiB. */
    private long maxRetainedBytes = BrokerContext.AUTO;
    private long persistentClientExpirationMs = 7L * 24 * 3600 * 1000;
    private int maxSessions = 200_000;
    private int maxTopicLevels = 128;
    private int maxTopicLength = 65_535;
    private int maxKeepAliveSeconds = 65_535;
    private int topicAliasMaximum = 64;
    private int receiveMaximum = 1_024;
    private int maxQos = 2;
    private boolean allowZeroLengthClientId = true;
    private String clientIdPrefix = "";
    private String autoIdPrefix = "auto-";
    private boolean queueQos0Messages;
    private long maxInflightBytes = 1024 * 1024;
    private boolean retainAvailable = true;
    private String sharedSubscriptionStrategy = "round-robin";

    /**
     * @throws IllegalArgumentException naming the flag whose value cannot work.
     */
    LimitSettings conclude()
    {
        check(maxConnections >= 1, "--max-connections must be positive");
        check(maxInflight >= 1 && maxInflight <= 65_535, "--max-inflight must be 1..65535");
        check(maxQueued >= 0, "--max-queued must be >= 0");
        check(maxInflightBytes >= 0, "--max-inflight-bytes must be >= 0 (0: no limit)");
        check(maxPacketSize >= 64 && maxPacketSize <= 268_435_460, "--max-packet-size must be 64..268435460");
        check(connectTimeoutMs >= 100, "--connect-timeout must be at least 100 ms");
        check(stalledClientTimeoutMs == 0 || stalledClientTimeoutMs >= 100,
            "--stalled-client-timeout must be 0 (off) or at least 100 ms");
        check(maxPacketSize <= MAX_PACKET_SIZE_LIMIT, "--max-packet-size must be at most " + MAX_PACKET_SIZE_LIMIT +
            " (64 MiB): every packet must fit the outbound ring and the message log");
        check(maxClientIdLength >= 23 && maxClientIdLength <= 65_535,
            "--max-client-id-length must be 23..65535 (a server accepts at least 23 [MQTT-3.1.3-5])");
        check(maxSubscriptionsPerClient >= 1, "--max-subscriptions-per-client must be positive");
        check(maxQueuedBytes >= 1024, "--max-queued-bytes must be at least 1024");
        check(maxRetainedMessages >= 1 && maxRetainedBytes >= 0,
            "--max-retained-messages must be >= 1, --max-retained-bytes >= 1 (or 0 for a quarter of the heap)");
        check(persistentClientExpirationMs >= 0, "--persistent-client-expiration must be >= 0");
        check(maxSessions >= 1 && maxSessions <= 10_000_000, "--max-sessions must be 1..10000000");
        check(maxTopicLevels >= 1, "--max-topic-levels must be positive");
        check(maxTopicLength >= 1 && maxTopicLength <= 65_535, "--max-topic-length must be 1..65535");
        check(maxKeepAliveSeconds >= 1 && maxKeepAliveSeconds <= 65_535, "--max-keepalive must be 1..65535");
        check(topicAliasMaximum >= 0 && topicAliasMaximum <= 65_535, "--topic-alias-maximum must be 0..65535");
        check(receiveMaximum >= 1 && receiveMaximum <= 65_535, "--receive-maximum must be 1..65535");
        check(maxQos >= 0 && maxQos <= 2, "--max-qos must be 0, 1 or 2");
        check(autoIdPrefix.getBytes(java.nio.charset.StandardCharsets.UTF_8).length + MIN_ASSIGNED_RANDOM <=
            maxClientIdLength, "--auto-id-prefix must leave room for " + MIN_ASSIGNED_RANDOM +
            " random characters within --max-client-id-length (a client resumes its session with the id it was given)");
        check(autoIdPrefix.chars().noneMatch(c -> c == '+' || c == '#' || c == '/' || c < 0x20 ||
            Character.isSurrogate((char)c)), "--auto-id-prefix must not hold '+', '#', '/' or control characters "
            + "(in an ACL %c pattern they would widen it, or let a client named as the prefix read every assigned one)");
        check(SHARED_STRATEGIES.contains(sharedSubscriptionStrategy),
            "--shared-subscription-strategy must be one of " + SHARED_STRATEGIES);
        return this;
    }

    public int maxConnections()
    {
        return maxConnections;
    }

    public LimitSettings maxConnections(final int maxConnections)
    {
        this.maxConnections = maxConnections;
        return this;
    }

    public int maxInflight()
    {
        return maxInflight;
    }

    public LimitSettings maxInflight(final int maxInflight)
    {
        this.maxInflight = maxInflight;
        return this;
    }

    public int maxQueued()
    {
        return maxQueued;
    }

    public LimitSettings maxQueued(final int maxQueued)
    {
        this.maxQueued = maxQueued;
        return this;
    }

    public int maxPacketSize()
    {
        return maxPacketSize;
    }

    public LimitSettings maxPacketSize(final int maxPacketSize)
    {
        this.maxPacketSize = maxPacketSize;
        return this;
    }

    public int connectTimeoutMs()
    {
        return connectTimeoutMs;
    }

    public LimitSettings connectTimeoutMs(final int connectTimeoutMs)
    {
        this.connectTimeoutMs = connectTimeoutMs;
        return this;
    }

    /**
     * @return how long a connected client's oldest unacknowledged QoS 1/2 message may stay so, while other clients find
     * no room in --max-message-memory, before its connection is ended; 0: never.
     */
    public int stalledClientTimeoutMs()
    {
        return stalledClientTimeoutMs;
    }

    public LimitSettings stalledClientTimeoutMs(final int stalledClientTimeoutMs)
    {
        this.stalledClientTimeoutMs = stalledClientTimeoutMs;
        return this;
    }

    /**
     * @return sessions held at once, online or not; a CONNECT that would create one more is refused.
     */
    public int maxSessions()
    {
        return maxSessions;
    }

    public LimitSettings maxSessions(final int maxSessions)
    {
        this.maxSessions = maxSessions;
        return this;
    }

    public int maxClientIdLength()
    {
        return maxClientIdLength;
    }

    public LimitSettings maxClientIdLength(final int maxClientIdLength)
    {
        this.maxClientIdLength = maxClientIdLength;
        return this;
    }

    public int maxSubscriptionsPerClient()
    {
        return maxSubscriptionsPerClient;
    }

    public LimitSettings maxSubscriptionsPerClient(final int maxSubscriptionsPerClient)
    {
        this.maxSubscriptionsPerClient = maxSubscriptionsPerClient;
        return this;
    }

    public long maxQueuedBytes()
    {
        return maxQueuedBytes;
    }

    public LimitSettings maxQueuedBytes(final long maxQueuedBytes)
    {
        this.maxQueuedBytes = maxQueuedBytes;
        return this;
    }

    public int maxRetainedMessages()
    {
        return maxRetainedMessages;
    }

    /**
     * @return {@code --max-retained-bytes} as given: bytes, or {@link BrokerContext#AUTO}.
     */
    public long maxRetainedBytes()
    {
        return maxRetainedBytes;
    }

    /**
     * @return the topic and payload bytes of retained messages a routing stage holds: {@code --max-retained-bytes},
     * or a quarter of the JVM's maximum heap, at most 256 MiB (16 MiB under {@code bin/ringmq}'s 256m), so that
     * retained messages alone never fill the heap they live on.
     */
    public long retainedBytes()
    {
        return maxRetainedBytes == BrokerContext.AUTO ? Math.min(256L * 1024 * 1024, MemorySettings.quarterOfHeap()) :
            maxRetainedBytes;
    }

    public LimitSettings maxRetained(final int messages, final long bytes)
    {
        this.maxRetainedMessages = messages;
        this.maxRetainedBytes = bytes;
        return this;
    }

    public long persistentClientExpirationMs()
    {
        return persistentClientExpirationMs;
    }

    /**
     * @param ms how long a persistent session whose client never comes back is kept; 0 keeps it forever.
     */
    public LimitSettings persistentClientExpirationMs(final long ms)
    {
        this.persistentClientExpirationMs = ms;
        return this;
    }

    public int maxTopicLevels()
    {
        return maxTopicLevels;
    }

    public LimitSettings maxTopicLevels(final int maxTopicLevels)
    {
        this.maxTopicLevels = maxTopicLevels;
        return this;
    }

    public int maxTopicLength()
    {
        return maxTopicLength;
    }

    public LimitSettings maxTopicLength(final int maxTopicLength)
    {
        this.maxTopicLength = maxTopicLength;
        return this;
    }

    /**
     * @return the longest keep-alive a client may ask for; a longer or zero one is cut to it and, on MQTT 5.0,
     * announced as the server keep alive [MQTT-3.2.2-21].
     */
    public int maxKeepAliveSeconds()
    {
        return maxKeepAliveSeconds;
    }

    /**
     * @return the Session Expiry Interval the broker applies to a 5.0 client that asked for {@code requested}
     * seconds, or to a 3.1.1 client with clean session 0 ({@code 0xFFFFFFFF}): at most
     * {@code --persistent-client-expiration} (0 = sessions are kept until their client comes back). A value other
     * than the one asked for is announced in the CONNACK (5.0 section 3.2.2.3.2).
     */
    public long sessionExpiryFor(final long requested)
    {
        if (requested <= 0)
        {
            return 0;
        }
        final long maxSeconds = persistentClientExpirationMs / 1000;
        return maxSeconds > 0 && requested > maxSeconds ? maxSeconds : requested;
    }

    /**
     * @return the Session Expiry Interval the broker applies to a CONNECT: a 3.1.1 clean session 0 keeps its session
     * as long as {@code --persistent-client-expiration} allows; a 5.0 client's is its own, within that.
     */
    public long sessionExpiryFor(final io.ringmq.protocol.ConnectFlyweight connect)
    {
        if (connect.protocolLevel() == io.ringmq.protocol.MqttVersion.V5)
        {
            return sessionExpiryFor(connect.properties().longValue(
                io.ringmq.protocol.PropertyId.SESSION_EXPIRY_INTERVAL, 0));
        }
        return connect.isCleanStart() ? 0 : sessionExpiryFor(0xFFFF_FFFFL);
    }

    /**
     * @return the keep-alive the broker applies to a client that asked for {@code requested} seconds: that, or
     * {@link #maxKeepAliveSeconds()} when it asked for more, or for none while a maximum below 65,535 is set.
     */
    public int keepAliveFor(final int requested)
    {
        if (maxKeepAliveSeconds >= 65_535)
        {
            return requested;
        }
        return requested == 0 || requested > maxKeepAliveSeconds ? maxKeepAliveSeconds : requested;
    }

    public LimitSettings maxKeepAliveSeconds(final int maxKeepAliveSeconds)
    {
        this.maxKeepAliveSeconds = maxKeepAliveSeconds;
        return this;
    }

    /**
     * @return the topic aliases an MQTT 5.0 client may use toward the broker (announced in CONNACK; 0: none).
     */
    public int topicAliasMaximum()
    {
        return topicAliasMaximum;
    }

    public LimitSettings topicAliasMaximum(final int topicAliasMaximum)
    {
        this.topicAliasMaximum = topicAliasMaximum;
        return this;
    }

    /**
     * @return the unacknowledged QoS 1 and 2 PUBLISHes an MQTT 5.0 client may have toward the broker (announced in
     * CONNACK; one more is answered with DISCONNECT 0x93).
     */
    public int receiveMaximum()
    {
        return receiveMaximum;
    }

    public LimitSettings receiveMaximum(final int receiveMaximum)
    {
        this.receiveMaximum = receiveMaximum;
        return this;
    }

    /**
     * @return whether a client may connect with an empty client id (a 3.1.1 clean session, or any 5.0 client, gets
     * one assigned); if not, it is refused with identifier rejected (0x02; 5.0: 0x85), as Mosquitto's
     * {@code allow_zero_length_clientid false}.
     */
    public boolean allowZeroLengthClientId()
    {
        return allowZeroLengthClientId;
    }

    public LimitSettings allowZeroLengthClientId(final boolean allowZeroLengthClientId)
    {
        this.allowZeroLengthClientId = allowZeroLengthClientId;
        return this;
    }

    /**
     * @return the prefix every client id must start with ("": any), as Mosquitto's {@code clientid_prefixes}; a
     * CONNECT whose id does not is refused as not authorized (0x05; 5.0: 0x87).
     */
    public String clientIdPrefix()
    {
        return clientIdPrefix;
    }

    public LimitSettings clientIdPrefix(final String clientIdPrefix)
    {
        this.clientIdPrefix = null == clientIdPrefix ? "" : clientIdPrefix;
        return this;
    }

    /**
     * @return what an id the broker assigns starts with [MQTT-3.1.3-6], as Mosquitto's {@code auto_id_prefix}; a
     * random UUID follows (its hex digits, as many as {@link #maxClientIdLength()} leaves room for, at least
     * {@link #MIN_ASSIGNED_RANDOM}), so an id cannot be guessed and its session taken over.
     */
    public String autoIdPrefix()
    {
        return autoIdPrefix;
    }

    public LimitSettings autoIdPrefix(final String autoIdPrefix)
    {
        this.autoIdPrefix = null == autoIdPrefix ? "" : autoIdPrefix;
        return this;
    }

    /**
     * @return the bytes of QoS 1 and 2 messages a client may have in flight toward it at once, besides the
     * {@link #maxInflight()} count (0: no limit), as Mosquitto's {@code max_inflight_bytes}: one message always may,
     * however large; the rest wait in its queue. 1 MiB by default (Mosquitto's is no limit): what a subscriber that
     * never reads makes the broker hold in its connection's buffer is its window, and 16 such subscribers with windows
     * of 32 messages of 250 KB held 128 MB of pooled memory, and new connections were refused until they left.
     */
    public long maxInflightBytes()
    {
        return maxInflightBytes;
    }

    public LimitSettings maxInflightBytes(final long maxInflightBytes)
    {
        this.maxInflightBytes = maxInflightBytes;
        return this;
    }

    /**
     * @return whether a QoS 0 message for a persistent session whose client is away is queued for it (as QoS 1 and 2
     * messages are, within {@link #maxQueued()} and {@link #maxQueuedBytes()}) and sent, at QoS 0, when it comes
     * back, as Mosquitto's {@code queue_qos0_messages}; if not, it is not sent to that session. Kept in memory only:
     * QoS 0 promises at most once, and a restart drops them.
     */
    public boolean queueQos0Messages()
    {
        return queueQos0Messages;
    }

    public LimitSettings queueQos0Messages(final boolean queueQos0Messages)
    {
        this.queueQos0Messages = queueQos0Messages;
        return this;
    }

    /**
     * @return the highest QoS a client may publish with (and be granted on SUBSCRIBE): Maximum QoS in a 5.0 CONNACK
     * when below 2 [MQTT-3.2.2-9]; a PUBLISH (which a 5.0 client told so must not send [MQTT-3.2.2-11]) or will
     * [MQTT-3.2.2-12] above it ends the connection (0x9B); a SUBSCRIBE asking more is granted this
     * [MQTT-3.2.2-10].
     */
    public int maxQos()
    {
        return maxQos;
    }

    public LimitSettings maxQos(final int maxQos)
    {
        this.maxQos = maxQos;
        return this;
    }

    /**
     * @return whether clients may publish retained messages: Retain Available 0 in a 5.0 CONNACK when not; a
     * retained PUBLISH (which a 5.0 client told so must not send [MQTT-3.2.2-14]) or will [MQTT-3.2.2-13] then ends
     * the connection (0x9A).
     */
    public boolean retainAvailable()
    {
        return retainAvailable;
    }

    public LimitSettings retainAvailable(final boolean retainAvailable)
    {
        this.retainAvailable = retainAvailable;
        return this;
    }

    /**
     * @return how a shared subscription group picks the member a message goes to: one of
     * {@link #SHARED_STRATEGIES}.
     */
    public String sharedSubscriptionStrategy()
    {
        return sharedSubscriptionStrategy;
    }

    public LimitSettings sharedSubscriptionStrategy(final String sharedSubscriptionStrategy)
    {
        this.sharedSubscriptionStrategy = sharedSubscriptionStrategy;
        return this;
    }

    @Override
    public String toString()
    {
        return "max-connections=" + maxConnections + " max-inflight=" + maxInflight + " max-queued=" + maxQueued +
            " max-packet-size=" + maxPacketSize + " connect-timeout=" + connectTimeoutMs + "ms stalled-client-timeout=" +
            stalledClientTimeoutMs + "ms max-client-id-length=" +
            maxClientIdLength + " max-subscriptions-per-client=" + maxSubscriptionsPerClient + " max-queued-bytes=" +
            maxQueuedBytes + " max-retained=" + maxRetainedMessages + "/" + retainedBytes() + "B" +
            (maxRetainedBytes == BrokerContext.AUTO ? "(auto)" : "") + " persistent-client-expiration=" +
            persistentClientExpirationMs / 1000 + "s max-sessions=" + maxSessions + " max-topic-levels=" +
            maxTopicLevels + " max-topic-length=" + maxTopicLength + " max-keepalive=" + maxKeepAliveSeconds +
            " topic-alias-maximum=" + topicAliasMaximum + " receive-maximum=" + receiveMaximum +
            " shared-subscription-strategy=" + sharedSubscriptionStrategy;
    }
}
