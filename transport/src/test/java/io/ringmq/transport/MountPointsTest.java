package io.ringmq.transport;

import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.TopicFilterList;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The edge's rewrite of a mounted listener's packets: every rewritten packet decodes again, whole, with the prefix in
 * its topics and nothing else changed; the remaining length grows across a varint boundary; a topic that would pass
 * 65,535 bytes is refused.
 */
class MountPointsTest
{
    private static final byte[] PREFIX = "tenant-\u00e9/".getBytes(StandardCharsets.UTF_8);

    private final MountPoints mountPoints = new MountPoints();
    private final PacketDecoder decoder = new PacketDecoder();

    private int decode(final int length, final int version)
    {
        final int decoded = decoder.decode(mountPoints.packet(), 0, length, version, Integer.MAX_VALUE);
        assertThat(decoded).as("the rewritten packet decodes, whole").isEqualTo(length);
        return decoded;
    }

    private static byte[] publish(final int version, final String topic, final int payloadLength)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(version).qos(1).packetId(9).topic(topic)
            .payload(new byte[payloadLength]);
        if (version == MqttVersion.V5)
        {
            encoder.properties(new MqttProperties().set(PropertyId.CONTENT_TYPE, "text/plain"));
        }
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    @Test
    @DisplayName("a PUBLISH (3.1.1 and 5.0, remaining length from 1 to 2 varint bytes): topic mounted, packet id, "
        + "properties and payload as they were")
    void publish()
    {
        for (final int version : new int[] {MqttVersion.V3_1_1, MqttVersion.V5})
        {
            for (final int payload : new int[] {0, 100, 16_000})
            {
                final byte[] packet = publish(version, "a/b", payload);
                final int length = mountPoints.publish(PREFIX, new UnsafeBuffer(packet), packet.length, version,
                    Integer.MAX_VALUE);
                assertThat(length - packet.length - PREFIX.length).as("the remaining length's bytes grow by at most one")
                    .isBetween(0, 1);
                decode(length, version);
                assertThat(decoder.publish().topic().asString()).isEqualTo("tenant-\u00e9/a/b");
                assertThat(decoder.publish().packetId()).isEqualTo(9);
                assertThat(decoder.publish().payload().length()).isEqualTo(payload);
                if (version == MqttVersion.V5)
                {
                    assertThat(decoder.publish().properties().slice(PropertyId.CONTENT_TYPE).asString())
                        .isEqualTo("text/plain");
                }
            }
        }
    }

    @Test
    @DisplayName("a SUBSCRIBE of many filters: each mounted, a shared one after $share/{name}/ (a name in UTF-8 too), "
        + "options kept")
    void subscribe()
    {
        final List<String> filters = List.of("a/#", "$share/gr\u00fcn/jobs/+", "+", "$share/g/#");
        final byte[] packet = RawClient.subscribe(3, filters, 1);
        final int length = mountPoints.filters(PREFIX, new UnsafeBuffer(packet), packet.length, decoded(packet),
            Integer.MAX_VALUE);
        decode(length, MqttVersion.V3_1_1);
        final TopicFilterList mounted = decoder.subscribe().filters();
        final List<String> got = new ArrayList<>();
        for (int i = 0; i < mounted.count(); i++)
        {
            got.add(mounted.filter(i).asString());
            assertThat(mounted.options(i)).isEqualTo(1);
        }
        assertThat(got).containsExactly("tenant-\u00e9/a/#", "$share/gr\u00fcn/tenant-\u00e9/jobs/+", "tenant-\u00e9/+",
            "$share/g/tenant-\u00e9/#");
        assertThat(decoder.subscribe().packetId()).isEqualTo(3);
    }

    private io.ringmq.protocol.SubscribeFlyweight decoded(final byte[] packet)
    {
        final PacketDecoder own = new PacketDecoder();
        assertThat(own.decode(new UnsafeBuffer(packet), 0, packet.length, MqttVersion.V3_1_1, Integer.MAX_VALUE))
            .isEqualTo(packet.length);
        assertThat(own.packetType()).isEqualTo(PacketType.SUBSCRIBE);
        return own.subscribe();
    }

