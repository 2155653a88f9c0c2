package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.SubscribeEncoder;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 3dae472 ("a dropped second copy keeps the first's record"): a session matched by its own and a shared
 * subscription gets two copies of a QoS 1 message kept under one record (the first copy's). Dropping the second copy
 * at routing for the client's Maximum Packet Size (its Subscription Identifier makes it larger than the first) goes
 * through WindowUpkeep.dropInflight, which ends the record by the copy's message number: the first copy, in flight and
 * never acknowledged, is not resent after a restart. Since each copy is stored under a number of its own, the cases
 * after those check that every copy a session's client had not acknowledged comes back, whichever it acknowledged.
 */
@Timeout(120)
class SecondCopyRecordReviewTest
{
    private static final int MAX_PACKET = 113; // the own copy (no identifier) is 111 bytes, the shared one 116

    @TempDir
    Path directory;

    private RingMq start() throws IOException
    {
        return RingMq.builder().threading(BrokerContext.Threading.SHARED).option("persistence", "rocksdb")
            .option("data-dir", directory.resolve("data").toString()).option("sys-interval", "0").start();
    }

    private static byte[] resume(final String clientId)
    {
        final MqttProperties properties = new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 3600)
            .setInt(PropertyId.MAXIMUM_PACKET_SIZE, MAX_PACKET);
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(false)
            .keepAlive(60).properties(properties);
        encoder.clientId().wrap(clientId);
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    private static byte[] subscribe(final int packetId, final String filter, final int id)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).version(MqttVersion.V5)
            .packetId(packetId).properties(id == 0 ? null :
                new MqttProperties().setInt(PropertyId.SUBSCRIPTION_IDENTIFIER, id));
        encoder.filters().add(filter, 1);
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    private static int nextWithin(final RawClient client, final int timeoutMs) throws IOException
    {
        try
        {
            return client.readPacket(timeoutMs);
        }
        catch (final java.net.SocketTimeoutException none)
        {
            return 0;
        }
    }

    @Test
    @DisplayName("MQTT-4.4.0-1: the first copy of a message to a session matched by its own and a shared "
        + "subscription, unacknowledged, comes back after a restart although its second copy was dropped as too "
        + "large for the client")
    void firstCopyResentAfterSecondCopyTooLarge() throws Exception
    {
        try (RingMq broker = start())
        {
            final RawClient s = new RawClient(broker.port()).v5();
            assertThat(s.handshake(resume("sc-sub"))).isZero();
            s.send(subscribe(1, "sc/t", 0));
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            s.send(subscribe(2, "$share/g/sc/t", 268_435_455)); // its copies carry 5 bytes more
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            try (RawClient publisher = new RawClient(broker.port()).v5())
            {
                assertThat(publisher.handshake(RawClient.connect5("sc-pub", null))).isZero();
                publisher.send(RawClient.publish5("sc/t", new byte[100], 1, 1, null));
                assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            }
            assertThat(s.readPacket(5_000)).as("the own copy").isEqualTo(PacketType.PUBLISH);
            assertThat(s.lastPacket().length).isLessThanOrEqualTo(MAX_PACKET);
            // not acknowledged; the shared copy is too large and never comes
            assertThat(nextWithin(s, 500)).as("the shared copy is too large").isNotEqualTo(PacketType.PUBLISH);
            s.kill();
        }
        try (RingMq broker = start())
        {
            try (RawClient s = new RawClient(broker.port()).v5())
            {
                assertThat(s.handshake(resume("sc-sub"))).isZero();
                assertThat(nextWithin(s, 5_000)).as("the unacknowledged first copy, resent").isEqualTo(
                    PacketType.PUBLISH);
                assertThat(s.decoder().publish().payload().length()).isEqualTo(100);
            }
        }
    }

    @Test
    @DisplayName("control: without the shared subscription the unacknowledged copy is resent after a restart")
    void ownCopyResentWithoutSharedSubscription() throws Exception
    {
        try (RingMq broker = start())
        {
            final RawClient s = new RawClient(broker.port()).v5();
            assertThat(s.handshake(resume("sc-sub"))).isZero();
            s.send(subscribe(1, "sc/t", 0));
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            try (RawClient publisher = new RawClient(broker.port()).v5())
            {
                assertThat(publisher.handshake(RawClient.connect5("sc-pub", null))).isZero();
                publisher.send(RawClient.publish5("sc/t", new byte[100], 1, 1, null));
                assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            }
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            s.kill();
        }
        try (RingMq broker = start())
        {
            try (RawClient s = new RawClient(broker.port()).v5())
            {
                assertThat(s.handshake(resume("sc-sub"))).isZero();
                assertThat(nextWithin(s, 5_000)).isEqualTo(PacketType.PUBLISH);
                assertThat(s.decoder().publish().payload().length()).isEqualTo(100);
            }
        }
    }

    @Test
    @DisplayName("MQTT-4.4.0-1: a session matched by its own and a shared subscription acknowledges only the shared "
        + "copy: the own copy, never acknowledged, comes back after a restart")
    void firstCopyComesBackAfterTheSecondCopyIsAcknowledged() throws Exception
    {
        try (RingMq broker = start())
        {
            final RawClient s = new RawClient(broker.port()).v5();
            assertThat(s.handshake(resume("ack-sub"))).isZero();
            s.send(subscribe(1, "ak/t", 0));
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            s.send(subscribe(2, "$share/g/ak/t", 9));
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            try (RawClient publisher = new RawClient(broker.port()).v5())
            {
                assertThat(publisher.handshake(RawClient.connect5("ak-pub", null))).isZero();
                publisher.send(RawClient.publish5("ak/t", "m".getBytes(), 1, 1, null));
                assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            }
            int shared = 0;
            for (int i = 0; i < 2; i++)
            {
                assertThat(s.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
                if (s.decoder().publish().properties().subscriptionIdentifierCount() == 1)
                {
                    shared = s.decoder().publish().packetId();
                }
            }
            assertThat(shared).as("the shared copy, with its identifier").isPositive();
            s.send(RawClient.ack(PacketType.PUBACK, shared)); // the own copy stays unacknowledged
            s.send(RawClient.ping());
            assertThat(s.readPacket(5_000)).as("the PUBACK was read").isEqualTo(PacketType.PINGRESP);
            s.kill();
        }
        try (RingMq broker = start())
        {
            try (RawClient s = new RawClient(broker.port()).v5())
            {
                assertThat(s.handshake(resume("ack-sub"))).isZero();
                assertThat(nextWithin(s, 5_000)).as("the own copy, never acknowledged").isEqualTo(PacketType.PUBLISH);
                assertThat(s.decoder().publish().payload().asString()).isEqualTo("m");
            }
        }
    }

    @Test
    @DisplayName("MQTT-4.4.0-1: a session matched by its own and a shared subscription acknowledges only its own "
        + "copy: the shared copy, never acknowledged, comes back after a restart with its identifier")
    void sharedCopyComesBackAfterTheOwnCopyIsAcknowledged() throws Exception
    {
        assertThat(resentAfterRestart("own-acked", 1, java.util.Set.of(0))).containsExactly(9);
    }

    @Test
    @DisplayName("MQTT-4.4.0-1: neither copy acknowledged: both come back after a restart, in the order routed")
    void bothCopiesComeBack() throws Exception
    {
        assertThat(resentAfterRestart("none-acked", 1, java.util.Set.of())).containsExactly(0, 9);
    }

    @Test
    @DisplayName("MQTT-4.4.0-1: own and two shared subscriptions, the first group's copy acknowledged: the own copy "
        + "and the second group's come back after a restart")
    void copiesOfTwoGroupsAreKeptApart() throws Exception
    {
        assertThat(resentAfterRestart("two-groups", 2, java.util.Set.of(9))).containsExactly(0, 10);
    }

    /**
     * A persistent session subscribes to {@code prefix/t} (no identifier) and, in {@code groups} shared groups, with
     * identifiers 9, 10...; one QoS 1 message comes to it once per subscription; its client acknowledges the copies
     * whose identifier (0: its own subscription's) is in {@code acked}, and is killed with the broker.
     *
     * @return the identifiers of the copies resent after a restart, in the order they came.
     */
    private java.util.List<Integer> resentAfterRestart(final String prefix, final int groups,
        final java.util.Set<Integer> acked) throws Exception
    {
        final String clientId = prefix + "-sub";
        try (RingMq broker = start())
        {
            final RawClient s = new RawClient(broker.port()).v5();
            assertThat(s.handshake(resume(clientId))).isZero();
            s.send(subscribe(1, prefix + "/t", 0));
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            for (int g = 0; g < groups; g++)
            {
                s.send(subscribe(2 + g, "$share/g" + g + "/" + prefix + "/t", 9 + g));
                assertThat(s.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            }
            try (RawClient publisher = new RawClient(broker.port()).v5())
            {
                assertThat(publisher.handshake(RawClient.connect5(prefix + "-pub", null))).isZero();
                publisher.send(RawClient.publish5(prefix + "/t", "m".getBytes(), 1, 1, null));
                assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            }
            for (int i = 0; i <= groups; i++)
            {
                assertThat(s.readPacket(5_000)).as("copy %d", i).isEqualTo(PacketType.PUBLISH);
                if (acked.contains(identifier(s)))
                {
                    s.send(RawClient.ack(PacketType.PUBACK, s.decoder().publish().packetId()));
                }
            }
            s.send(RawClient.ping());
            assertThat(s.readPacket(5_000)).as("the PUBACKs were read").isEqualTo(PacketType.PINGRESP);
            s.kill();
        }
        final java.util.List<Integer> resent = new java.util.ArrayList<>();
        try (RingMq broker = start(); RawClient s = new RawClient(broker.port()).v5())
        {
            assertThat(s.handshake(resume(clientId))).isZero();
            while (nextWithin(s, 1_000) == PacketType.PUBLISH)
            {
                assertThat(s.decoder().publish().payload().asString()).isEqualTo("m");
                resent.add(identifier(s));
            }
        }
        return resent;
    }

    /**
     * @return the Subscription Identifier of the PUBLISH just read, 0 for none.
     */
    private static int identifier(final RawClient client)
    {
        final MqttProperties properties = client.decoder().publish().properties();
        return properties.subscriptionIdentifierCount() == 0 ? 0 : properties.subscriptionIdentifier(0);
    }
}
