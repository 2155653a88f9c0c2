package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.auth.Authenticator;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Mosquitto's {@code mosquitto.conf} read as it is: global directives as ringmq options, listener sections,
 * {@code per_listener_settings}, {@code include_dir}, warnings for what ringmq does not use, and bad values named by
 * file, line and directive.
 */
class ConfigFileTest
{
    static BrokerContext context(final Path config, final String... more) throws Exception
    {
        final String[] args = new String[more.length + 2];
        args[0] = "-c";
        args[1] = config.toString();
        System.arraycopy(more, 0, args, 2, more.length);
        final Main.Options options = Main.withConfigFile(args);
        final Main main = new Main();
        final CommandLine commandLine = new CommandLine(main);
        commandLine.setOverwrittenOptionsAllowed(true);
        commandLine.parseArgs(options.args());
        main.fromFile = options.fromFile();
        return main.context().conclude();
    }

    @Test
    @DisplayName("a typical mosquitto.conf: global limits, two listeners each with its own settings")
    void mosquittoConf(@TempDir final Path dir) throws Exception
    {
        final Path config = dir.resolve("mosquitto.conf");
        Files.writeString(config, String.join("\n",
            "# Place your local configuration in /etc/mosquitto/conf.d/",
            "pid_file /run/mosquitto/mosquitto.pid",
            "persistence true",
            "persistence_location " + dir.resolve("data"),
            "log_dest file /var/log/mosquitto/mosquitto.log",
            "allow_anonymous false",
            "password_file " + dir.resolve("passwd"),
            "acl_file " + dir.resolve("acl"),
            "use_username_as_clientid true",
            "max_inflight_messages 0",
            "max_queued_messages 500",
            "max_queued_bytes 1048576",
            "message_size_limit 65536",
            "max_keepalive 120",
            "persistent_client_expiration 2d",
            "retain_available false",
            "allow_zero_length_clientid false",
            "clientid_prefixes secure-",
            "auto_id_prefix secure-auto-",
            "queue_qos0_messages true",
            "check_retain_source false",
            "",
            "listener 1883 127.0.0.1",
            "max_connections 50",
            "max_qos 1",
            "",
            "listener 8883",
            "certfile /etc/mosquitto/certs/server.crt",
            "keyfile /etc/mosquitto/certs/server.key",
            "cafile /etc/mosquitto/ca_certificates/ca.crt",
            "require_certificate true",
            "use_identity_as_username true",
            "use_subject_as_username true",
            "crlfile /etc/mosquitto/ca_certificates/crl.pem",
            "tls_version tlsv1.2",
            "",
            "listener 9001",
            "protocol websockets",
            ""));
        final BrokerContext context = context(config);
        final List<ListenerSettings> listeners = context.listeners();
        assertThat(listeners).hasSize(3); // no port directive: no default listener, as in Mosquitto
        assertThat(listeners.get(0).port()).isEqualTo(1883);
        assertThat(listeners.get(0).bindAddress()).isEqualTo("127.0.0.1");
        assertThat(listeners.get(0).maxConnections()).isEqualTo(50);
        final ListenerSettings tls = listeners.get(1);
        assertThat(tls.isTls()).isTrue();
        assertThat(tls.keyFile()).isEqualTo(Path.of("/etc/mosquitto/certs/server.key"));
        assertThat(tls.requireCertificate()).isTrue();
        assertThat(tls.useIdentityAsUsername()).isTrue();
        assertThat(tls.useSubjectAsUsername()).isTrue();
        assertThat(tls.crlFile()).isEqualTo(Path.of("/etc/mosquitto/ca_certificates/crl.pem"));
        assertThat(tls.tlsVersion()).isEqualTo("tlsv1.2");
        assertThat(listeners.get(2).protocol()).isEqualTo(ListenerSettings.Protocol.WEBSOCKETS);
        assertThat(context.auth().anonymous()).isEqualTo(Authenticator.AnonymousPolicy.NONE);
        assertThat(context.auth().passwordFile()).isEqualTo(dir.resolve("passwd"));
        assertThat(context.auth().aclFile()).isEqualTo(dir.resolve("acl"));
        assertThat(context.auth().useUserNameAsClientId()).isTrue();
        assertThat(context.auth().checkRetainSource()).isFalse();
        assertThat(context.limits().maxInflight()).isEqualTo(65_535);
        assertThat(context.limits().maxQueued()).isEqualTo(500);
        assertThat(context.limits().maxQueuedBytes()).isEqualTo(1_048_576);
        assertThat(context.limits().maxPacketSize()).isEqualTo(65_536 + 1024);
        assertThat(context.limits().maxKeepAliveSeconds()).isEqualTo(120);
        assertThat(context.limits().persistentClientExpirationMs()).isEqualTo(2L * 24 * 3600 * 1000);
        assertThat(context.limits().maxQos()).as("the broker's: the listener's is its own").isEqualTo(2);
        assertThat(listeners.get(0).maxQos()).isEqualTo(1);
        assertThat(listeners.get(1).maxQos()).isEqualTo(2);
        assertThat(context.limits().retainAvailable()).isFalse();
        assertThat(context.limits().allowZeroLengthClientId()).isFalse();
        assertThat(context.limits().clientIdPrefix()).isEqualTo("secure-");
        assertThat(context.limits().autoIdPrefix()).isEqualTo("secure-auto-");
        assertThat(context.limits().queueQos0Messages()).isTrue();
        assertThat(context.persistence().persistent()).isTrue();
        assertThat(context.persistence().dataDir()).isEqualTo(dir.resolve("data"));
    }

