package io.ringmq.transport;

import io.ringmq.pipeline.BridgeSettings;
import io.ringmq.pipeline.auth.AclMatch;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The bridge directives of a Mosquitto config file: {@code connection NAME} opens a bridge, and the directives below
 * it (wherever other lines come between, as in Mosquitto) are that bridge's. What ringmq cannot do is refused when it
 * would leave a bridge that cannot work (PSK), and warned about when the bridge works without it.
 */
final class BridgeDirectives
{
    /** Every directive of a bridge section, the ones ringmq warns about included. */
    static final Set<String> NAMES = Set.of("connection", "address", "addresses", "topic", "remote_clientid",
        "clientid", "local_clientid", "remote_username", "username", "remote_password", "password", "cleansession",
        "local_cleansession", "keepalive_interval", "bridge_protocol_version", "try_private", "notifications",
        "notifications_local_only", "notification_topic", "restart_timeout", "round_robin", "start_type",
        "idle_timeout", "threshold", "bridge_cafile", "bridge_capath", "bridge_certfile", "bridge_keyfile",
        "bridge_insecure", "bridge_tls_version", "bridge_alpn", "bridge_outgoing_retain", "bridge_receive_maximum",
        "bridge_max_packet_size", "bridge_session_expiry_interval", "local_username", "local_password",
        "bridge_identity", "bridge_psk", "bridge_attempt_unsubscribe", "bridge_bind_address",
        "bridge_max_topic_alias", "bridge_require_ocsp", "bridge_reload_type");

    private final List<BridgeSettings> bridges;
    private final List<String> warnings;

    BridgeDirectives(final List<BridgeSettings> bridges, final List<String> warnings)
    {
        this.bridges = bridges;
        this.warnings = warnings;
    }

    void directive(final String where, final String name, final String value)
    {
        if (name.equals("connection"))
        {
            if (value.isEmpty())
            {
                throw new ConfigFile.ConfigException(where, name, "needs a name");
            }
            bridges.add(new BridgeSettings(value));
            return;
        }
        if (bridges.isEmpty())
        {
            throw new ConfigFile.ConfigException(where, name, "a bridge directive before any connection line");
        }
        final BridgeSettings bridge = bridges.get(bridges.size() - 1);
        switch (name)
        {
            case "address":
            case "addresses":
                for (final String address : tokens(value))
                {
                    address(where, name, bridge, address);
                }
                return;
            case "topic":
                bridge.topic(topic(where, tokens(value)));
                return;
            case "remote_clientid":
            case "clientid":
                bridge.remoteClientId(value);
                return;
            case "local_clientid":
                bridge.localClientId(value);
                return;
            case "remote_username":
            case "username":
                bridge.remoteUserName(value);
                return;
            case "remote_password":
            case "password":
                bridge.remotePassword(value);
                return;
            case "cleansession":
                bridge.cleanSession(ConfigFile.bool(where, name, value));
                return;
            case "local_cleansession":
                bridge.localCleanSession(ConfigFile.bool(where, name, value));
                return;
            case "keepalive_interval":
                bridge.keepAliveSeconds(ConfigFile.integer(where, name, value, 5, 65_535));
                return;
            case "bridge_protocol_version":
                bridge.protocolVersion(protocolVersion(where, name, value));
                return;
            case "try_private":
                bridge.tryPrivate(ConfigFile.bool(where, name, value));
                return;
            case "notifications":
                bridge.notifications(ConfigFile.bool(where, name, value));
                return;
            case "notifications_local_only":
                bridge.notificationsLocalOnly(ConfigFile.bool(where, name, value));
                return;
            case "notification_topic":
                bridge.notificationTopic(value);
                return;
            case "restart_timeout":
                restartTimeout(where, name, value, bridge);
                return;
            case "round_robin":
                bridge.roundRobin(ConfigFile.bool(where, name, value));
                return;
            case "bridge_cafile":
                bridge.caFile(value);
                return;
            case "bridge_capath":
                bridge.caPath(value);
                return;
            case "bridge_certfile":
                bridge.certFile(value);
                return;
            case "bridge_keyfile":
                bridge.keyFile(value);
                return;
            case "bridge_insecure":
                bridge.insecure(ConfigFile.bool(where, name, value));
                return;
            case "bridge_tls_version":
                bridge.tlsVersion(value);
                return;
            case "bridge_outgoing_retain":
                bridge.outgoingRetain(ConfigFile.bool(where, name, value));
                return;
            case "bridge_receive_maximum":
                bridge.receiveMaximum(ConfigFile.integer(where, name, value, 1, 65_535));
                return;
            case "bridge_max_packet_size":
                bridge.maxPacketSize(ConfigFile.integer(where, name, value, 0, Integer.MAX_VALUE));
                return;
            case "bridge_session_expiry_interval":
                bridge.sessionExpirySeconds(ConfigFile.integer(where, name, value, 0, Integer.MAX_VALUE));
                return;
            case "start_type":
                if (!value.equals("automatic"))
                {
                    warnings.add(where + ": start_type " + value + ": ringmq starts every bridge at once and " +
                        "keeps it connected (automatic)");
                }
                return;
            case "bridge_identity":
            case "bridge_psk":
                throw new ConfigFile.ConfigException(where, name, "TLS-PSK is not available on the JVM; give the " +
                    "bridge certificates (bridge_cafile, bridge_certfile, bridge_keyfile)");
            case "local_username":
            case "local_password":
                warnings.add(where + ": " + name + ": ringmq's bridges are not checked by the local password and " +
                    "ACL files (as Mosquitto's), ignored");
                return;
            default:
                warnings.add(where + ": '" + name + "' is not used by ringmq's bridges, ignored");
        }
    }

