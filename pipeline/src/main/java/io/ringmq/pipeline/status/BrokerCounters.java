package io.ringmq.pipeline.status;

import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.status.CountersManager;
import org.agrona.concurrent.status.CountersReader;

/**
 * The broker's counters: the metrics, and the way to see that a limit was hit. Any thread may add; anyone may
 * read, in this process or (through the {@link CountersFile}, with {@code ringmq stat}) in another. Printed at
 * shutdown.
 * <p>
 * The counters are allocated in an Agrona {@link CountersManager}, one per constant below and in that order, so a
 * constant is its counter's id; each value sits on a cache line of its own. To add a counter, append a constant
 * and its name to {@code NAMES}.
 */
public final class BrokerCounters
{
    /** The type id of every counter here, as {@code ringmq stat} and other readers see it. */
    public static final int BROKER_COUNTER_TYPE_ID = 1;

    public static final int CONNECTIONS_ACCEPTED = 0;
    public static final int CONNECTIONS_CLOSED = 1;
    public static final int CONNECTIONS_REFUSED_LIMIT = 2;
    public static final int PROTOCOL_ERRORS = 3;
    public static final int CONNECT_TIMEOUTS = 4;
    public static final int KEEP_ALIVE_TIMEOUTS = 5;
    public static final int PACKETS_IN = 6;
    public static final int PUBLISH_IN = 7;
    public static final int PUBLISH_OUT = 8;
    public static final int QOS0_DROPPED_SLOW_SUBSCRIBER = 9;
    public static final int QUEUE_FULL_DROPPED = 10;
    public static final int INGRESS_RING_FULL = 11;
    public static final int OUTBOUND_RING_FULL = 12;
    public static final int SOCKET_WRITE_BLOCKED = 13;
    /** Errors no client input should cause: a stage or agent threw; each distinct cause is logged once. */
    public static final int UNEXPECTED_ERRORS = 14;
    public static final int AUTH_FAILURES = 15;
    public static final int PACKET_TOO_LARGE = 16;
    public static final int CONNECTIONS_TAKEN_OVER = 17;
    public static final int INFLIGHT_FULL_QUEUED = 18;
    public static final int CLIENT_ID_TOO_LONG = 19;
    public static final int SUBSCRIPTIONS_REFUSED_LIMIT = 20;
    public static final int TOPIC_FILTERS_REFUSED = 21;
    public static final int RETAINED_REFUSED_LIMIT = 22;
    public static final int QUEUED_BYTES_DROPPED = 23;
    public static final int SESSIONS_EXPIRED = 24;
    public static final int OUTBOUND_BACKLOGGED = 25;
    public static final int MESSAGE_LOG_FULL = 26;
    public static final int RETAINED_NOT_SENT = 27;
    public static final int SESSIONS_MOVED = 28;
    /** A first packet that was not CONNECT, or a CONNECT over {@code --max-connect-size}: the socket closed. */
    public static final int PRE_CONNECT_REFUSED = 29;
    public static final int CONNECTIONS_REFUSED_PER_ADDRESS = 30;
    public static final int CONNECTIONS_REFUSED_MEMORY = 31;
    public static final int QOS0_SHED_MEMORY = 32;
    public static final int TOPIC_TOO_MANY_LEVELS = 33;
    public static final int TOPIC_TOO_LONG = 34;
    public static final int INGRESS_RING_OCCUPANCY = 35;
    public static final int EVENTS_AUTH = 36;
    public static final int EVENTS_ROUTE = 37;
    public static final int EVENTS_DELIVER = 38;
    public static final int EVENTS_RELEASE = 39;
    public static final int ROUTE_LOG_FULL = 40;
    public static final int SESSIONS_REFUSED_LIMIT = 41;
    public static final int PACKETS_OUT = 42;
    public static final int BYTES_IN = 43;
    public static final int BYTES_OUT = 44;
    public static final int CLIENTS_CONNECTED = 45;
    public static final int SESSIONS_CURRENT = 46;
    public static final int SUBSCRIPTIONS_CURRENT = 47;
    public static final int RETAINED_CURRENT = 48;
    public static final int CONNECTIONS_REVOKED = 49;
    public static final int SYS_PUBLISH_REFUSED = 50;
    /** 1 once the command line handles SIGHUP (a reload); {@code ringmq reload} signals only such a broker. */
    public static final int RELOAD_READY = 51;
    /** MQTT 5.0 messages whose Message Expiry Interval ran out before they could be sent [MQTT-3.3.2-5]. */
    public static final int MESSAGES_EXPIRED = 52;
    /** PUBLISHes not sent to a client because they exceed its Maximum Packet Size [MQTT-3.1.2-25]. */
    public static final int PACKET_TOO_LARGE_FOR_CLIENT = 53;
    /** Fan-out targets left out because one message matched more than a routing entry holds. */
    public static final int FANOUT_TRUNCATED = 54;
    /** Messages of a shared subscription member whose session ended unacknowledged, sent to another member. */
    public static final int SHARED_REDISPATCHED = 55;
    /** QoS 2 messages in flight to a shared member whose session ended: never sent to another [MQTT-4.8.2-5]. */
    public static final int SHARED_QOS2_NOT_REDISPATCHED = 56;
    /** Messages handed back by leaving shared members past the bound of what waits for re-dispatch. */
    public static final int SHARED_REDISPATCH_DROPPED = 57;
    /** Group commits of the persistence stage that failed (their events' connections closed, nothing acked). */
    public static final int PERSISTENCE_WRITE_FAILED = 58;
    /** Times the store slowed or stopped writes (compaction or flush behind). */
    public static final int PERSISTENCE_WRITE_STALLS = 59;
    /** Group commits of the persistence stage (one per batch that wrote something). */
    public static final int PERSISTENCE_COMMITS = 60;
    public static final int EVENTS_PERSIST = 61;
    /** PUBLISHes (and wills) the ACL refused to write (3.1.1: acknowledged and dropped; 5.0: 0x87). */
    public static final int ACL_PUBLISH_DENIED = 62;
    /** SUBSCRIBE filters the ACL refused (3.1.1: 0x80; 5.0: 0x87): nothing they match may be read. */
    public static final int ACL_SUBSCRIBE_DENIED = 63;
    /** Messages (live or retained) not sent on a subscription wider than its subscriber may read. */
    public static final int ACL_READ_FILTERED = 64;
    /** CONNECTs refused at once: the credential workers' queue was full (server unavailable). */
    public static final int AUTH_QUEUE_FULL = 65;
    /** CONNECTs refused without hashing: their address was backing off after failed attempts. */
    public static final int AUTH_RATE_LIMITED = 66;
    /** Back-offs started (an address reached --auth-max-failures within the window). */
    public static final int AUTH_BACKOFFS = 67;
    /** Addresses whose failures were forgotten because --auth-tracked-addresses was reached. */
    public static final int AUTH_ADDRESSES_FORGOTTEN = 68;
    /** Password hashes (PBKDF2 derivations) run by the credential workers. */
    public static final int AUTH_HASHES = 69;
    /** CONNECTs accepted from the cache of verified credentials (one HMAC, no PBKDF2). */
    public static final int AUTH_CACHE_HITS = 70;
    /** CONNECTs refused because the password file was reloaded while their hash ran (server unavailable). */
    public static final int AUTH_STALE_VERDICTS = 71;
    /** QoS 1 and 2 messages not kept for a subscriber because the shards held --max-message-memory already. */
    public static final int MESSAGE_MEMORY_DROPPED = 72;
    /** Bytes the delivery shards hold in QoS 1 and 2 copies for subscribers (each copy once, with its allowance). */
    public static final int MESSAGE_MEMORY = 73;
    /**
     * CONNECTs, filters, QoS 2 PUBLISHes and topic alias mappings refused because what sessions (and connections'
     * aliases) hold reached --max-session-memory.
     */
    public static final int SESSION_MEMORY_REFUSED = 74;
    /** Bytes the sessions hold in client ids, user names, wills and filters (with their allowances). */
    public static final int SESSION_MEMORY = 75;
    /**
     * Filters and QoS 2 PUBLISHes refused because their session held its share of session memory already
     * (--max-client-session-memory).
     */
    public static final int CLIENT_SESSION_MEMORY_REFUSED = 76;
    /** CONNECTs refused for their client id: empty under --allow-zero-length-clientid false, or without the prefix. */
    public static final int CLIENT_ID_REFUSED = 77;
    /** Retained messages not sent to a new subscription: their publisher may no longer write their topic. */
    public static final int RETAINED_SOURCE_REFUSED = 78;
    /** Messages not sent to a client: their topic is not under its listener's mount point. */
    public static final int OUTSIDE_MOUNT_POINT = 79;
    /**
     * Connections ended because a buffer they needed could not be taken: the pooled buffers' direct memory was spent
     * (netty's limit), by many clients' partial packets or unread deliveries together. Only that connection ends.
     */
    public static final int BUFFER_MEMORY_CLOSED = 80;
    /**
     * Connections not admitted yet (no CONNACK accepted them) ended because their buffers would have held more than
     * such connections share of the pooled buffers (a quarter of netty's limit), or their address a sixteenth of it.
     */
    public static final int UNADMITTED_MEMORY_CLOSED = 81;
    /**
     * TLS handshakes ended because they held one of their I/O agent's handshake slots unread for three seconds while a
     * connection waited for one whose address held at least two fewer.
     */
    public static final int HANDSHAKES_YIELDED = 82;
    /**
     * Connections ended because the partial packet they held in their I/O agent's room for admitted connections'
     * partial packets went unread for two seconds while other connections waited for room.
     */
    public static final int PARTIAL_PACKETS_ENDED = 83;
    /**
     * Subscriptions whose retained messages did not all go with their SUBACK (more than one output carries, or a walk
     * past its window): the rest went in paced parts on the routing stage's ticks.
     */
    public static final int RETAINED_IN_PARTS = 84;
    /**
     * Messages queued for sessions whose clients are away, dropped to give room in --max-message-memory to a connected
     * client that held little.
     */
    public static final int AWAY_MESSAGES_TAKEN_BACK = 85;
    /**
     * Connections ended because their client acknowledged nothing of what it held in flight for
     * --stalled-client-timeout while clients that held less found no room in --max-message-memory.
     */
    public static final int STALLED_CLIENTS_ENDED = 86;