    @Test
    @DisplayName("port keeps the default listener beside the others; settings before any listener are its own")
    void portAndDefaultListener(@TempDir final Path dir) throws Exception
    {
        final Path config = dir.resolve("mosquitto.conf");
        Files.writeString(config, "port 1884\nbind_address 127.0.0.1\nmax_connections 10\nlistener 1885\n");
        final List<ListenerSettings> listeners = context(config).listeners();
        assertThat(listeners).extracting(ListenerSettings::port).containsExactly(1884, 1885);
        assertThat(listeners.get(0).bindAddress()).isEqualTo("127.0.0.1");
        assertThat(listeners.get(0).maxConnections()).isEqualTo(10);
        assertThat(listeners.get(1).maxConnections()).isEqualTo(ListenerSettings.UNLIMITED);
        // the command line wins, and adds listeners of its own
        final List<ListenerSettings> more = context(config, "--port", "1890",
            "--listener", "1891@127.0.0.1,protocol=websockets,websocket_path=/mqtt,proxy_protocol=v2").listeners();
        assertThat(more).extracting(ListenerSettings::port).containsExactly(1890, 1885, 1891);
        assertThat(more.get(2).websocketPath()).isEqualTo("/mqtt");
        assertThat(more.get(2).proxyProtocol()).isEqualTo(ListenerSettings.ProxyProtocol.V2);
    }

    @Test
    @DisplayName("per_listener_settings true: allow_anonymous, password_file and acl_file belong to a listener")
    void perListenerSettings(@TempDir final Path dir) throws Exception
    {
        final Path config = dir.resolve("mosquitto.conf");
        Files.writeString(config, String.join("\n", "per_listener_settings true", "listener 1883 127.0.0.1",
            "allow_anonymous true", "listener 8883", "allow_anonymous false", "password_file " + dir.resolve("p"),
            "acl_file " + dir.resolve("acl"), ""));
        final BrokerContext context = context(config);
        final List<ListenerSettings> listeners = context.listeners();
        assertThat(listeners.get(0).anonymous()).isEqualTo(Authenticator.AnonymousPolicy.ALL);
        assertThat(listeners.get(1).anonymous()).isEqualTo(Authenticator.AnonymousPolicy.NONE);
        assertThat(listeners.get(1).passwordFile()).isEqualTo(dir.resolve("p"));
        assertThat(listeners.get(1).aclFile()).isEqualTo(dir.resolve("acl"));
        assertThat(context.auth().passwordFile()).isEqualTo(dir.resolve("p")); // the one file the listeners name
    }

