package io.ringmq.transport;

import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.auth.Authenticator;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Reads a config file: ringmq's own options ({@code max-connections 5000}, {@code --port=1883}) and Mosquitto's
 * {@code mosquitto.conf} directives as Mosquitto means them, in one file or across {@code include_dir}: global
 * directives become options placed before the command line's (so the command line wins), {@code listener} lines
 * open listeners that the directives after them configure. An unknown directive, or one ringmq does not use, is one
 * warning naming file and line; a bad value is a {@link ConfigException} naming file, line and directive (exit 2).
 */
final class ConfigFile
{
    /** A directive the file got wrong; the CLI prints it and exits with 2. */
    static final class ConfigException extends IllegalArgumentException
    {
        private static final long serialVersionUID = 1L;

        ConfigException(final String where, final String directive, final String message)
        {
            super(where + ": " + directive + ": " + message);
        }
    }

    /** What the file says. */
    static final class Parsed
    {
        /** ringmq options, in file order. */
        final List<String> args = new ArrayList<>();
        /** The {@code listener} sections, in file order. */
        final List<ListenerSettings> listeners = new ArrayList<>();
        /** Listener directives given before any {@code listener} line: the default listener's. */
        final List<String[]> defaultListener = new ArrayList<>();
        /** Whether it gave a {@code port} (Mosquitto keeps the default listener then, besides the others). */
        boolean port;
        final List<String> warnings = new ArrayList<>();
        /** The {@code connection} sections: bridges to remote brokers. */
        final List<io.ringmq.pipeline.BridgeSettings> bridges = new ArrayList<>();
    }

    /** Directives of one listener (Mosquitto's listener-scoped settings, and ringmq's {@code proxy_protocol}). */
    private static final Set<String> LISTENER_DIRECTIVES = Set.of("protocol", "certfile", "keyfile", "cafile",
        "capath", "require_certificate", "use_identity_as_username", "use_subject_as_username", "crlfile", "psk_hint",
        "tls_version", "ciphers", "ciphers_tls1.3", "max_connections", "max_qos", "accept_protocol_versions", "mount_point",
        "proxy_protocol", "enable_proxy_protocol", "websocket_path", "bind_address");
    /** Directives that are a listener's under {@code per_listener_settings true}, global otherwise. */
    private static final Set<String> SECURITY_DIRECTIVES = Set.of("allow_anonymous", "password_file", "acl_file",
        "allow_zero_length_clientid");
    /** Mosquitto directives ringmq knows and does not use: one warning each, nothing else. */
    private static final Set<String> IGNORED = Set.of("log_dest", "log_type", "log_timestamp",
        "log_timestamp_format", "log_facility", "connection_messages", "pid_file", "user", "autosave_interval",
        "autosave_on_changes", "persistence_file", "allow_duplicate_messages", "upgrade_outgoing_qos",
        "set_tcp_nodelay", "psk_file",
        "dhparamfile", "tls_engine", "tls_engine_kpass_sha1", "tls_keyform",
        "auth_plugin", "plugin", "global_plugin", "websockets_log_level",
        "websockets_headers_size", "http_dir", "socket_domain", "memory_limit", "sys_interval_ms",
        "allow_anonymous_ws", "disable_client_cert_date_checks");

    private final Predicate<String> isOption;
    private final Parsed parsed = new Parsed();
    private final BridgeDirectives bridges = new BridgeDirectives(parsed.bridges, parsed.warnings);
    private boolean perListenerSettings;
    /** A global allow_anonymous was read. */
    private boolean anonymousGiven;
    /**
     * Whether any allow_zero_length_clientid said false without per_listener_settings: ringmq has one for the whole
     * broker then, and the strictest one read holds for every listener (under per_listener_settings each listener has
     * its own, as in Mosquitto).
     */
    private boolean zeroLengthClientIdRefused;
    /** The last allow_zero_length_clientid read for the whole broker (null: none yet). */
    private Boolean zeroLengthClientIdRead;
    /** Where a max_qos before any listener line was read (null: none). */
    private String topLevelMaxQos;
    private int depth;

    private ConfigFile(final Predicate<String> isOption)
    {
        this.isOption = isOption;
    }