    private static final String[] NAMES =
    {
        "connections accepted", "connections closed", "connections refused (max-connections)", "protocol errors",
        "connect timeouts", "keep-alive timeouts", "packets in", "PUBLISH in", "PUBLISH out",
        "QoS 0 dropped (slow subscriber)", "messages dropped (max-queued)", "ingress ring full (reads paused)",
        "outbound ring full", "socket writes blocked", "unexpected errors (stages and agents)", "authentication failures",
        "packets too large", "sessions taken over", "messages queued (max-inflight)",
        "CONNECTs refused (max-client-id-length)", "subscriptions refused (max-subscriptions-per-client)",
        "topic filters refused (invalid or too deep)", "retained messages refused (max-retained)",
        "messages dropped (max-queued-bytes)", "persistent sessions expired",
        "packets backlogged (outbound ring full)", "message log full (reads paused)",
        "retained messages not sent (larger than a packet, or their part's slot failed)", "sessions moved between delivery shards",
        "first packets refused (not CONNECT, or over max-connect-size)",
        "connections refused (max-connections-per-address)", "connections refused (memory-budget)",
        "QoS 0 shed (memory-budget)", "PUBLISH refused (max-topic-levels)", "PUBLISH refused (max-topic-length)",
        "ingress ring occupancy (slots in use)",
        "events handled: auth stage",
        "events handled: routing stage",
        "events handled: delivery shards",
        "events handled: release stage",
        "route log full (routing waits)",
        "CONNECTs refused (max-sessions)",
        "packets out",
        "bytes in",
        "bytes out",
        "clients connected (gauge)",
        "sessions (gauge)",
        "subscriptions (gauge)",
        "retained messages (gauge)",
        "connections revoked (credentials no longer hold after a reload)",
        "PUBLISH to $SYS refused (read-only for clients)",
        "reload on SIGHUP (gauge)",
        "messages expired (message expiry interval)",
        "PUBLISH not sent (over the client's maximum packet size)",
        "fan-out targets left out (one message matched more than max-sessions targets)",
        "shared subscription messages re-dispatched (their member's session ended)",
        "shared subscription QoS 2 messages not re-dispatched (possibly received by the member that left)",
        "shared subscription messages dropped (re-dispatch backlog full)",
        "persistence group commits failed",
        "persistence write stalls (compaction or flush behind)",
        "persistence group commits",
        "events handled: persistence stage",
        "PUBLISH refused (ACL write)",
        "subscriptions refused (ACL read)",
        "messages not sent (ACL read)",
        "CONNECTs refused (auth-queue full)",
        "CONNECTs refused without hashing (address backing off)",
        "address back-offs started (auth-max-failures)",
        "addresses forgotten (auth-tracked-addresses)",
        "password hashes",
        "credential cache hits",
        "CONNECTs refused (password file reloaded during the hash)",
        "messages dropped (max-message-memory)",
        "message memory in bytes (gauge)",
        "requests refused (max-session-memory)",
        "session memory in bytes (gauge)",
        "requests refused (max-client-session-memory)",
        "CONNECTs refused (allow-zero-length-clientid, clientid-prefixes)",
        "retained messages not sent (check-retain-source)",
        "messages not sent (outside the client's mount_point)",
        "connections closed (no buffer memory left)",
        "connections closed before CONNACK (their share of buffer memory spent)",
        "TLS handshakes ended (stalled 3 s while another address waited for a slot)",
        "connections closed (partial packet stalled 2 s while others waited for room)",
        "subscriptions whose retained messages went in paced parts after the SUBACK",
        "messages of sessions away dropped (max-message-memory, for a connected client)",
        "connections ended (stalled-client-timeout: held unacknowledged messages while others found no room)"
    };

