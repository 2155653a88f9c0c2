package io.ringmq.pipeline;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.ObjIntConsumer;
import java.util.function.ObjLongConsumer;
import java.util.function.ToIntFunction;
import java.util.function.ToLongFunction;

/**
 * What a reload does with each setting of a {@link BrokerContext}, declared once per setting: the live limits are
 * taken while clients stay connected; the settings sized or promised at start (rings, threads, what every CONNACK
 * announces, the store) keep their running values, and a change to one is named as needing a restart. The
 * listeners and the password and ACL files are reloaded by the transport's own path and are not listed here.
 * README's "Reloading without dropping clients" has the table for users; the transport's {@code ReloadPlanFlagsTest}
 * checks that every command-line flag is in this plan or reloaded by that other path.
 */
public final class ReloadPlan
{
    /**
     * One setting: its flag, how to read it and, for a live one, how to set it on the context a reload publishes.
     */
    private record Setting(String flag, Function<BrokerContext, Object> read,
        BiConsumer<BrokerContext, BrokerContext> take)
    {
        boolean live()
        {
            return null != take;
        }
    }

    private static final List<Setting> SETTINGS = List.of(
        liveInt("max-connections", context -> context.limits().maxConnections(),
            (live, value) -> live.limits().maxConnections(value)),
        liveInt("max-connections-per-address", BrokerContext::maxConnectionsPerAddress,
            BrokerContext::maxConnectionsPerAddress),
        live("limit-loopback", BrokerContext::limitLoopback, (live, next) -> live.limitLoopback(next.limitLoopback())),
        // the rings and logs are sized at start: a packet size above them waits for a restart (restartOnlyChanges)
        live("max-packet-size", context -> context.limits().maxPacketSize(), (live, next) ->
        {
            if (live.fitsBuffers(next.limits().maxPacketSize()))
            {
                live.limits().maxPacketSize(next.limits().maxPacketSize());
            }
        }),
        liveInt("max-connect-size", BrokerContext::maxConnectSize, BrokerContext::maxConnectSize),
        liveInt("max-inflight", context -> context.limits().maxInflight(),
            (live, value) -> live.limits().maxInflight(value)),
        liveLong("max-inflight-bytes", context -> context.limits().maxInflightBytes(),
            (live, value) -> live.limits().maxInflightBytes(value)),
        liveInt("max-queued", context -> context.limits().maxQueued(),
            (live, value) -> live.limits().maxQueued(value)),
        liveLong("max-queued-bytes", context -> context.limits().maxQueuedBytes(),
            (live, value) -> live.limits().maxQueuedBytes(value)),
        liveLong("max-message-memory", context -> context.memory().maxMessageMemory(),
            (live, bytes) -> live.memory().maxMessageMemory(bytes)),
        liveLong("max-session-memory", context -> context.memory().maxSessionMemory(),
            (live, bytes) -> live.memory().maxSessionMemory(bytes)),
        liveLong("max-client-session-memory", context -> context.memory().maxClientSessionMemory(),
            (live, bytes) -> live.memory().maxClientSessionMemory(bytes)),
        liveInt("max-keepalive", context -> context.limits().maxKeepAliveSeconds(),
            (live, value) -> live.limits().maxKeepAliveSeconds(value)),
        liveInt("connect-timeout", context -> context.limits().connectTimeoutMs(),
            (live, value) -> live.limits().connectTimeoutMs(value)),
        liveInt("stalled-client-timeout", context -> context.limits().stalledClientTimeoutMs(),
            (live, value) -> live.limits().stalledClientTimeoutMs(value)),
        liveInt("max-retained-messages", context -> context.limits().maxRetainedMessages(),
            (live, messages) -> live.limits().maxRetained(messages, live.limits().maxRetainedBytes())),
        liveLong("max-retained-bytes", context -> context.limits().maxRetainedBytes(),
            (live, bytes) -> live.limits().maxRetained(live.limits().maxRetainedMessages(), bytes)),
        liveInt("max-subscriptions-per-client", context -> context.limits().maxSubscriptionsPerClient(),
            (live, value) -> live.limits().maxSubscriptionsPerClient(value)),
        liveInt("max-topic-levels", context -> context.limits().maxTopicLevels(),
            (live, value) -> live.limits().maxTopicLevels(value)),
        liveInt("max-topic-length", context -> context.limits().maxTopicLength(),
            (live, value) -> live.limits().maxTopicLength(value)),
        liveInt("max-client-id-length", context -> context.limits().maxClientIdLength(),
            (live, value) -> live.limits().maxClientIdLength(value)),
        live("allow-zero-length-clientid", context -> context.limits().allowZeroLengthClientId(),
            (live, next) -> live.limits().allowZeroLengthClientId(next.limits().allowZeroLengthClientId())),
        live("clientid-prefixes", context -> context.limits().clientIdPrefix(),
            (live, next) -> live.limits().clientIdPrefix(next.limits().clientIdPrefix())),
        live("auto-id-prefix", context -> context.limits().autoIdPrefix(),
            (live, next) -> live.limits().autoIdPrefix(next.limits().autoIdPrefix())),
        live("queue-qos0-messages", context -> context.limits().queueQos0Messages(),
            (live, next) -> live.limits().queueQos0Messages(next.limits().queueQos0Messages())),
        liveLong("memory-budget", context -> context.memory().memoryBudgetBytes(),
            (live, bytes) -> live.memory().memoryBudgetBytes(bytes)),
        liveLong("sys-interval", context -> context.observability().sysIntervalMs(),
            (live, ms) -> live.observability().sysIntervalMs(ms)),
        live("anonymous", context -> context.auth().anonymous(),
            (live, next) -> live.auth().anonymous(next.auth().anonymous())),
        liveInt("outbound-high-water", BrokerContext::outboundHighWaterBytes, BrokerContext::outboundHighWaterBytes),
        // sized at start: threads, rings, buffers
        restart("threading", context -> context.threads().threading()),
        restart("io-threads", context -> context.threads().ioThreads()),
        restart("route-shards", context -> context.threads().routeShards()),
        restart("idle-strategy", context -> context.threads().idleStrategy()),
        restart("pin", context -> context.threads().pin()),
        restart("ring-size", context -> context.memory().ringSize()),
        restart("tls-threads", context -> context.threads().tlsThreads()),
        restart("accept-backlog", BrokerContext::acceptBacklog),
        restart("warmup", context -> context.threads().warmupConnections()),
        restart("slot-inline-bytes", context -> context.memory().slotInlineBytes()),
        restart("stage-batch-limit", context -> context.threads().stageBatchLimit()),
        restart("max-sessions", context -> context.limits().maxSessions()),
        // promised in every CONNACK, or held by every session
        restart("receive-maximum", context -> context.limits().receiveMaximum()),
        restart("topic-alias-maximum", context -> context.limits().topicAliasMaximum()),
        restart("max-qos", context -> context.limits().maxQos()),
        restart("retain-available", context -> context.limits().retainAvailable()),
        restart("persistent-client-expiration", context -> context.limits().persistentClientExpirationMs()),
        restart("shared-subscription-strategy", context -> context.limits().sharedSubscriptionStrategy()),
        // who may connect, decided by stages set up at start
        restart("use-username-as-clientid", context -> context.auth().useUserNameAsClientId()),
        // kept with every retained message from start, or never
        restart("check-retain-source", context -> context.auth().checkRetainSource()),
        restart("user", context -> context.auth().user()),
        restart("pass", context -> context.auth().password()),
        restart("auth settings", context -> context.auth().credentialSettings().toString()),
        // the store
        restart("persistence", context -> context.persistence().persistent()),
        restart("data-dir", context -> context.persistence().dataDir()),
        restart("durability", context -> context.persistence().durability()),
        restart("fsync-interval", context -> context.persistence().fsyncIntervalMs()),
        restart("strict-recovery", context -> context.persistence().strictRecovery()),
        restart("persistence-cache", context -> context.persistence().cacheBytes()),
        restart("persistence-write-buffers", context -> context.persistence().writeBufferBytes()),
        // observability set up at start
        restart("counters-dir", context -> context.observability().countersDir()),
        restart("metrics-port", context -> context.observability().metricsPort()),
        restart("metrics-bind", context -> context.observability().metricsBindAddress()));

