package io.ringmq.loadtest;

/**
 * One run's parameters, as the command line gave them.
 */
final class Settings
{
    /** The default of {@link #lateGraceNs}, in seconds (a constant, so that -rate's help can name it). */
    static final int LATE_GRACE_S = 3;

    String host = "127.0.0.1";
    int port = 1883;
    /** Where subscribers connect: the publishers' broker unless -sub-addr names another (a bridge between them). */
    String subHost = "127.0.0.1";
    int subPort = 1883;
    String user;
    String pass;
    /** -tls: every connection's TLS settings; null over plain TCP. */
    TlsClientContext tls;
    int version = 4;
    String mode = "pubsub";
    int publishers = 10;
    int subscribers = 10;
    int qos;
    int payload = 64;
    int rate;
    long durationNs = 10_000_000_000L;
    int inflight = 32;
    int[] levels = {1000};
    long holdNs = 3_000_000_000L;
    /** conn: each held connection sends a PINGREQ this often during the hold, spread evenly; 0 for none. */
    long pingIntervalNs;
    int dialConcurrency = 200;
    int threads = 1;
    /** Drivers the publishers are spread over (at most one per publisher). */
    int pubThreads = 1;
    int sourceAddresses = 1;
    String topicPrefix = "loadtest";
    long drainNs = 3_000_000_000L;
    /**
     * -rate: how long after the end a publisher that fell behind its schedule may still send what it owes (late,
     * stamped with the due times); what is unsent then is reported, never sent.
     */
    long lateGraceNs = LATE_GRACE_S * 1_000_000_000L;
    int keepAlive = 60;
    /** conn-rate: connections opened per second (0: as fast as the dial concurrency allows). */
    int connRate;
    /** persistent: how long subscribers stay away while publishers go on. */
    long offlineNs;
    String shareGroup = "g";
    /**
     * Clean session (3.1.1) / Clean Start (5.0) on every CONNECT; false in persistent mode, or with {@code -clean false}
     * in any mode, so that sessions (and the QoS 1/2 messages queued for them) outlive their connections.
     */
    boolean cleanSession = true;
    /** MQTT 5.0, when not {@link #cleanSession}: the Session Expiry Interval sent in CONNECT. */
    int sessionExpiryS = Client.SESSION_EXPIRY_S;
    /** Whether a run longer than {@link Progress#MIN_DURATION_NS} prints a progress line (off with -quiet). */
    boolean progress = true;
    /** Part of every client id, so that runs (a warm-up and its measurement) never share a session. */
    final String runId = Long.toString(System.nanoTime() & 0xFF_FFFF_FFFFL, 36);

    boolean persistent()
    {
        return "persistent".equals(mode);
    }

    /**
     * @return the messages each paced publisher sends, {@code ⌊rate × duration⌋} (see {@link FixedRateSchedule}); 0
     * when it floods ({@code -rate 0}) or in the connection modes.
     */
    long scheduledPerPublisher()
    {
        return rate > 0 && !connectionsOnly() ? FixedRateSchedule.messageCount(rate, durationNs) : 0;
    }

    boolean connectionsOnly()
    {
        return "conn".equals(mode) || "conn-rate".equals(mode);
    }

    /**
     * @return the filter subscriber {@code id} subscribes to in this mode.
     */
    String filterFor(final int id)
    {
        switch (mode)
        {
            case "p2p":
            case "persistent": return topicPrefix + "/" + id;
            case "fanin": return "$share/" + shareGroup + "/" + topicPrefix + "/#";
            default: return topicPrefix + "/#";
        }
    }

    /**
     * @return how many subscribers each published message should reach.
     */
    int deliveriesPerMessage()
    {
        return "pubsub".equals(mode) ? subscribers : 1;
    }
}