    private final CountersFile file;
    private final CountersManager manager;
    private final AtomicBuffer values;

    /**
     * Counters in process memory only, for tests that do not read them from outside.
     */
    public BrokerCounters()
    {
        this(CountersFile.inMemory());
    }

    /**
     * Allocates every counter in {@code file}, which must be new.
     */
    public BrokerCounters(final CountersFile file)
    {
        this.file = file;
        values = file.valuesBuffer();
        manager = new CountersManager(file.metaDataBuffer(), values);
        for (int i = 0; i < NAMES.length; i++)
        {
            final int id = manager.allocate(NAMES[i], BROKER_COUNTER_TYPE_ID);
            if (id != i)
            {
                throw new IllegalStateException("counter '" + NAMES[i] + "' got id " + id + ", expected " + i);
            }
        }
    }

    /**
     * @return the file (or memory) the counters and the error log live in.
     */
    public CountersFile file()
    {
        return file;
    }

    /**
     * @return a reader over the same counters, with their labels.
     */
    public CountersReader reader()
    {
        return manager;
    }

    public void increment(final int counter)
    {
        // atomic: several threads add to the same counter
        values.getAndAddLong(CountersReader.counterOffset(counter), 1);
    }

    public void add(final int counter, final long delta)
    {
        values.getAndAddLong(CountersReader.counterOffset(counter), delta);
    }