    /**
     * @param isOption whether a long option name (without the dashes) is one of ringmq's.
     */
    static Parsed read(final Path file, final Predicate<String> isOption) throws IOException
    {
        final ConfigFile reader = new ConfigFile(isOption);
        reader.readFile(file);
        if (null != reader.topLevelMaxQos && !reader.parsed.listeners.isEmpty())
        {
            reader.parsed.warnings.add(reader.topLevelMaxQos + ": max_qos before any listener line caps every " +
                "listener in ringmq (Mosquitto gives it to the default listener only); put it after a listener " +
                "line for that listener alone");
        }
        if (!reader.anonymousGiven && (reader.parsed.port || !reader.parsed.listeners.isEmpty()))
        {
            // Mosquitto 2: allow_anonymous defaults to false once the file defines a listener (and for each listener
            // under per_listener_settings); ringmq's loopback default would let in every client of a same-host proxy
            reader.parsed.args.add(0, "--anonymous");
            reader.parsed.args.add(1, "none");
        }
        return reader.parsed;
    }

    private void readFile(final Path file) throws IOException
    {
        if (!Files.isReadable(file))
        {
            throw new IOException("cannot read config file " + file);
        }
        if (++depth > 8)
        {
            throw new IOException("config file " + file + ": include_dir nested more than 8 deep");
        }
        final List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++)
        {
            final String line = lines.get(i).strip();
            if (!line.isEmpty() && !line.startsWith("#"))
            {
                directive(file + ":" + (i + 1), line);
            }
        }
        depth--;
    }

    private void directive(final String where, final String line) throws IOException
    {
        if (line.startsWith("-"))
        {
            option(where, line);
            return;
        }
        final int split = indexOfSeparator(line);
        final String name = split < 0 ? line : line.substring(0, split);
        final String value = split < 0 ? "" : line.substring(split + 1).strip();
        if (name.indexOf('-') >= 0 || (split >= 0 && line.charAt(split) == '='))
        {
            option(where, line); // ringmq's own: "max-connections 100" or "port=1883"
            return;
        }
        mosquitto(where, name, value);
    }

    private void mosquitto(final String where, final String name, final String value) throws IOException
    {
        if (BridgeDirectives.NAMES.contains(name))
        {
            bridges.directive(where, name, value);
            return;
        }
        final ListenerSettings current = parsed.listeners.isEmpty() ? null :
            parsed.listeners.get(parsed.listeners.size() - 1);
        switch (name)
        {
            case "listener":
                parsed.listeners.add(listener(where, value));
                return;
            case "port":
                parsed.port = true;
                args("--port", integer(where, name, value, 0, 65_535));
                return;
            case "per_listener_settings":
                perListenerSettings = bool(where, name, value);
                return;
            case "include_dir":
                includeDir(where, value);
                return;
            default:
                break;
        }
        if (name.equals("max_qos") && null == current)
        {
            // read as the broker's in a general section: the strict reading (a listener's own may say less)
            topLevelMaxQos = where;
            args("--max-qos", integer(where, name, value, 0, 2));
            return;
        }
        if (LISTENER_DIRECTIVES.contains(name) || (perListenerSettings && SECURITY_DIRECTIVES.contains(name)))
        {
            if (name.equals("bind_address") && null == current)
            {
                args("--bind", value);
                return;
            }
            if (null == current && name.equals("allow_zero_length_clientid"))
            {
                // Mosquitto gives it to a default listener it may never open: ringmq's stricter reading, every
                // listener's (as without per_listener_settings), so a false is never lost
                global(where, name, value);
                return;
            }
            if (null == current)
            {
                parsed.defaultListener.add(new String[]{where, name, value});
                return;
            }
            applyListener(current, where, name, value);
            return;
        }
        if (IGNORED.contains(name) || name.startsWith("plugin_opt_") || name.startsWith("auth_opt_"))
        {
            parsed.warnings.add(where + ": '" + name + "' is not used by ringmq, ignored");
            return;
        }
        global(where, name, value);
    }

    private void global(final String where, final String name, final String value)
    {
        switch (name)
        {
            case "allow_anonymous":
                anonymousGiven = true;
                args("--anonymous", bool(where, name, value) ? "all" : "none");
                return;
            case "password_file":
                args("--password-file", value);
                return;
            case "acl_file":
                args("--acl-file", value);
                return;
            case "check_retain_source":
                args("--check-retain-source", String.valueOf(bool(where, name, value)));
                return;
            case "use_username_as_clientid":
                if (bool(where, name, value))
                {
                    parsed.args.add("--use-username-as-clientid");
                }
                return;
            case "max_inflight_messages":
                final int inflight = integer(where, name, value, 0, 65_535);
                args("--max-inflight", 0 == inflight ? "65535" : String.valueOf(inflight)); // 0: no limit
                return;
            case "max_queued_messages":
                final int queued = integer(where, name, value, 0, Integer.MAX_VALUE);
                args("--max-queued", 0 == queued ? "1000000" : String.valueOf(queued));
                return;
            case "max_queued_bytes":
                final long bytes = longValue(where, name, value);
                args("--max-queued-bytes", 0 == bytes ? String.valueOf(Long.MAX_VALUE / 2) : String.valueOf(bytes));
                return;
            case "message_size_limit":
                final int limit = integer(where, name, value, 0, 268_435_455);
                if (0 != limit) // ringmq limits the whole packet: the payload's limit and 1 KiB for topic and properties
                {
                    args("--max-packet-size", String.valueOf(Math.min(268_435_455, limit + 1024)));
                }
                return;
            case "max_packet_size":
                args("--max-packet-size", integer(where, name, value, 20, 268_435_455));
                return;
            case "max_keepalive":
                final int keepAlive = integer(where, name, value, 0, 65_535);
                args("--max-keepalive", 0 == keepAlive ? "65535" : String.valueOf(keepAlive));
                return;
            case "persistent_client_expiration":
                args("--persistent-client-expiration", expirationMs(where, name, value) + "ms");
                return;
            case "persistence": // Mosquitto's true/false, or ringmq's rocksdb/memory
                args("--persistence", value.equals("rocksdb") || value.equals("memory") ? value :
                    bool(where, name, value) ? "rocksdb" : "memory");
                return;
            case "persistence_location":
                args("--data-dir", value);
                return;
            case "sys_interval":
                args("--sys-interval", integer(where, name, value, 0, 65_535) + "s");
                return;
            case "allow_zero_length_clientid":
                final boolean allowed = bool(where, name, value);
                if (null != zeroLengthClientIdRead && allowed != zeroLengthClientIdRead)
                {
                    parsed.warnings.add(where + ": allow_zero_length_clientid differs from an earlier one: without " +
                        "per_listener_settings ringmq has one for every listener, and refuses empty client ids on all " +
                        "of them if any says false");
                }
                zeroLengthClientIdRead = allowed;
                zeroLengthClientIdRefused |= !allowed;
                args("--allow-zero-length-clientid", String.valueOf(!zeroLengthClientIdRefused));
                return;
            case "clientid_prefixes":
                args("--clientid-prefixes", value);
                return;
            case "retain_available":
                args("--retain-available", String.valueOf(bool(where, name, value)));
                return;
            default:
                if (isOption.test(name.replace('_', '-')))
                {
                    args("--" + name.replace('_', '-'), value);
                    return;
                }
                parsed.warnings.add(where + ": unknown directive '" + name + "', ignored");
        }
    }

    private ListenerSettings listener(final String where, final String value)
    {
        final String[] words = value.split("\\s+");
        if (value.isEmpty() || words.length > 2)
        {
            throw new ConfigException(where, "listener", "expected 'listener PORT [ADDRESS]', got '" + value + "'");
        }
        final int port = (integer(where, "listener", words[0], 0, 65_535));
        return new ListenerSettings(port, words.length == 2 ? words[1] : null);
    }

    /**
     * @return the bits of the protocol levels a comma-separated list names (4: 3.1.1; 5: 5.0; 3, MQTT 3.1, is taken
     * and changes nothing: ringmq refuses 3.1 clients on every listener).
     */
    private static int protocolVersions(final String where, final String name, final String value)
    {
        int versions = 0;
        for (final String level : value.split(",", -1))
        {
            switch (level.strip())
            {
                case "3":
                    versions |= 1 << 3;
                    break;
                case "4":
                    versions |= 1 << 4;
                    break;
                case "5":
                    versions |= 1 << 5;
                    break;
                default:
                    throw new ConfigException(where, name, "must be a comma-separated list of 3, 4 and 5, not '" +
                        value + "'");
            }
        }
        if (versions == 0)
        {
            throw new ConfigException(where, name, "names no protocol version (3: MQTT 3.1, 4: 3.1.1, 5: 5.0)");
        }
        return versions;
    }

    private void includeDir(final String where, final String value) throws IOException
    {
        final Path dir = Path.of(value);
        if (!Files.isDirectory(dir))
        {
            throw new ConfigException(where, "include_dir", "not a directory: " + value);
        }
        final List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir, "*.conf"))
        {
            stream.forEach(files::add);
        }
        files.sort(null); // Mosquitto reads them in case-sensitive alphabetical order
        for (final Path file : files)
        {
            readFile(file);
        }
    }

    /**
     * Applies one listener directive (from a {@code listener} section, or from {@code --listener}'s
     * {@code key=value} list).
     *
     * @throws ConfigException on a bad value.
     */
    static void applyListener(final ListenerSettings listener, final String where, final String name,
        final String value)
    {
        switch (name)
        {
            case "bind_address":
                listener.bindAddress(value);
                break;
            case "protocol":
                if (!value.equals("mqtt") && !value.equals("websockets"))
                {
                    throw new ConfigException(where, name, "must be mqtt or websockets, not '" + value + "'");
                }
                listener.protocol(value.equals("mqtt") ? ListenerSettings.Protocol.MQTT :
                    ListenerSettings.Protocol.WEBSOCKETS);
                break;
            case "websocket_path":
                if (!value.startsWith("/"))
                {
                    throw new ConfigException(where, name, "must start with '/': '" + value + "'");
                }
                listener.websocketPath(value);
                break;
            case "certfile":
                listener.certFile(Path.of(value));
                break;
            case "keyfile":
                listener.keyFile(Path.of(value));
                break;
            case "cafile":
                listener.caFile(Path.of(value));
                break;
            case "capath":
                listener.caPath(Path.of(value));
                break;
            case "require_certificate":
                listener.requireCertificate(bool(where, name, value));
                break;
            case "use_identity_as_username":
                listener.useIdentityAsUsername(bool(where, name, value));
                break;
            case "use_subject_as_username":
                listener.useSubjectAsUsername(bool(where, name, value));
                break;
            case "crlfile":
                listener.crlFile(Path.of(value));
                break;
            case "mount_point":
                if (!value.endsWith("/") || value.startsWith("$") || value.indexOf('+') >= 0 ||
                    value.indexOf('#') >= 0)
                {
                    // without the / a filter of # would read tenant#; under $ a client of # would read $SYS/#
                    throw new ConfigException(where, name, "must be a topic prefix ending in /, not starting with $, " +
                        "without + or #, not '" + value + "'");
                }
                listener.mountPoint(value);
                break;
            case "psk_hint":
                // it makes the listener TLS-PSK, which the JDK's TLS does not speak: served as is it would be plain
                throw new ConfigException(where, name, "TLS-PSK is not supported (the JDK's TLS has no PSK cipher " +
                    "suites): give the listener certfile and keyfile instead");
            case "tls_version":
                if (!List.of("tlsv1.3", "tlsv1.2", "tlsv1.1", "tlsv1").contains(value))
                {
                    throw new ConfigException(where, name, "must be tlsv1.3, tlsv1.2, tlsv1.1 or tlsv1, not '" + value +
                        "'");
                }
                listener.tlsVersion(value);
                break;
            case "ciphers":
                listener.ciphers(value);
                break;
            case "ciphers_tls1.3":
                listener.ciphersTls13(value);
                break;
            case "max_connections":
                final int max = (integer(where, name, value, -1, Integer.MAX_VALUE));
                listener.maxConnections(max <= 0 ? ListenerSettings.UNLIMITED : max);
                break;
            case "max_qos":
                listener.maxQos(integer(where, name, value, 0, 2));
                break;
            case "allow_zero_length_clientid": // per_listener_settings true
                listener.refusesEmptyClientId(!bool(where, name, value));
                break;
            case "accept_protocol_versions": // Mosquitto 2.1
                listener.acceptProtocolVersions(protocolVersions(where, name, value));
                break;
            case "proxy_protocol":
            case "enable_proxy_protocol": // Mosquitto 2.1: 1 or 2
                listener.proxyProtocol(proxyProtocol(where, name, value));
                break;
            case "allow_anonymous":
                listener.anonymous(bool(where, name, value) ? Authenticator.AnonymousPolicy.ALL :
                    Authenticator.AnonymousPolicy.NONE);
                break;
            case "password_file":
                listener.passwordFile(Path.of(value));
                break;
            case "acl_file":
                listener.aclFile(Path.of(value));
                break;
            default:
                throw new ConfigException(where, name, "not a listener setting");
        }
    }

    /**
     * Reads {@code --listener PORT[@ADDRESS][,name=value]...}, the names those of a Mosquitto listener section.
     */
    static ListenerSettings parseListener(final String spec)
    {
        final String where = "--listener " + spec;
        final String[] parts = spec.split(",");
        final String head = parts[0].strip();
        final int at = head.indexOf('@');
        final int port = (integer(where, "port", at < 0 ? head : head.substring(0, at), 0, 65_535));
        final ListenerSettings listener = new ListenerSettings(port, at < 0 ? null : head.substring(at + 1));
        for (int i = 1; i < parts.length; i++)
        {
            final String part = parts[i].strip();
            final int equals = part.indexOf('=');
            if (equals <= 0)
            {
                throw new ConfigException(where, part, "expected name=value");
            }
            applyListener(listener, where, part.substring(0, equals).strip(), part.substring(equals + 1).strip());
        }
        return listener;
    }

    private static ListenerSettings.ProxyProtocol proxyProtocol(final String where, final String name,
        final String value)
    {
        switch (value.toLowerCase(Locale.ROOT))
        {
            case "1":
            case "v1":
                return ListenerSettings.ProxyProtocol.V1;
            case "2":
            case "v2":
                return ListenerSettings.ProxyProtocol.V2;
            case "any":
            case "true":
                return ListenerSettings.ProxyProtocol.ANY;
            case "false":
            case "none":
                return ListenerSettings.ProxyProtocol.NONE;
            default:
                throw new ConfigException(where, name, "must be v1, v2 or any, not '" + value + "'");
        }
    }

    /**
     * Mosquitto's expiration: a number and h, d, w, m (months of 30 days) or y (365 days).
     */
    static long expirationMs(final String where, final String name, final String value)
    {
        final String[] units = {"h", "d", "w", "m", "y"};
        final long[] hours = {1, 24, 24 * 7, 24 * 30, 24 * 365};
        for (int i = 0; i < units.length; i++)
        {
            if (value.length() > 1 && value.endsWith(units[i]))
            {
                try
                {
                    final long count = Long.parseLong(value.substring(0, value.length() - 1));
                    if (count > 0)
                    {
                        return Math.multiplyExact(count, hours[i] * 3_600_000L);
                    }
                }
                catch (final NumberFormatException | ArithmeticException ex)
                {
                    break;
                }
            }
        }
        throw new ConfigException(where, name, "expected a number and h, d, w, m or y (e.g. 2d), not '" + value + "'");
    }

    static boolean bool(final String where, final String name, final String value)
    {
        switch (value)
        {
            case "true":
            case "1":
                return true;
            case "false":
            case "0":
                return false;
            default:
                throw new ConfigException(where, name, "must be true or false, not '" + value + "'");
        }
    }

    static int integer(final String where, final String name, final String value, final int min,
        final int max)
    {
        try
        {
            final long number = Long.parseLong(value);
            if (number >= min && number <= max)
            {
                return (int)number;
            }
        }
        catch (final NumberFormatException ex)
        {
            // below
        }
        throw new ConfigException(where, name, "must be a whole number " + min + ".." + max + ", not '" + value + "'");
    }

    private static long longValue(final String where, final String name, final String value)
    {
        try
        {
            final long number = Long.parseLong(value);
            if (number >= 0)
            {
                return number;
            }
        }
        catch (final NumberFormatException ex)
        {
            // below
        }
        throw new ConfigException(where, name, "must be a whole number of bytes, not '" + value + "'");
    }

    private void args(final String option, final int value)
    {
        args(option, String.valueOf(value));
    }

    private void args(final String option, final String value)
    {
        parsed.args.add(option);
        parsed.args.add(value);
    }

    private void option(final String where, final String line)
    {
        final String option = line.startsWith("-") ? line : "--" + line;
        final int split = indexOfSeparator(option);
        final String written = split < 0 ? option : option.substring(0, split);
        // a key counts written with '_' as with '-' ("slot_inline_bytes=128"), as a Mosquitto-style line does
        final String name = "--" + written.replaceFirst("^-+", "").replace('_', '-');
        if (!isOption.test(name.substring(2)))
        {
            parsed.warnings.add(where + ": unknown option '" + written + "', ignored");
            return;
        }
        parsed.args.add(name);
        if (split >= 0)
        {
            parsed.args.add(option.substring(split + 1).strip());
        }
    }

    private static int indexOfSeparator(final String text)
    {
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if (c == '=' || c == ' ' || c == '\t')
            {
                return i;
            }
        }
        return -1;
    }
}