    private static void address(final String where, final String name, final BridgeSettings bridge,
        final String address)
    {
        String host = address;
        int port = 1883;
        final int colon = address.lastIndexOf(':');
        final boolean bracketed = address.startsWith("[");
        if (colon > 0 && (bracketed ? address.indexOf(']') < colon : address.indexOf(':') == colon))
        {
            host = address.substring(0, colon);
            port = ConfigFile.integer(where, name, address.substring(colon + 1), 1, 65_535);
        }
        if (bracketed && host.endsWith("]"))
        {
            host = host.substring(1, host.length() - 1);
        }
        if (host.isEmpty())
        {
            throw new ConfigFile.ConfigException(where, name, "no host in '" + address + "'");
        }
        bridge.address(host, port);
    }

    private static int protocolVersion(final String where, final String name, final String value)
    {
        switch (value)
        {
            case "mqttv311":
                return 4;
            case "mqttv50":
                return 5;
            default:
                throw new ConfigFile.ConfigException(where, name, "must be mqttv311 or mqttv50 (ringmq does not " +
                    "speak MQTT 3.1), not '" + value + "'");
        }
    }

    private static void restartTimeout(final String where, final String name, final String value,
        final BridgeSettings bridge)
    {
        final List<String> parts = tokens(value);
        if (parts.size() == 1)
        {
            bridge.restartTimeout(ConfigFile.integer(where, name, parts.get(0), 1, 86_400), 0);
            return;
        }
        if (parts.size() != 2)
        {
            throw new ConfigFile.ConfigException(where, name, "must be a delay, or a base and a cap, in seconds");
        }
        final int base = ConfigFile.integer(where, name, parts.get(0), 1, 86_400);
        final int cap = ConfigFile.integer(where, name, parts.get(1), base, 86_400);
        bridge.restartTimeout(base, cap);
    }

    /**
     * {@code topic pattern [[[out|in|both] qos] local-prefix remote-prefix]}, {@code ""} for an empty word.
     */
    static BridgeSettings.Topic topic(final String where, final List<String> words)
    {
        if (words.isEmpty() || words.size() > 5 || words.size() == 4)
        {
            throw new ConfigFile.ConfigException(where, "topic", "expected: pattern [[[out|in|both] qos] " +
                "local-prefix remote-prefix]");
        }
        final String pattern = words.get(0);
        BridgeSettings.Direction direction = BridgeSettings.Direction.OUT;
        if (words.size() > 1)
        {
            switch (words.get(1))
            {
                case "out": direction = BridgeSettings.Direction.OUT; break;
                case "in": direction = BridgeSettings.Direction.IN; break;
                case "both": direction = BridgeSettings.Direction.BOTH; break;
                default: throw new ConfigFile.ConfigException(where, "topic", "direction must be out, in or both, " +
                    "not '" + words.get(1) + "'");
            }
        }
        final int qos = words.size() > 2 ? ConfigFile.integer(where, "topic qos", words.get(2), 0, 2) : 0;
        final String localPrefix = words.size() == 5 ? words.get(3) : "";
        final String remotePrefix = words.size() == 5 ? words.get(4) : "";
        for (final String prefix : new String[]{localPrefix, remotePrefix})
        {
            if (prefix.indexOf('+') >= 0 || prefix.indexOf('#') >= 0 || prefix.indexOf('\0') >= 0)
            {
                throw new ConfigFile.ConfigException(where, "topic", "a prefix must not hold + or #: '" + prefix +
                    "'");
            }
        }
        if ((localPrefix + pattern).startsWith("$share/") || (remotePrefix + pattern).startsWith("$share/"))
        {
            // a bridge subscribes with No Local, which a shared subscription refuses [MQTT-3.8.3-4]
            throw new ConfigFile.ConfigException(where, "topic", "a bridge cannot take a shared subscription " +
                "($share/...): '" + pattern + "'");
        }
        if (pattern.isEmpty() && (localPrefix.isEmpty() || remotePrefix.isEmpty()))
        {
            throw new ConfigFile.ConfigException(where, "topic", "an empty pattern needs both prefixes (each is " +
                "then the whole topic)");
        }
        final BridgeSettings.Topic topic = new BridgeSettings.Topic(pattern, direction, qos, localPrefix,
            remotePrefix);
        for (final String filter : new String[]{topic.localFilter(), topic.remoteFilter()})
        {
            final String invalid = AclMatch.invalid(filter);
            if (filter.isEmpty() || null != invalid)
            {
                throw new ConfigFile.ConfigException(where, "topic", "'" + filter + "' is not a topic filter" +
                    (null == invalid ? "" : ": " + invalid));
            }
        }
        return topic;
    }

    /**
     * @return the words of a value, split at white space; {@code "..."} is one word (possibly empty).
     */
    static List<String> tokens(final String value)
    {
        final List<String> words = new ArrayList<>();
        int i = 0;
        while (i < value.length())
        {
            final char c = value.charAt(i);
            if (Character.isWhitespace(c))
            {
                i++;
            }
            else if (c == '"')
            {
                final int end = value.indexOf('"', i + 1);
                final int stop = end < 0 ? value.length() : end;
                words.add(value.substring(i + 1, stop));
                i = stop + 1;
            }
            else
            {
                int end = i;
                while (end < value.length() && !Character.isWhitespace(value.charAt(end)))
                {
                    end++;
                }
                words.add(value.substring(i, end));
                i = end;
            }
        }
        return words;
    }
}
