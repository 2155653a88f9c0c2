package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import picocli.CommandLine.Option;

import static io.ringmq.transport.Main.DEFAULTS;

/**
 * The {@code ringmq} options that bound what clients may hold and send (a picocli mixin of {@link Main}):
 * connections and sessions, in-flight and queued messages, packet and topic sizes, identifiers, subscriptions,
 * retained messages, keep-alive and MQTT 5.0's receive maximum and topic aliases, how long an absent persistent
 * session is kept, and how a {@code $share} group picks its member.
 */
final class LimitOptions
{
    @Option(names = "--max-connections", paramLabel = "N",
        description = "Connections held at once (default: ${DEFAULT-VALUE}).", order = 290)
    int maxConnections = DEFAULTS.limits().maxConnections();

    @Option(names = "--max-inflight", paramLabel = "N",
        description = "Unacknowledged QoS 1/2 messages per client (default: ${DEFAULT-VALUE}).", order = 300)
    int maxInflight = DEFAULTS.limits().maxInflight();

    @Option(names = "--max-inflight-bytes", paramLabel = "BYTES",
        description = "Bytes of unacknowledged QoS 1/2 messages per client; one message always may go, the rest wait "
            + "in its queue; 0: no limit (default: ${DEFAULT-VALUE}).", order = 305)
    long maxInflightBytes = DEFAULTS.limits().maxInflightBytes();

    @Option(names = "--max-queued", paramLabel = "N",
        description = "QoS 1/2 messages queued per client beyond the in-flight window or while offline "
            + "(default: ${DEFAULT-VALUE}).", order = 310)
    int maxQueued = DEFAULTS.limits().maxQueued();

    @Option(names = "--max-packet-size", paramLabel = "BYTES",
        description = "Largest packet accepted (default: ${DEFAULT-VALUE}; bin/ringmq passes 262080 when its "
            + "--memory-limit is below 512m, as at its 256m default).", order = 320)
    int maxPacketSize = DEFAULTS.limits().maxPacketSize();

    @Option(names = "--connect-timeout", paramLabel = "DURATION",
        description = "Close a connection that sends no CONNECT within this, e.g. 10s or 500ms "
            + "(default: ${DEFAULT-VALUE}).", order = 330)
    String connectTimeout = OptionValues.durationText(DEFAULTS.limits().connectTimeoutMs());

    @Option(names = "--stalled-client-timeout", paramLabel = "DURATION",
        description = "End the connection of a client whose oldest unacknowledged QoS 1/2 message stays so this long "
            + "while other clients find no room in --max-message-memory (5.0: DISCONNECT 0x97); 0 = never "
            + "(default: ${DEFAULT-VALUE}).", order = 335)
    String stalledClientTimeout = OptionValues.durationText(DEFAULTS.limits().stalledClientTimeoutMs());

    @Option(names = "--max-client-id-length", paramLabel = "N",
        description = "Longer client identifiers are refused (default: ${DEFAULT-VALUE}).", order = 340)
    int maxClientIdLength = DEFAULTS.limits().maxClientIdLength();

    @Option(names = "--max-subscriptions-per-client", paramLabel = "N",
        description = "Further filters get a failure return code in SUBACK (default: ${DEFAULT-VALUE}).", order = 350)
    int maxSubscriptionsPerClient = DEFAULTS.limits().maxSubscriptionsPerClient();

    @Option(names = "--max-queued-bytes", paramLabel = "BYTES",
        description = "QoS 1/2 topic+payload bytes queued per client; then the newest is dropped "
            + "(default: ${DEFAULT-VALUE}).", order = 360)
    long maxQueuedBytes = DEFAULTS.limits().maxQueuedBytes();

    @Option(names = "--max-retained-messages", paramLabel = "N",
        description = "Retained messages held; further ones are not stored (default: ${DEFAULT-VALUE}).", order = 400)
    int maxRetainedMessages = DEFAULTS.limits().maxRetainedMessages();

    @Option(names = "--max-retained-bytes", paramLabel = "BYTES",
        description = "Topic+payload bytes of retained messages held; 0 = a quarter of the max heap, at most 256 MiB "
            + "(default: ${DEFAULT-VALUE}).", order = 410)
    long maxRetainedBytes = BrokerContext.AUTO;

    @Option(names = "--persistent-client-expiration", paramLabel = "DURATION",
        description = "Drop a persistent session whose client has not come back for this long, e.g. 2h, 7d, 1w; "
            + "0 keeps it forever (default: ${DEFAULT-VALUE}).", order = 420)
    String persistentClientExpiration = "7d";

    @Option(names = "--max-sessions", paramLabel = "N",
        description = "Sessions held at once, online or offline; a CONNECT that would create one more is refused "
            + "(default: ${DEFAULT-VALUE}).", order = 470)
    int maxSessions = DEFAULTS.limits().maxSessions();

    @Option(names = "--max-topic-levels", paramLabel = "N",
        description = "Most levels in a PUBLISH topic; more closes the connection (default: ${DEFAULT-VALUE}).",
        order = 590)
    int maxTopicLevels = 128;