    /**
     * Sets a gauge (a counter one thread owns, such as a ring's occupancy).
     */
    public void set(final int counter, final long value)
    {
        values.putLongRelease(CountersReader.counterOffset(counter), value);
    }

    /**
     * @return the number of counters.
     */
    public static int count()
    {
        return NAMES.length;
    }

    /**
     * @return a counter's label, as {@code ringmq stat} prints it.
     */
    public static String label(final int counter)
    {
        return NAMES[counter];
    }

    /**
     * @return a counter's label as a key for topic names and metric names: lower case, words joined by '_',
     * no "(gauge)" marker ("connections refused (max-connections)" is "connections_refused_max_connections").
     */
    public static String key(final int counter)
    {
        final String label = NAMES[counter].replace("(gauge)", "").toLowerCase(java.util.Locale.ROOT);
        final StringBuilder key = new StringBuilder(label.length());
        boolean gap = false;
        for (int i = 0; i < label.length(); i++)
        {
            final char c = label.charAt(i);
            if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            {
                if (gap && key.length() > 0)
                {
                    key.append('_');
                }
                key.append(c);
                gap = false;
            }
            else
            {
                gap = true;
            }
        }
        return key.toString();
    }

    /**
     * @return whether a counter is a gauge (a level that goes up and down) rather than a running total.
     */
    public static boolean isGauge(final int counter)
    {
        return counter == INGRESS_RING_OCCUPANCY || NAMES[counter].endsWith("(gauge)");
    }

    public long get(final int counter)
    {
        return values.getLongVolatile(CountersReader.counterOffset(counter));
    }

    /**
     * @return one line per counter, "name: value", non-zero counters only unless {@code all}.
     */
    public String describe(final boolean all)
    {
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < NAMES.length; i++)
        {
            final long value = get(i);
            if (all || value != 0)
            {
                sb.append(NAMES[i]).append(": ").append(value).append('\n');
            }
        }
        return sb.toString();
    }
}