    @Test
    @DisplayName("a CONNECT: its will topic mounted, the rest as it was; one without a will is not rewritten")
    void connect()
    {
        final byte[] willing = ServerCapabilitiesTest.connectWithWill(MqttVersion.V5, 1, true);
        final int length = mountPoints.connect(PREFIX, new UnsafeBuffer(willing), willing.length, Integer.MAX_VALUE);
        decode(length, MqttVersion.V5);
        assertThat(decoder.connect().willTopic().asString()).isEqualTo("tenant-\u00e9/will/t");
        assertThat(decoder.connect().willPayload().asString()).isEqualTo("gone");
        assertThat(decoder.connect().clientId().asString()).isEqualTo("willing");
        final byte[] plain = RawClient.connect("plain", true, 60);
        assertThat(mountPoints.connect(PREFIX, new UnsafeBuffer(plain), plain.length, Integer.MAX_VALUE)).isZero();
    }

    @Test
    @DisplayName("a topic that would pass 65,535 bytes with the prefix is refused, one that reaches it exactly is not")
    void tooLong()
    {
        final String exact = "t".repeat(65_535 - PREFIX.length);
        final byte[] fits = publish(MqttVersion.V3_1_1, exact, 1);
        final int length = mountPoints.publish(PREFIX, new UnsafeBuffer(fits), fits.length, MqttVersion.V3_1_1,
            Integer.MAX_VALUE);
        decode(length, MqttVersion.V3_1_1);
        assertThat(decoder.publish().topic().length()).isEqualTo(65_535);
        final byte[] over = publish(MqttVersion.V3_1_1, exact + "t", 1);
        assertThat(mountPoints.publish(PREFIX, new UnsafeBuffer(over), over.length, MqttVersion.V3_1_1,
            Integer.MAX_VALUE))
            .isEqualTo(MountPoints.TOO_LONG);
        final byte[] filters = RawClient.subscribe(1, List.of("ok", exact + "t"), 0);
        assertThat(mountPoints.filters(PREFIX, new UnsafeBuffer(filters), filters.length, decoded(filters),
            Integer.MAX_VALUE))
            .isEqualTo(MountPoints.TOO_LONG);
    }

    @DisplayName("a SUBSCRIBE of 200,000 one-byte filters under a 1,024-byte prefix (200 MB mounted) is refused "
        + "before anything grows: the scratch buffer stays small; a packet one byte past the limit once mounted too")
    @Test
    void manyFiltersUnderALongPrefix()
    {
        final byte[] longPrefix = ("p".repeat(1023) + "/").getBytes(StandardCharsets.UTF_8);
        final List<String> filters = java.util.Collections.nCopies(200_000, "a");
        final byte[] packet = RawClient.subscribe(1, filters, 0);
        assertThat(mountPoints.filters(longPrefix, new UnsafeBuffer(packet), packet.length, decoded(packet),
            1_048_576)).isEqualTo(MountPoints.TOO_LONG);
        assertThat(mountPoints.packet().capacity()).isLessThan(65_536);
        final byte[] publish = publish(MqttVersion.V3_1_1, "a/b", 100);
        final int mounted = mountPoints.publish(PREFIX, new UnsafeBuffer(publish), publish.length,
            MqttVersion.V3_1_1, Integer.MAX_VALUE);
        assertThat(mountPoints.publish(PREFIX, new UnsafeBuffer(publish), publish.length, MqttVersion.V3_1_1,
            mounted - 1)).isEqualTo(MountPoints.TOO_LONG);
        assertThat(mountPoints.publish(PREFIX, new UnsafeBuffer(publish), publish.length, MqttVersion.V3_1_1,
            mounted)).isEqualTo(mounted);
    }
}
