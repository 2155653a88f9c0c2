package io.ringmq.pipeline;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One bridge to a remote broker, as Mosquitto's {@code connection} section describes it: where the remote is, which
 * topics cross in which direction (with prefixes that rename them on the way), the remote session's client id and
 * credentials, TLS toward it, keep-alive, restart delays and the state notifications. Plain data: the transport runs
 * the bridge. Filled by the config file, validated once by {@link #conclude()}.
 */
public final class BridgeSettings
{
    /** Which way a topic's messages cross. */
    public enum Direction
    {
        /** Local messages go to the remote broker. */
        OUT,
        /** The remote broker's messages come here. */
        IN,
        /** Both ways (a bridge never sends a message back where it came from). */
        BOTH;

        public boolean out()
        {
            return this != IN;
        }

        public boolean in()
        {
            return this != OUT;
        }
    }

    /**
     * One {@code topic} line: {@code pattern [[[out|in|both] qos] local-prefix remote-prefix]}. Here the topic is
     * {@code localPrefix + pattern}, there {@code remotePrefix + pattern}.
     */
    public static final class Topic
    {
        public final String pattern;
        public final Direction direction;
        public final int qos;
        public final String localPrefix;
        public final String remotePrefix;

        public Topic(final String pattern, final Direction direction, final int qos, final String localPrefix,
            final String remotePrefix)
        {
            this.pattern = pattern;
            this.direction = direction;
            this.qos = qos;
            this.localPrefix = null == localPrefix ? "" : localPrefix;
            this.remotePrefix = null == remotePrefix ? "" : remotePrefix;
        }

        /** @return the filter subscribed to here (its out direction). */
        public String localFilter()
        {
            return localPrefix + pattern;
        }

        /** @return the filter subscribed to at the remote broker (its in direction). */
        public String remoteFilter()
        {
            return remotePrefix + pattern;
        }

        @Override
        public String toString()
        {
            return "\"" + pattern + "\" " + direction.name().toLowerCase(java.util.Locale.ROOT) + " " + qos +
                (localPrefix.isEmpty() && remotePrefix.isEmpty() ? "" : " \"" + localPrefix + "\" \"" +
                remotePrefix + "\"");
        }
    }

    /** One remote address. */
    public static final class Address
    {
        public final String host;
        public final int port;

        public Address(final String host, final int port)
        {
            this.host = host;
            this.port = port;
        }

        @Override
        public String toString()
        {
            return host + ":" + port;
        }
    }

    private final String name;
    private final List<Address> addresses = new ArrayList<>();
    private final List<Topic> topics = new ArrayList<>();
    private boolean roundRobin;
    private String remoteClientId;
    private String localClientId;
    private String remoteUserName;
    private String remotePassword;
    private boolean cleanSession;
    private Boolean localCleanSession;
    private int keepAliveSeconds = 60;
    private int protocolVersion = 4;
    private boolean tryPrivate = true;
    private boolean notifications = true;
    private boolean notificationsLocalOnly;
    private String notificationTopic;
    private int restartBaseSeconds = 5;
    private int restartCapSeconds = 30;
    private boolean restartJitter = true;
    private String caFile;
    private String caPath;
    private String certFile;
    private String keyFile;
    private boolean insecure;
    private String tlsVersion;
    private boolean outgoingRetain = true;
    private int receiveMaximum = 1_000;
    private long maxPacketSize;
    private long sessionExpirySeconds = -1;
    private boolean concluded;

    /**
     * @param name the {@code connection} line's name.
     */
    public BridgeSettings(final String name)
    {
        this.name = name;
    }

    public String name()
    {
        return name;
    }

    public BridgeSettings address(final String host, final int port)
    {
        addresses.add(new Address(host, port));
        return this;
    }

    public List<Address> addresses()
    {
        return Collections.unmodifiableList(addresses);
    }

    public BridgeSettings topic(final Topic topic)
    {
        topics.add(topic);
        return this;
    }

    public List<Topic> topics()
    {
        return Collections.unmodifiableList(topics);
    }

    /** @param roundRobin true: the next address after a failure; false: back to the first once it answers. */
    public BridgeSettings roundRobin(final boolean roundRobin)
    {
        this.roundRobin = roundRobin;
        return this;
    }

    public boolean roundRobin()
    {
        return roundRobin;
    }

    public BridgeSettings remoteClientId(final String clientId)
    {
        this.remoteClientId = clientId;
        return this;
    }

    /** @return the remote session's client id: as given, else {@code <host name>.<name>} (Mosquitto's default). */
    public String remoteClientId()
    {
        return remoteClientId;
    }

    public BridgeSettings localClientId(final String clientId)
    {
        this.localClientId = clientId;
        return this;
    }

    /** @return the local session's client id: as given, else {@code local.<remote client id>}. */
    public String localClientId()
    {
        return localClientId;
    }

    public BridgeSettings remoteUserName(final String userName)
    {
        this.remoteUserName = userName;
        return this;
    }

    public String remoteUserName()
    {
        return remoteUserName;
    }

    public BridgeSettings remotePassword(final String password)
    {
        this.remotePassword = password;
        return this;
    }

    public String remotePassword()
    {
        return remotePassword;
    }

    /** @param cleanSession true: the remote session ends with each connection (Mosquitto's default: false). */
    public BridgeSettings cleanSession(final boolean cleanSession)
    {
        this.cleanSession = cleanSession;
        return this;
    }

    public boolean cleanSession()
    {
        return cleanSession;
    }

    public BridgeSettings localCleanSession(final boolean localCleanSession)
    {
        this.localCleanSession = localCleanSession;
        return this;
    }

    /** @return whether the local session ends with each connection: as {@link #cleanSession()} unless given. */
    public boolean localCleanSession()
    {
        return null == localCleanSession ? cleanSession : localCleanSession;
    }

    public BridgeSettings keepAliveSeconds(final int seconds)
    {
        this.keepAliveSeconds = seconds;
        return this;
    }

    public int keepAliveSeconds()
    {
        return keepAliveSeconds;
    }

    /** @param level 4 (3.1.1, the default) or 5 (5.0), toward the remote broker. */
    public BridgeSettings protocolVersion(final int level)
    {
        this.protocolVersion = level;
        return this;
    }

    public int protocolVersion()
    {
        return protocolVersion;
    }

    /**
     * @param tryPrivate on 3.1.1, tell the remote broker this is a bridge (protocol level with bit 7 set, as
     *                   Mosquitto does) so it does not send back what the bridge sent; dropped after a refusal.
     */
    public BridgeSettings tryPrivate(final boolean tryPrivate)
    {
        this.tryPrivate = tryPrivate;
        return this;
    }

    public boolean tryPrivate()
    {
        return tryPrivate;
    }

    public BridgeSettings notifications(final boolean notifications)
    {
        this.notifications = notifications;
        return this;
    }

    /** @return whether the bridge's state (1 connected, 0 not) is published, retained, on {@link #notificationTopic}. */
    public boolean notifications()
    {
        return notifications;
    }

    public BridgeSettings notificationsLocalOnly(final boolean localOnly)
    {
        this.notificationsLocalOnly = localOnly;
        return this;
    }

    public boolean notificationsLocalOnly()
    {
        return notificationsLocalOnly;
    }

    public BridgeSettings notificationTopic(final String topic)
    {
        this.notificationTopic = topic;
        return this;
    }

    /** @return as given, else {@code $SYS/broker/connection/<remote client id>/state}. */
    public String notificationTopic()
    {
        return notificationTopic;
    }

    /**
     * @param baseSeconds a constant delay between attempts when {@code capSeconds} is 0; else the first delay of a
     *                    backoff with jitter (Mosquitto's "decorrelated jitter") up to {@code capSeconds}.
     */
    public BridgeSettings restartTimeout(final int baseSeconds, final int capSeconds)
    {
        this.restartBaseSeconds = baseSeconds;
        this.restartCapSeconds = capSeconds;
        this.restartJitter = capSeconds > 0;
        return this;
    }

    public int restartBaseSeconds()
    {
        return restartBaseSeconds;
    }

    public int restartCapSeconds()
    {
        return restartCapSeconds;
    }

    public boolean restartJitter()
    {
        return restartJitter;
    }

    public BridgeSettings caFile(final String caFile)
    {
        this.caFile = caFile;
        return this;
    }

    public String caFile()
    {
        return caFile;
    }

    public BridgeSettings caPath(final String caPath)
    {
        this.caPath = caPath;
        return this;
    }

    public String caPath()
    {
        return caPath;
    }

    public BridgeSettings certFile(final String certFile)
    {
        this.certFile = certFile;
        return this;
    }

    public String certFile()
    {
        return certFile;
    }

    public BridgeSettings keyFile(final String keyFile)
    {
        this.keyFile = keyFile;
        return this;
    }

    public String keyFile()
    {
        return keyFile;
    }

    /** @param insecure true: the remote's certificate is not checked against its host name (it is still verified). */
    public BridgeSettings insecure(final boolean insecure)
    {
        this.insecure = insecure;
        return this;
    }

    public boolean insecure()
    {
        return insecure;
    }

    public BridgeSettings tlsVersion(final String tlsVersion)
    {
        this.tlsVersion = tlsVersion;
        return this;
    }

    public String tlsVersion()
    {
        return tlsVersion;
    }

    /** @return whether the bridge speaks TLS to the remote broker: a CA file or directory was given. */
    public boolean isTls()
    {
        return null != caFile || null != caPath;
    }

    /** @param outgoingRetain false: messages sent to the remote broker lose their retain flag. */
    public BridgeSettings outgoingRetain(final boolean outgoingRetain)
    {
        this.outgoingRetain = outgoingRetain;
        return this;
    }

    public boolean outgoingRetain()
    {
        return outgoingRetain;
    }

    /** @param receiveMaximum QoS 1/2 messages either side may have in flight toward the bridge (5.0). */
    public BridgeSettings receiveMaximum(final int receiveMaximum)
    {
        this.receiveMaximum = receiveMaximum;
        return this;
    }

    public int receiveMaximum()
    {
        return receiveMaximum;
    }

    /** @param maxPacketSize the largest packet taken from the remote broker (0: the broker's own limit). */
    public BridgeSettings maxPacketSize(final long maxPacketSize)
    {
        this.maxPacketSize = maxPacketSize;
        return this;
    }

    public long maxPacketSize()
    {
        return maxPacketSize;
    }

    /** @param seconds the remote session's expiry on 5.0 (-1: none given, then kept while not clean). */
    public BridgeSettings sessionExpirySeconds(final long seconds)
    {
        this.sessionExpirySeconds = seconds;
        return this;
    }

    public long sessionExpirySeconds()
    {
        return sessionExpirySeconds;
    }

    /**
     * Validates once and fills the defaults that depend on others.
     *
     * @param hostName this machine's name, for the default client id.
     * @return this.
     * @throws IllegalArgumentException with a one-line reason naming the bridge.
     */
    public BridgeSettings conclude(final String hostName)
    {
        if (concluded)
        {
            return this;
        }
        final String what = "bridge " + name;
        check(!name.isBlank() && name.indexOf('/') < 0 && name.indexOf('+') < 0 && name.indexOf('#') < 0,
            "connection: a bridge's name must be a word without / + #, not \"" + name + "\"");
        check(!addresses.isEmpty(), what + ": no address");
        check(!topics.isEmpty(), what + ": no topic");
        check(keepAliveSeconds >= 5 && keepAliveSeconds <= 65_535, what + ": keepalive_interval must be 5 to 65535");
        check(receiveMaximum >= 1 && receiveMaximum <= 65_535, what + ": bridge_receive_maximum must be 1 to 65535");
        check(restartBaseSeconds >= 1 && (restartCapSeconds == 0 || restartCapSeconds >= restartBaseSeconds),
            what + ": restart_timeout must be a positive delay, or a base and a cap not below it");
        check(null == certFile == (null == keyFile), what + ": bridge_certfile and bridge_keyfile go together");
        check(null == certFile || isTls(), what + ": bridge_certfile needs bridge_cafile or bridge_capath");
        check(null == remotePassword || null != remoteUserName, what + ": remote_password needs remote_username");
        if (null == remoteClientId)
        {
            remoteClientId = hostName + "." + name;
        }
        if (null == localClientId)
        {
            localClientId = "local." + remoteClientId;
        }
        if (null == notificationTopic)
        {
            notificationTopic = "$SYS/broker/connection/" + remoteClientId + "/state";
        }
        check(!notificationTopic.isEmpty() && notificationTopic.indexOf('+') < 0 && notificationTopic.indexOf('#') < 0 &&
            notificationTopic.indexOf('\0') < 0 && notificationTopic.getBytes(java.nio.charset.StandardCharsets.UTF_8)
            .length <= 65_535, what + ": notification_topic must be a topic name (no + or #), not \"" +
            notificationTopic + "\"");
        check(!remoteClientId.isEmpty() || cleanSession, what + ": an empty remote_clientid needs cleansession true " +
            "(a session kept there needs a name) [MQTT-3.1.3-7]");
        check(!localClientId.isEmpty(), what + ": local_clientid must not be empty");
        check(!localClientId.equals(remoteClientId) || addresses.stream().noneMatch(a -> isLoopback(a.host)),
            what + ": local_clientid and remote_clientid are the same on a loopback remote: each would take the " +
            "other's session");
        concluded = true;
        return this;
    }

    private static boolean isLoopback(final String host)
    {
        return host.equals("localhost") || host.startsWith("127.") || host.equals("::1");
    }

    private static void check(final boolean condition, final String reason)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(reason);
        }
    }

    @Override
    public String toString()
    {
        return name + " " + addresses + " " + topics;
    }
}