    @Test
    @Timeout(60)
    @DisplayName("as in Mosquitto 2, a file that defines a listener and says nothing of allow_anonymous refuses "
        + "anonymous clients, from loopback too (where a same-host proxy puts everyone)")
    void anonymousRefusedByDefaultOnceAListenerIsDefined(@TempDir final Path dir) throws Exception
    {
        final Path config = dir.resolve("mosquitto.conf");
        Files.writeString(config, String.join("\n", "persistence false", "sys_interval 0", "listener 0 127.0.0.1", ""));
        assertThat(context(config).auth().anonymous()).isEqualTo(Authenticator.AnonymousPolicy.NONE);
        assertThat(context(config, "--anonymous", "all").auth().anonymous())
            .isEqualTo(Authenticator.AnonymousPolicy.ALL);
        final Path portOnly = dir.resolve("port.conf");
        Files.writeString(portOnly, "port 1884\n");
        assertThat(context(portOnly).auth().anonymous()).isEqualTo(Authenticator.AnonymousPolicy.NONE);
        final Path noListener = dir.resolve("limits.conf");
        Files.writeString(noListener, "max_queued_messages 10\n");
        assertThat(context(noListener).auth().anonymous()).isEqualTo(Authenticator.AnonymousPolicy.LOOPBACK);
        try (Broker broker = Broker.launch(context(config)))
        {
            assertThatThrownBy(() -> Paho.connect(broker.ports()[0], "anonymous")).isInstanceOf(Exception.class);
        }
    }

    @Test
    @DisplayName("include_dir reads every .conf in it, in alphabetical order, where the line stands")
    void includeDir(@TempDir final Path dir) throws Exception
    {
        final Path confD = Files.createDirectory(dir.resolve("conf.d"));
        Files.writeString(confD.resolve("b.conf"), "max_queued_messages 200\n");
        Files.writeString(confD.resolve("a.conf"), "max_queued_messages 100\nlistener 1886\n");
        Files.writeString(confD.resolve("ignored.txt"), "max_queued_messages 999\n");
        final Path config = dir.resolve("mosquitto.conf");
        Files.writeString(config, "max_queued_messages 50\ninclude_dir " + confD + "\n");
        final BrokerContext context = context(config);
        assertThat(context.limits().maxQueued()).isEqualTo(200);
        assertThat(context.listeners()).extracting(ListenerSettings::port).containsExactly(1886);
        // a directory including itself stops at a bounded depth
        final Path loop = Files.createDirectory(dir.resolve("loop"));
        Files.writeString(loop.resolve("self.conf"), "include_dir " + loop + "\n");
        Files.writeString(config, "include_dir " + loop + "\n");
        assertThatThrownBy(() -> context(config)).hasMessageContaining("nested more than 8 deep");
    }

    @Test
    @DisplayName("ringmq's own options in the same file; unknown directives are one warning naming file and line")
    void ownOptionsAndWarnings(@TempDir final Path dir) throws Exception
    {
        final Path config = dir.resolve("mixed.conf");
        Files.writeString(config, String.join("\n", "port 0", "threading shared", "max-inflight=7",
            "--max-connections 123", "log_type all", "frobnicate 3", "max_queued=77", "--max_queued_bytes=4096", ""));
        final Main.Options options = Main.withConfigFile(new String[]{"-c", config.toString()});
        assertThat(options.fromFile().warnings).containsExactly(
            config + ":5: 'log_type' is not used by ringmq, ignored",
            config + ":6: unknown directive 'frobnicate', ignored");
        final BrokerContext context = context(config);
        assertThat(context.threads().threading()).isEqualTo(BrokerContext.Threading.SHARED);
        assertThat(context.limits().maxInflight()).isEqualTo(7);
        assertThat(context.limits().maxConnections()).isEqualTo(123);
        assertThat(context.limits().maxQueued()).as("a key=value with '_' as with '-'").isEqualTo(77);
        assertThat(context.limits().maxQueuedBytes()).isEqualTo(4096);
    }

