package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Restore with several I/O agents (delivery shards): a session restored into shard 0 whose client comes back through
 * another agent keeps its QoS 2 exchanges.
 */
@Timeout(120)
class PersistenceShardsReviewTest
{
    @TempDir
    Path directory;

    private RingMq start() throws IOException
    {
        return RingMq.builder().threading(BrokerContext.Threading.SHARED_NETWORK).option("io-threads", "4")
            .option("persistence", "rocksdb").option("data-dir", directory.resolve("data").toString())
            .option("sys-interval", "0").start();
    }

    @Test
    @DisplayName("QoS 2 in flight across a restart, client back through another agent: PUBREL again for what it " +
        "PUBRECed, the rest resent with DUP and their packet ids, then the queue; nothing twice [MQTT-4.3.3] " +
        "[MQTT-4.4.0-1]")
    void qos2ExchangesSurviveARestartOnAnotherAgent() throws Exception
    {
        final Map<String, Integer> ids = new HashMap<>();
        try (RingMq broker = start())
        {
            final List<Paho> others = new ArrayList<>();
            for (int i = 0; i < 2; i++)
            {
                others.add(Paho.connect(broker.port(), "other" + i));
            }
            final RawClient sub = new RawClient(broker.port());
            assertThat(sub.handshake(RawClient.connect("q2", false, 60))).isZero();
            sub.send(RawClient.subscribe(1, "q/#", 2));
            assertThat(sub.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            try (Paho publisher = Paho.connect(broker.port(), "pub"))
            {
                for (int i = 0; i < 10; i++)
                {
                    publisher.publish("q/x", "m" + i, 2, false);
                }
                for (int i = 0; i < 10; i++)
                {
                    assertThat(sub.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
                    final PublishFlyweight publish = sub.decoder().publish();
                    ids.put(publish.payload().asString(), publish.packetId());
                }
                for (int i = 0; i < 5; i++)
                {
                    sub.send(RawClient.ack(PacketType.PUBREC, ids.get("m" + i)));
                    assertThat(sub.readPacket(5_000)).isEqualTo(PacketType.PUBREL);
                }
                sub.send(new byte[]{(byte)0xE0, 0x00}); // DISCONNECT: its session stays, in flight as it is
                assertThat(sub.closedWithin(5_000)).as("the broker ended q2's connection").isTrue();
                sub.close();
                for (int i = 10; i < 15; i++)
                {
                    publisher.publish("q/x", "m" + i, 2, false);
                }
            }
            others.forEach(Paho::close);
        }
        try (RingMq broker = start())
        {
            final List<Paho> others = new ArrayList<>();
            for (int i = 0; i < 2; i++)
            {
                others.add(Paho.connect(broker.port(), "again" + i)); // the next connection lands on another agent
            }
            try (RawClient sub = new RawClient(broker.port()))
            {
                assertThat(sub.handshake(RawClient.connect("q2", false, 60))).isZero();
                final List<Integer> pubrels = new ArrayList<>();
                final List<String> published = new ArrayList<>();
                final Map<String, Boolean> dup = new HashMap<>();
                while (pubrels.size() + published.size() < 15)
                {
                    final int type = sub.readPacket(5_000);
                    if (type == PacketType.PUBREL)
                    {
                        final int id = sub.decoder().ack().packetId();
                        pubrels.add(id);
                        sub.send(RawClient.ack(PacketType.PUBCOMP, id));
                    }
                    else if (type == PacketType.PUBLISH)
                    {
                        final PublishFlyweight publish = sub.decoder().publish();
                        final String payload = publish.payload().asString();
                        published.add(payload);
                        dup.put(payload, publish.isDup());
                        if (Integer.parseInt(payload.substring(1)) < 10)
                        {
                            assertThat(publish.packetId()).as("%s keeps its packet id", payload)
                                .isEqualTo(ids.get(payload));
                        }
                        sub.send(RawClient.ack(PacketType.PUBREC, publish.packetId()));
                    }
                }
                final List<Integer> expectedPubrels = new ArrayList<>();
                for (int i = 0; i < 5; i++)
                {
                    expectedPubrels.add(ids.get("m" + i));
                }
                assertThat(pubrels).containsExactlyInAnyOrderElementsOf(expectedPubrels);
                assertThat(published).containsExactly("m5", "m6", "m7", "m8", "m9", "m10", "m11", "m12", "m13",
                    "m14");
                assertThat(dup.get("m5")).isTrue();
            }
            others.forEach(Paho::close);
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }
}
