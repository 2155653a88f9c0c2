package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The MQTT 5.0 edge inside a whole broker on an ephemeral port: what a 3.1.1 subscriber receives from a 5.0
 * publisher that uses topic aliases, and what every connected client sees when the broker shuts down.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Mqtt5EdgeBrokerTest
{
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private Broker broker;

    private Broker broker(final BrokerContext.Threading threading) throws IOException
    {
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(threading).ioThreads(2))
            .observability(o -> o.sysIntervalMs(0)));
        return broker;
    }

    private RawClient raw() throws IOException
    {
        final RawClient client = new RawClient(broker.port());
        closeables.add(client);
        return client;
    }

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    @Test
    @DisplayName("MQTT-3.3.2-12: a 3.1.1 subscriber receives the topic a 5.0 publisher's alias stood for")
    void aliasedPublishesReachA311Subscriber() throws Exception
    {
        broker(BrokerContext.Threading.SHARED_NETWORK);
        final RawClient subscriber = raw();
        assertThat(subscriber.handshake(RawClient.connect("sub", true, 60))).isZero();
        subscriber.send(RawClient.subscribe(1, "fleet/#", 1));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);

        final RawClient publisher = raw().v5();
        assertThat(publisher.handshake(RawClient.connect5("pub", 60, null))).isZero();
        final MqttProperties alias = new MqttProperties().setInt(PropertyId.TOPIC_ALIAS, 5);
        publisher.send(RawClient.publish5("fleet/truck/7", bytes("first"), 0, 0, alias));
        publisher.send(RawClient.publish5("", bytes("second"), 1, 1, alias));
        assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);

        for (final String payload : new String[]{"first", "second"})
        {
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(subscriber.decoder().publish().topic().asString()).isEqualTo("fleet/truck/7");
            assertThat(subscriber.decoder().publish().payload().asString()).isEqualTo(payload);
            if (subscriber.decoder().publish().qos() > 0)
            {
                subscriber.send(RawClient.ack(PacketType.PUBACK, subscriber.decoder().publish().packetId()));
            }
        }
    }

    @Test
    @DisplayName("MQTT 5.0 4.13: Broker.close sends every connected 5.0 client DISCONNECT 0x8B (Server shutting "
        + "down) before its socket closes, on every I/O agent; a 3.1.1 client is just closed")
    void shutdownTellsEvery5Client() throws Exception
    {
        broker(BrokerContext.Threading.SHARED_NETWORK);
        final List<RawClient> v5 = new ArrayList<>();
        for (int i = 0; i < 4; i++) // two I/O agents: connections are spread over both
        {
            final RawClient client = raw().v5();
            assertThat(client.handshake(RawClient.connect5("v5-" + i, 60, null))).isZero();
            v5.add(client);
        }
        final RawClient v3 = raw();
        assertThat(v3.handshake(RawClient.connect("v3", true, 60))).isZero();
        broker.close();
        for (final RawClient client : v5)
        {
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(client.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.SERVER_SHUTTING_DOWN);
            assertThat(client.readPacketOrClosed(5_000)).isEqualTo(-1);
        }
        assertThat(v3.readPacketOrClosed(5_000)).isEqualTo(-1);
    }

    private static byte[] bytes(final String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
