package io.ringmq.loadtest;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.ringmq.loadtest.LoadTestTest.jsonNumber;
import static io.ringmq.loadtest.LoadTestTest.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The generator's MQTT 5.0 paths against a {@link ScriptedBroker} that does on demand what real brokers do rarely:
 * the server's Receive Maximum, refusing PUBACKs, a server DISCONNECT, refused subscriptions, and a share group that
 * gets one message twice and another never.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Mqtt5PathsTest
{
    private static String addr(final ScriptedBroker broker)
    {
        return "127.0.0.1:" + broker.port();
    }

    @Test
    @DisplayName("a publisher never has more in flight than the CONNACK's Receive Maximum [MQTT-3.3.4-7]")
    void receiveMaximumFromConnack() throws IOException
    {
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            byte[] connackProperties()
            {
                return new byte[]{0x21, 0x00, 0x03}; // Receive Maximum 3
            }

            boolean holdAcks()
            {
                return true;
            }
        })
        {
            final String output = run(0, "-addr", addr(broker), "-protocol", "5", "-mode", "pub", "-pubs", "1",
                "-qos", "1", "-inflight", "32", "-duration", "500ms", "-quiet");
            assertThat(jsonNumber(output, "acknowledged")).as(output).isEqualTo(jsonNumber(output, "published")).isGreaterThan(3);
            assertThat(broker.maxUnacked.get()).isEqualTo(3);
        }
    }

    @Test
    @DisplayName("a PUBACK with a reason code of 0x80 or more is a refused message, not an acknowledged one")
    void refusingPubacks() throws IOException
    {
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            int pubackCode(final Connection connection, final int publisherId, final int sequence)
            {
                return sequence % 2 == 0 ? 0x97 : 0x10; // quota exceeded; no matching subscribers is a success
            }
        })
        {
            final String output = run(0, "-addr", addr(broker), "-protocol", "5", "-mode", "pub", "-pubs", "1",
                "-qos", "1", "-inflight", "1", "-duration", "500ms", "-quiet");
            final long published = jsonNumber(output, "published");
            assertThat(published).isGreaterThan(10);
            assertThat(jsonNumber(output, "rejected")).as(output).isEqualTo((published + 1) / 2);
            assertThat(jsonNumber(output, "acknowledged")).as(output).isEqualTo(published / 2);
            assertThat(output).contains("messages refused by the broker");
        }
    }

    @Test
    @DisplayName("a server's DISCONNECT 0x8B is counted with its reason code, and the subscriber's messages as lost")
    void serverDisconnect() throws IOException
    {
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            void afterSuback(final Connection connection) throws IOException
            {
                if (connection.clientId.startsWith("lt-s-0-"))
                {
                    connection.send(0xE0, 1, 0x8B); // server shutting down
                    connection.socket.close();
                }
            }
        })
        {
            final String output = run(0, "-addr", addr(broker), "-protocol", "5", "-mode", "p2p", "-pubs", "2",
                "-qos", "1", "-rate", "20", "-duration", "1s", "-quiet");
            final long published = jsonNumber(output, "published");
            assertThat(jsonNumber(output, "broker_disconnects")).as(output).isEqualTo(1);
            assertThat(jsonNumber(output, "connections_lost")).as(output).isEqualTo(1);
            // the subscriber that was told to go never gets its publisher's messages: about half of them
            assertThat(jsonNumber(output, "lost")).as(output).isEqualTo(published - jsonNumber(output, "delivered"))
                .isBetween(published / 2 - 1, published / 2 + 1);
            assertThat(output).contains("1 DISCONNECTs from the broker (0x8B x1)");
        }
    }

    @Test
    @DisplayName("refused subscriptions fail their subscribers at once, and the run says so")
    void refusedSubscriptions() throws IOException
    {
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            int subackCode(final Connection connection, final String filter)
            {
                return filter.startsWith("$share/") ? 0x9E : 1; // shared subscriptions not supported
            }
        })
        {
            final long startNs = System.nanoTime();
            final String output = run(0, "-addr", addr(broker), "-protocol", "5", "-mode", "fanin", "-pubs", "3",
                "-subs", "2", "-qos", "1", "-rate", "10", "-duration", "500ms", "-quiet");
            assertThat(System.nanoTime() - startNs).isLessThan(TimeUnit.SECONDS.toNanos(20)); // no wait for them
            assertThat(jsonNumber(output, "subscribe_refused")).as(output).isEqualTo(2);
            assertThat(jsonNumber(output, "failed")).as(output).isEqualTo(2);
            assertThat(jsonNumber(output, "lost")).as(output).isEqualTo(jsonNumber(output, "published"));
            assertThat(output).contains("2 of 5 clients never ready (2 subscriptions refused)");
        }
    }

    @Test
    @DisplayName("fanin counts a message once across the share group: a copy to a second member is a duplicate")
    void shareGroupCountsOnce() throws IOException
    {
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            List<Connection> route(final Connection from, final String topic, final int publisherId,
                final int sequence)
            {
                final List<Connection> members = connections.stream().filter(c -> null != c.filter).toList();
                if (publisherId == 0 && sequence == 0)
                {
                    return members; // redelivered to another member: every member gets it
                }
                if (publisherId == 0 && sequence == 1)
                {
                    return List.of(); // lost
                }
                return super.route(from, topic, publisherId, sequence);
            }
        })
        {
            final String output = run(0, "-addr", addr(broker), "-protocol", "5", "-mode", "fanin", "-pubs", "4",
                "-subs", "3", "-qos", "1", "-rate", "20", "-duration", "1s", "-quiet");
            final long published = jsonNumber(output, "published");
            assertThat(published).isGreaterThan(40);
            assertThat(jsonNumber(output, "expected")).as(output).isEqualTo(published);
            assertThat(jsonNumber(output, "delivered")).as(output).isEqualTo(published - 1);
            assertThat(jsonNumber(output, "lost")).as(output).isEqualTo(1);
            assertThat(jsonNumber(output, "duplicates")).as(output).isEqualTo(2);
            assertThat(jsonNumber(output, "reordered")).as(output).isZero();
        }
    }

    @Test
    @DisplayName("persistent on 5.0: CONNECT with Clean Start 0 and a Session Expiry Interval; other modes without")
    void persistentConnectProperties() throws IOException
    {
        final List<ScriptedBroker.Connection> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            void afterSuback(final Connection connection)
            {
                seen.add(connection);
            }
        })
        {
            run(0, "-addr", addr(broker), "-protocol", "5", "-mode", "persistent", "-pubs", "1", "-rate", "10",
                "-duration", "300ms", "-offline", "100ms", "-quiet");
            assertThat(seen).isNotEmpty();
            for (final ScriptedBroker.Connection c : seen)
            {
                assertThat(c.connectFlags & 0x02).as("clean start").isZero();
                assertThat(c.connectProperties).containsExactly(0x11, 0x00, 0x00, 0x0E, 0x10); // 3,600 s
            }
            seen.clear();
            run(0, "-addr", addr(broker), "-protocol", "5", "-mode", "p2p", "-pubs", "1", "-qos", "1", "-rate",
                "10", "-duration", "300ms", "-quiet");
            assertThat(seen).hasSize(1);
            assertThat(seen.get(0).connectFlags & 0x02).as("clean start").isEqualTo(2);
            assertThat(seen.get(0).connectProperties).isEmpty();
        }
    }
}