    private ReloadPlan()
    {
    }

    /**
     * The settings a reload applies while clients stay connected: a copy of {@code running} (concluded) with the
     * live limits of {@code next} (concluded), every other setting as it runs now.
     *
     * @return the context to publish through {@link LiveLimits}.
     */
    public static BrokerContext liveContext(final BrokerContext running, final BrokerContext next)
    {
        final BrokerContext live = running.copy();
        for (final Setting setting : SETTINGS)
        {
            if (setting.live())
            {
                setting.take.accept(live, next);
            }
        }
        return live;
    }

    /**
     * @return the live limits that differ between {@code running} and {@code next}, as flag names (for the reload's
     * log line).
     */
    public static List<String> liveChanges(final BrokerContext running, final BrokerContext next)
    {
        final BrokerContext live = liveContext(running, next);
        final List<String> changed = new ArrayList<>();
        for (final Setting setting : SETTINGS)
        {
            if (setting.live() && !Objects.equals(setting.read.apply(running), setting.read.apply(live)))
            {
                changed.add(setting.flag);
            }
        }
        return changed;
    }

    /**
     * @return the settings that differ between {@code running} and {@code next} but only take effect at the next
     * start, as flag names; a reload keeps their running values.
     */
    public static List<String> restartOnlyChanges(final BrokerContext running, final BrokerContext next)
    {
        final List<String> changed = new ArrayList<>();
        for (final Setting setting : SETTINGS)
        {
            if (!setting.live() && !Objects.equals(setting.read.apply(running), setting.read.apply(next)))
            {
                changed.add(setting.flag);
            }
        }
        // sized from the packet size at start: a smaller one (from a smaller packet size) is no change
        if (next.memory().messageLogBytes() > running.memory().messageLogBytes())
        {
            changed.add("message-log-bytes");
        }
        if (next.memory().outboundRingBytes() > running.memory().outboundRingBytes())
        {
            changed.add("outbound-ring-bytes");
        }
        if (!running.fitsBuffers(next.limits().maxPacketSize()))
        {
            changed.add("max-packet-size above what the rings were sized for at start");
        }
        return changed;
    }

    /**
     * @return every flag this plan names, live or restart-only.
     */
    public static List<String> flags()
    {
        final List<String> flags = new ArrayList<>();
        for (final Setting setting : SETTINGS)
        {
            flags.add(setting.flag);
        }
        flags.add("message-log-bytes");
        flags.add("outbound-ring-bytes");
        return flags;
    }

    private static Setting live(final String flag, final Function<BrokerContext, ?> read,
        final BiConsumer<BrokerContext, BrokerContext> take)
    {
        return new Setting(flag, read::apply, take);
    }

    private static Setting liveInt(final String flag, final ToIntFunction<BrokerContext> read,
        final ObjIntConsumer<BrokerContext> write)
    {
        return new Setting(flag, read::applyAsInt, (live, next) -> write.accept(live, read.applyAsInt(next)));
    }

    private static Setting liveLong(final String flag, final ToLongFunction<BrokerContext> read,
        final ObjLongConsumer<BrokerContext> write)
    {
        return new Setting(flag, read::applyAsLong, (live, next) -> write.accept(live, read.applyAsLong(next)));
    }

    private static Setting restart(final String flag, final Function<BrokerContext, ?> read)
    {
        return new Setting(flag, read::apply, null);
    }
}