    @Test
    @DisplayName("a bad value exits 2 naming file, line and directive")
    void badValues(@TempDir final Path dir) throws Exception
    {
        final String[][] cases = {
            {"allow_anonymous maybe", "allow_anonymous: must be true or false, not 'maybe'"},
            {"listener", "listener: expected 'listener PORT [ADDRESS]'"},
            {"listener 70000", "listener: must be a whole number 0..65535, not '70000'"},
            {"listener 1883 a b", "listener: expected 'listener PORT [ADDRESS]'"},
            {"max_inflight_messages -3", "max_inflight_messages: must be a whole number 0..65535"},
            {"persistent_client_expiration 3x", "persistent_client_expiration: expected a number and h, d, w, m or y"},
            {"persistent_client_expiration 99999999999999999y", "persistent_client_expiration: expected a number"},
            {"listener 1883\nprotocol http", "protocol: must be mqtt or websockets, not 'http'"},
            {"listener 1883\ntls_version tlsv1.0", "tls_version: must be tlsv1.3, tlsv1.2, tlsv1.1 or tlsv1, not 'tlsv1.0'"},
            {"listener 1883\nproxy_protocol v3", "proxy_protocol: must be v1, v2 or any, not 'v3'"},
            {"include_dir /no/such/dir", "include_dir: not a directory: /no/such/dir"},
            {"max_qos 3", "max_qos: must be a whole number 0..2, not '3'"},
            {"listener 1883\npsk_hint ringmq", "psk_hint: TLS-PSK is not supported"},
            {"listener 1883\nmount_point tenant/+/", "mount_point: must be a topic prefix ending in /, not " +
                "starting with $, without + or #, not 'tenant/+/'"},
            {"listener 1883\nmount_point tenant", "mount_point: must be a topic prefix ending in /"},
            {"listener 1883\nmount_point $share/g/", "mount_point: must be a topic prefix ending in /, not starting"},
            {"retain_available no", "retain_available: must be true or false, not 'no'"},
            {"check_retain_source yes", "check_retain_source: must be true or false, not 'yes'"},
        };
        for (final String[] bad : cases)
        {
            final Path config = dir.resolve("bad.conf");
            Files.writeString(config, "# first line\n" + bad[0] + "\n");
            final int line = bad[0].contains("\n") ? 3 : 2;
            assertThat(run(2, "-c", config.toString())).as(bad[0])
                .contains("ringmq: " + config + ":" + line + ": " + bad[1]);
        }
        final Path config = dir.resolve("inconsistent.conf");
        Files.writeString(config, "listener 0\nrequire_certificate true\n");
        assertThat(run(2, "-c", config.toString())).contains("require_certificate needs certfile and keyfile");
        assertThat(run(2, "--listener", "1883,certfile")).contains("--listener 1883,certfile: certfile: expected name=value");
        assertThat(run(2, "--listener", "1883,frobnicate=1")).contains("frobnicate: not a listener setting");
    }

    @Test
    @DisplayName("Mosquitto's expiration units: h, d, w, m (30 days), y (365 days)")
    void expiration()
    {
        assertThat(ConfigFile.expirationMs("f:1", "x", "5h")).isEqualTo(5L * 3_600_000);
        assertThat(ConfigFile.expirationMs("f:1", "x", "1w")).isEqualTo(7L * 86_400_000);
        assertThat(ConfigFile.expirationMs("f:1", "x", "1m")).isEqualTo(30L * 86_400_000);
        assertThat(ConfigFile.expirationMs("f:1", "x", "1y")).isEqualTo(365L * 86_400_000);
        assertThatThrownBy(() -> ConfigFile.expirationMs("f:1", "x", "0d")).hasMessageStartingWith("f:1: x:");
        assertThatThrownBy(() -> ConfigFile.expirationMs("f:1", "x", "d")).hasMessageStartingWith("f:1: x:");
    }

    @Test
    @Timeout(60)
    @DisplayName("every listener of a config file accepts clients, each counted against its own max_connections")
    void listenersServe(@TempDir final Path dir) throws Exception
    {
        final Path config = dir.resolve("two.conf");
        Files.writeString(config, String.join("\n", "persistence false", "sys_interval 0", "allow_anonymous true",
            "listener 0 127.0.0.1", "listener 0 127.0.0.1", "max_connections 1", ""));
        final BrokerContext context = context(config);
        try (Broker broker = Broker.launch(context))
        {
            final int[] ports = broker.ports();
            assertThat(ports).hasSize(2);
            assertThat(broker.listenerNames()).containsExactly("mqtt://127.0.0.1:" + ports[0],
                "mqtt://127.0.0.1:" + ports[1]);
            try (Paho subscriber = Paho.connect(ports[0], "sub");
                Paho publisher = Paho.connect(ports[1], "pub"))
            {
                subscriber.client.subscribe("t", 1);
                publisher.publish("t", "across listeners", 1, false);
                assertThat(subscriber.next().payload()).isEqualTo("across listeners");
                // the second listener holds its one connection: another is refused there, not on the first
                assertThatThrownBy(() -> Paho.connect(ports[1], "second")).isInstanceOf(Exception.class);
                try (Paho third = Paho.connect(ports[0], "third"))
                {
                    assertThat(third.client.isConnected()).isTrue();
                }
            }
        }
    }

