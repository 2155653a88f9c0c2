package io.ringmq.transport;

import io.ringmq.pipeline.BridgeSettings;
import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A Mosquitto config file's bridge sections read as they are: every directive a bridge has, Mosquitto's defaults
 * where a file says nothing, and a bad line named by file, line and directive.
 */
class BridgeDirectivesTest
{
    @TempDir
    Path directory;

    private BrokerContext read(final String... lines) throws Exception
    {
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        return ConfigFileTest.context(conf);
    }

    private void refused(final String message, final String... lines)
    {
        assertThatThrownBy(() -> read(lines)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(message);
    }

    @Test
    @DisplayName("a full section: addresses, topic lines with prefixes and quotes, credentials, TLS, timings")
    void fullSection() throws Exception
    {
        final BrokerContext context = read("listener 1883", "connection cloud",
            "address broker.example.com:8883 [::1]:1884 10.0.0.2", "round_robin true",
            "topic sensors/# out 1", "topic cmd/+ in 2 edge/ cloud/", "topic \"\" both 0 local/one remote/two",
            "topic # both", "remote_clientid edge-1", "local_clientid edge-1-local", "remote_username u",
            "remote_password p", "cleansession true", "keepalive_interval 30", "bridge_protocol_version mqttv50",
            "try_private false", "notifications false", "notification_topic state/edge", "restart_timeout 2 20",
            "bridge_cafile /etc/ca.pem", "bridge_insecure true", "bridge_tls_version tlsv1.3",
            "bridge_outgoing_retain false", "bridge_receive_maximum 100", "bridge_max_packet_size 4096",
            "bridge_session_expiry_interval 600");
        assertThat(context.bridges()).hasSize(1);
        final BridgeSettings bridge = context.bridges().get(0);
        assertThat(bridge.addresses()).extracting(Object::toString)
            .containsExactly("broker.example.com:8883", "::1:1884", "10.0.0.2:1883");
        assertThat(bridge.roundRobin()).isTrue();
        assertThat(bridge.topics()).extracting(Object::toString).containsExactly("\"sensors/#\" out 1",
            "\"cmd/+\" in 2 \"edge/\" \"cloud/\"", "\"\" both 0 \"local/one\" \"remote/two\"", "\"#\" both 0");
        assertThat(bridge.topics().get(1).localFilter()).isEqualTo("edge/cmd/+");
        assertThat(bridge.topics().get(1).remoteFilter()).isEqualTo("cloud/cmd/+");
        assertThat(bridge.topics().get(2).localFilter()).isEqualTo("local/one");
        assertThat(bridge.remoteClientId()).isEqualTo("edge-1");
        assertThat(bridge.localClientId()).isEqualTo("edge-1-local");
        assertThat(bridge.remoteUserName()).isEqualTo("u");
        assertThat(bridge.remotePassword()).isEqualTo("p");
        assertThat(bridge.cleanSession()).isTrue();
        assertThat(bridge.localCleanSession()).isTrue();
        assertThat(bridge.keepAliveSeconds()).isEqualTo(30);
        assertThat(bridge.protocolVersion()).isEqualTo(5);
        assertThat(bridge.tryPrivate()).isFalse();
        assertThat(bridge.notifications()).isFalse();
        assertThat(bridge.notificationTopic()).isEqualTo("state/edge");
        assertThat(bridge.restartBaseSeconds()).isEqualTo(2);
        assertThat(bridge.restartCapSeconds()).isEqualTo(20);
        assertThat(bridge.isTls()).isTrue();
        assertThat(bridge.insecure()).isTrue();
        assertThat(bridge.outgoingRetain()).isFalse();
        assertThat(bridge.receiveMaximum()).isEqualTo(100);
        assertThat(bridge.maxPacketSize()).isEqualTo(4096);
        assertThat(bridge.sessionExpirySeconds()).isEqualTo(600);
    }

    @Test
    @DisplayName("Mosquitto's defaults: out at QoS 0, <host>.<name> and local.<that> as client ids, the $SYS state "
        + "topic, persistent sessions, try_private, keep-alive 60, restart with jitter 5 to 30 s; two bridges")
    void defaults() throws Exception
    {
        final BrokerContext context = read("connection one", "address 127.0.0.1", "topic a/#",
            "connection two", "addresses 10.1.1.1:1999", "topic b in", "clientid old-name", "username legacy");
        final BridgeSettings one = context.bridges().get(0);
        assertThat(one.topics().get(0).direction).isEqualTo(BridgeSettings.Direction.OUT);
        assertThat(one.topics().get(0).qos).isZero();
        assertThat(one.remoteClientId()).endsWith(".one");
        assertThat(one.localClientId()).isEqualTo("local." + one.remoteClientId());
        assertThat(one.notificationTopic()).isEqualTo("$SYS/broker/connection/" + one.remoteClientId() + "/state");
        assertThat(one.notifications()).isTrue();
        assertThat(one.cleanSession()).isFalse();
        assertThat(one.tryPrivate()).isTrue();
        assertThat(one.keepAliveSeconds()).isEqualTo(60);
        assertThat(one.restartJitter()).isTrue();
        assertThat(one.restartBaseSeconds()).isEqualTo(5);
        assertThat(one.restartCapSeconds()).isEqualTo(30);
        assertThat(one.protocolVersion()).isEqualTo(4);
        assertThat(one.isTls()).isFalse();
        final BridgeSettings two = context.bridges().get(1);
        assertThat(two.topics().get(0).direction).isEqualTo(BridgeSettings.Direction.IN);
        assertThat(two.remoteClientId()).isEqualTo("old-name");
        assertThat(two.remoteUserName()).isEqualTo("legacy");
        assertThat(two.addresses()).extracting(Object::toString).containsExactly("10.1.1.1:1999");
    }

    @Test
    @DisplayName("bad lines are named: a directive before any connection, a bad direction or QoS, a wildcard in a "
        + "prefix, an empty pattern without prefixes, a bad filter, PSK, MQTT 3.1, a missing address or topic, a "
        + "wildcard state topic, an empty remote id for a kept session")
    void badLines()
    {
        refused("before any connection line", "address 127.0.0.1");
        refused("direction must be out, in or both", "connection c", "address h", "topic a sideways 1");
        refused("must be a whole number 0..2", "connection c", "address h", "topic a out 3");
        refused("a prefix must not hold + or #", "connection c", "address h", "topic a out 1 x/+/ y/");
        refused("an empty pattern needs both prefixes", "connection c", "address h", "topic \"\" out 1");
        refused("is not a topic filter", "connection c", "address h", "topic a/#/b out 1");
        refused("TLS-PSK is not available", "connection c", "address h", "topic a", "bridge_identity me");
        refused("must be mqttv311 or mqttv50", "connection c", "address h", "topic a",
            "bridge_protocol_version mqttv31");
        refused("no address", "connection c", "topic a");
        refused("no topic", "connection c", "address h");
        refused("two bridges named c", "connection c", "address h", "topic a", "connection c", "address h",
            "topic b");
        refused("must be a whole number 1..65535", "connection c", "address h:0", "topic a");
        refused("bridge_certfile and bridge_keyfile go together", "connection c", "address h", "topic a",
            "bridge_cafile ca.pem", "bridge_certfile c.pem");
        refused("local_clientid and remote_clientid are the same", "connection c", "address 127.0.0.1", "topic a",
            "remote_clientid same", "local_clientid same");
        refused("notification_topic must be a topic name", "connection c", "address h", "topic a",
            "notification_topic state/#");
        refused("an empty remote_clientid needs cleansession true", "connection c", "address h", "topic a",
            "remote_clientid");
    }

    @Test
    @DisplayName("what the bridge does without is a warning: lazy start, local_username, an unknown bridge option")
    void warnings() throws Exception
    {
        final Path conf = directory.resolve("warn.conf");
        Files.writeString(conf, String.join("\n", "connection c", "address h", "topic a", "start_type lazy",
            "local_username me", "bridge_alpn mqtt") + "\n", StandardCharsets.UTF_8);
        final List<String> warnings = ConfigFile.read(conf, name -> false).warnings;
        assertThat(warnings).hasSize(3);
        assertThat(warnings.get(0)).contains("start_type lazy");
        assertThat(warnings.get(1)).contains("local_username");
        assertThat(warnings.get(2)).contains("bridge_alpn");
    }

    @Test
    @DisplayName("words: white space splits, quotes hold an empty word or one with spaces")
    void tokens()
    {
        assertThat(BridgeDirectives.tokens("  a  \"\" \"b c\" d")).containsExactly("a", "", "b c", "d");
        assertThat(BridgeDirectives.tokens("\"open")).containsExactly("open");
        assertThat(BridgeDirectives.tokens("")).isEmpty();
    }
}