    @Option(names = "--max-topic-length", paramLabel = "BYTES",
        description = "Longest PUBLISH topic; longer closes the connection (default: ${DEFAULT-VALUE}).", order = 600)
    int maxTopicLength = 65_535;

    @Option(names = "--max-keepalive", paramLabel = "SECONDS",
        description = "Longest keep-alive a client may ask for; longer (or 0) is cut to it, and MQTT 5.0 clients "
            + "are told (server keep alive) (default: ${DEFAULT-VALUE}).", order = 610)
    int maxKeepAlive = 65_535;

    @Option(names = "--topic-alias-maximum", paramLabel = "N",
        description = "Topic aliases an MQTT 5.0 client may use toward the broker; 0 = none (default: "
            + "${DEFAULT-VALUE}).", order = 620)
    int topicAliasMaximum = 64;

    @Option(names = "--receive-maximum", paramLabel = "N",
        description = "Unacknowledged QoS 1/2 PUBLISHes an MQTT 5.0 client may send the broker at once; one more "
            + "is a protocol error, DISCONNECT 0x93 (default: ${DEFAULT-VALUE}).", order = 630)
    int receiveMaximum = 1_024;

    @Option(names = "--allow-zero-length-clientid", paramLabel = "true|false", arity = "1",
        description = "Whether a client may connect with an empty client id (one is assigned); if not, it is refused "
            + "with identifier rejected (default: ${DEFAULT-VALUE}).", order = 636)
    boolean allowZeroLengthClientId = true;

    @Option(names = "--clientid-prefixes", paramLabel = "PREFIX",
        description = "Only client ids starting with PREFIX may connect; others are refused as not authorized "
            + "(default: any).", order = 638)
    String clientIdPrefix = "";

    @Option(names = "--auto-id-prefix", paramLabel = "PREFIX",
        description = "What the client ids the broker assigns start with; a random UUID follows (default: "
            + "${DEFAULT-VALUE}).", order = 639)
    String autoIdPrefix = "auto-";

    @Option(names = "--queue-qos0-messages", paramLabel = "true|false", arity = "1",
        description = "Whether QoS 0 messages for a persistent session whose client is away are queued (within "
            + "--max-queued) and sent when it comes back; kept in memory only (default: ${DEFAULT-VALUE}).",
        order = 627)
    boolean queueQos0Messages;

    @Option(names = "--max-qos", paramLabel = "0|1|2",
        description = "Highest QoS a client may publish with, and be granted on SUBSCRIBE (lower requests are "
            + "granted as asked); above it a PUBLISH or will ends the connection, on MQTT 5.0 with 0x9B, and 5.0 "
            + "clients are told in CONNACK (default: ${DEFAULT-VALUE}).", order = 632)
    int maxQos = 2;

    @Option(names = "--retain-available", paramLabel = "true|false", arity = "1",
        description = "Whether clients may publish retained messages; if not, a retained PUBLISH or will ends the "
            + "connection, on MQTT 5.0 with 0x9A, and 5.0 clients are told in CONNACK (default: ${DEFAULT-VALUE}).",
        order = 634)
    boolean retainAvailable = true;

    @Option(names = "--shared-subscription-strategy", paramLabel = "NAME",
        description = "How a $share group picks its member: round-robin, random, sticky, hash-client, hash-topic, "
            + "least-loaded (default: ${DEFAULT-VALUE}).", order = 710)
    String sharedSubscriptionStrategy = "round-robin";

    /**
     * Copies these options into {@code context}, reading the durations (the connect timeout first).
     */
    void applyTo(final BrokerContext context)
    {
        context.limits(l -> l.maxConnections(maxConnections)
            .maxInflight(maxInflight)
            .maxInflightBytes(maxInflightBytes)
            .maxQueued(maxQueued)
            .maxPacketSize(maxPacketSize)
            .connectTimeoutMs(OptionValues.parseDurationMs(connectTimeout))
            .stalledClientTimeoutMs(OptionValues.parseDurationMs(stalledClientTimeout))
            .maxClientIdLength(maxClientIdLength)
            .maxSubscriptionsPerClient(maxSubscriptionsPerClient)
            .maxQueuedBytes(maxQueuedBytes)
            .maxRetained(maxRetainedMessages, maxRetainedBytes)
            .persistentClientExpirationMs(OptionValues.parseLongDurationMs(persistentClientExpiration))
            .maxSessions(maxSessions)
            .maxTopicLevels(maxTopicLevels)
            .maxTopicLength(maxTopicLength)
            .maxKeepAliveSeconds(maxKeepAlive)
            .topicAliasMaximum(topicAliasMaximum)
            .receiveMaximum(receiveMaximum)
            .maxQos(maxQos)
            .allowZeroLengthClientId(allowZeroLengthClientId)
            .clientIdPrefix(clientIdPrefix)
            .autoIdPrefix(autoIdPrefix)
            .queueQos0Messages(queueQos0Messages)
            .retainAvailable(retainAvailable)
            .sharedSubscriptionStrategy(sharedSubscriptionStrategy));
    }
}