    @Test
    @Timeout(90)
    @DisplayName("a Mosquitto configuration started unchanged: plain, TLS and WebSocket listeners, a "
        + "mosquitto_passwd-style password file (101 iterations) and an ACL file, with Paho over tcp and ssl")
    void mosquittoConfStartedUnchanged(@TempDir final Path dir) throws Exception
    {
        final Path passwd = dir.resolve("passwd");
        io.ringmq.pipeline.auth.PasswordFile.write(passwd, "sensor", "s3cret", 101); // mosquitto_passwd's count
        io.ringmq.pipeline.auth.PasswordFile.write(passwd, "dashboard", "d4sh", 101);
        final Path acl = dir.resolve("acl");
        Files.writeString(acl, String.join("\n", "# sensors write their own readings, dashboards read them all",
            "user sensor", "topic write readings/sensor/#", "user dashboard", "topic read readings/#",
            "pattern readwrite clients/%c/#", ""));
        final Path config = dir.resolve("mosquitto.conf");
        Files.writeString(config, String.join("\n",
            "# /etc/mosquitto/mosquitto.conf",
            "pid_file /run/mosquitto/mosquitto.pid",
            "persistence false",
            "log_dest stdout",
            "sys_interval 0",
            "allow_anonymous false",
            "password_file " + passwd,
            "acl_file " + acl,
            "",
            "listener 0 127.0.0.1",
            "",
            "listener 0 127.0.0.1",
            "certfile " + ListenersTest.tls("server-chain.pem"),
            "keyfile " + ListenersTest.tls("server-key.pem"),
            "cafile " + ListenersTest.tls("ca.pem"),
            "tls_version tlsv1.2",
            "",
            "listener 0 127.0.0.1",
            "protocol websockets",
            ""));
        final Main.Options options = Main.withConfigFile(new String[]{"-c", config.toString()});
        assertThat(options.fromFile().warnings).containsExactly(
            config + ":2: 'pid_file' is not used by ringmq, ignored",
            config + ":4: 'log_dest' is not used by ringmq, ignored");
        try (Broker broker = Broker.launch(context(config)))
        {
            final int[] ports = broker.ports();
            assertThat(broker.listenerNames()).containsExactly("mqtt://127.0.0.1:" + ports[0],
                "mqtts://127.0.0.1:" + ports[1], "ws://127.0.0.1:" + ports[2]);
            final org.eclipse.paho.client.mqttv3.MqttConnectOptions dashboardOptions = Paho.options(true);
            dashboardOptions.setUserName("dashboard");
            dashboardOptions.setPassword("d4sh".toCharArray());
            dashboardOptions.setSocketFactory(TlsSocketLayerTest.clientContext(null).getSocketFactory());
            try (Paho dashboard = Paho.connect("ssl://127.0.0.1:" + ports[1], "dash-1", dashboardOptions))
            {
                final int[] granted = dashboard.client.subscribeWithResponse(new String[]{"readings/#", "admin/#"},
                    new int[]{1, 1}).getGrantedQos();
                assertThat(granted).containsExactly(1, 0x80);
                final org.eclipse.paho.client.mqttv3.MqttConnectOptions sensorOptions = Paho.options(true);
                sensorOptions.setUserName("sensor");
                sensorOptions.setPassword("s3cret".toCharArray());
                try (Paho sensor = Paho.connect(ports[0], "sensor-7", sensorOptions))
                {
                    sensor.publish("readings/other/t", "not mine", 1, false); // refused by the ACL, dropped
                    sensor.publish("readings/sensor/t", "21.5", 1, false);
                    assertThat(dashboard.next().payload()).isEqualTo("21.5");
                }
                final org.eclipse.paho.client.mqttv3.MqttConnectOptions wrong = Paho.options(true);
                wrong.setUserName("sensor");
                wrong.setPassword("guess".toCharArray());
                assertThatThrownBy(() -> Paho.connect(ports[0], "intruder", wrong)).isInstanceOf(Exception.class);
                assertThatThrownBy(() -> Paho.connect(ports[0], "anonymous")).isInstanceOf(Exception.class);
            }
        }
    }

    private static String run(final int expectedExit, final String... args)
    {
        return MainTest.run(expectedExit, args);
    }
}
