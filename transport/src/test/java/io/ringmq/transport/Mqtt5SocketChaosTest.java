package io.ringmq.transport;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.SubscribeEncoder;
import io.ringmq.protocol.SubscriptionOptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeded chaos at the socket: 16 raw clients, 3.1.1 and 5.0, sending valid packets with every 5.0 feature (aliases
 * in and out, subscription options and identifiers, shared groups, expiry, receive maximum and packet size limits,
 * AUTH, DISCONNECT with reasons) mixed with bit-flipped and truncated ones, and vanishing at random. The broker never
 * counts an unexpected error, and serves a well-behaved client afterwards.
 */
class Mqtt5SocketChaosTest extends InProcessBrokerTest
{
    private static final String[] FILTERS = {"t/#", "t/+", "$share/g/t/#", "$share/h/t/a", "#", "t/a"};
    private static final String[] TOPICS = {"t/a", "t/b", "t/a/x", "u"};
    private static final int CLIENTS = 16;

    @Test
    @Timeout(90)
    @DisplayName("4 seeds × 3,000 random packets, valid and hostile, from 16 clients: no unexpected error, the broker "
        + "goes on")
    void chaos() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.topicAliasMaximum(4).receiveMaximum(8)
            .maxInflight(4)
            .maxQueued(16)).threads(t -> t.threading(io.ringmq.pipeline.BrokerContext.Threading.valueOf(
                System.getProperty("chaos.threading", "SHARED"))).ioThreads(2)));
        for (long seed = 1; seed <= Long.getLong("chaos.seeds", 4); seed++)
        {
            run(port, new SplittableRandom(seed));
        }
        assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
        assertThat(broker.counters().get(BrokerCounters.PUBLISH_OUT)).as("the chaos reached the stages").isPositive();
        try (RawClient after = new RawClient(port).v5())
        {
            assertThat(after.handshake(RawClient.connect5("after", null))).isZero();
            after.send(RawClient.subscribe5(1, "after/t", 1));
            assertThat(after.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            after.send(RawClient.publish5("after/t", "ok".getBytes(StandardCharsets.UTF_8), 1, 7, null));
            boolean delivered = false;
            for (int i = 0; i < 3 && !delivered; i++)
            {
                delivered = after.readPacket(5_000) == PacketType.PUBLISH;
            }
            assertThat(delivered).as("the broker still routes").isTrue();
        }
    }

    private void run(final int port, final SplittableRandom random) throws IOException
    {
        final RawClient[] clients = new RawClient[CLIENTS];
        final int[] version = new int[CLIENTS];
        try
        {
            for (int step = 0; step < 3_000; step++)
            {
                final int c = random.nextInt(CLIENTS);
                if (null == clients[c] || random.nextInt(60) == 0)
                {
                    if (null != clients[c])
                    {
                        clients[c].kill();
                    }
                    version[c] = random.nextInt(4) == 0 ? MqttVersion.V3_1_1 : MqttVersion.V5;
                    clients[c] = new RawClient(port).version(version[c]);
                    clients[c].send(connect(random, c, version[c]));
                    assertThat(clients[c].readPacket(5_000)).isEqualTo(PacketType.CONNACK);
                    continue;
                }
                byte[] packet = packet(random, version[c]);
                if (random.nextInt(15) == 0)
                {
                    packet = packet.clone();
                    packet[random.nextInt(packet.length)] ^= (byte)(1 << random.nextInt(8)); // hostile
                }
                try
                {
                    clients[c].send(packet);
                    if (!clients[c].discardAvailable())
                    {
                        clients[c] = null;
                    }
                }
                catch (final IOException closedByTheBroker)
                {
                    clients[c].close();
                    clients[c] = null;
                }
            }
        }
        finally
        {
            for (final RawClient client : clients)
            {
                if (null != client)
                {
                    client.kill();
                }
            }
        }
    }

    private static byte[] connect(final SplittableRandom random, final int c, final int version)
    {
        if (version != MqttVersion.V5)
        {
            return RawClient.connect("s" + c, random.nextBoolean(), 60);
        }
        final MqttProperties properties = new MqttProperties();
        if (random.nextBoolean())
        {
            properties.setInt(PropertyId.SESSION_EXPIRY_INTERVAL, random.nextInt(120));
        }
        if (random.nextBoolean())
        {
            properties.setInt(PropertyId.RECEIVE_MAXIMUM, 1 + random.nextInt(4));
        }
        if (random.nextBoolean())
        {
            properties.setInt(PropertyId.MAXIMUM_PACKET_SIZE, 30 + random.nextInt(300));
        }
        if (random.nextBoolean())
        {
            properties.setInt(PropertyId.TOPIC_ALIAS_MAXIMUM, random.nextInt(4));
        }
        return RawClient.connect5("s" + c, 60, properties);
    }

    private static byte[] packet(final SplittableRandom random, final int version)
    {
        final boolean v5 = version == MqttVersion.V5;
        switch (random.nextInt(9))
        {
            case 0:
            {
                final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).version(version)
                    .packetId(1 + random.nextInt(100));
                if (v5 && random.nextBoolean())
                {
                    encoder.properties(new MqttProperties().setInt(PropertyId.SUBSCRIPTION_IDENTIFIER,
                        1 + random.nextInt(1_000)));
                }
                final String filter = FILTERS[random.nextInt(FILTERS.length)];
                encoder.filters().add(filter, v5 ? SubscriptionOptions.of(random.nextInt(3),
                    !filter.startsWith("$share") && random.nextBoolean(), random.nextBoolean(), random.nextInt(3)) :
                    random.nextInt(3));
                return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
            }
            case 1: case 2: case 3:
            {
                final int qos = random.nextInt(3);
                final MqttProperties properties = new MqttProperties();
                String topic = TOPICS[random.nextInt(TOPICS.length)];
                if (v5 && random.nextBoolean())
                {
                    properties.setInt(PropertyId.TOPIC_ALIAS, 1 + random.nextInt(4));
                    topic = random.nextBoolean() ? "" : topic;
                }
                if (v5 && random.nextBoolean())
                {
                    properties.setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, random.nextInt(3)).addUserProperty("k", "v");
                }
                final PublishEncoder encoder = new PublishEncoder().reset().version(version).qos(qos)
                    .packetId(1 + random.nextInt(20)).retain(random.nextInt(5) == 0).topic(topic)
                    .payload(new byte[random.nextInt(400)]).properties(v5 ? properties : null);
                return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
            }
            case 4: case 5:
                return RawClient.ack(PacketType.PUBACK + random.nextInt(4), 1 + random.nextInt(20));
            case 6:
                return v5 ? RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.RE_AUTHENTICATE,
                    new MqttProperties().set(PropertyId.AUTHENTICATION_METHOD, "SCRAM-SHA-256")) : RawClient.ping();
            case 7:
                return v5 && random.nextInt(4) == 0 ? RawClient.reasonPacket5(PacketType.DISCONNECT,
                    random.nextBoolean() ? 0 : 4, null) : RawClient.ping();
            default:
            {
                final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.UNSUBSCRIBE).version(version)
                    .packetId(1 + random.nextInt(100));
                encoder.filters().add(FILTERS[random.nextInt(FILTERS.length)], 0);
                return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
            }
        }
    }
}
