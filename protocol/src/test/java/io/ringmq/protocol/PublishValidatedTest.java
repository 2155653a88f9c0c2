package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class PublishValidatedTest
{
    @Test
    @DisplayName("wrapValidated finds what wrap finds in a valid PUBLISH: 10,000 seeded packets, 3.1.1 and 5.0, QoS "
        + "0-2, properties, empty and long payloads")
    void sameAsWrap()
    {
        final PublishFlyweight checked = new PublishFlyweight();
        final PublishFlyweight trusted = new PublishFlyweight();
        SeededCases.run(0x5EED_0001L, 10_000, random ->
        {
            final int version = random.nextBoolean() ? MqttVersion.V5 : MqttVersion.V3_1_1;
            final PublishEncoder encoder = encoder(random, version);
            final UnsafeBuffer packet = new UnsafeBuffer(new byte[encoder.encodedLength() + 3]);
            final int length = encoder.encode(packet, 3);
            assertThat(checked.wrap(packet, 3, length, version)).isEqualTo(length);
            assertThat(trusted.wrapValidated(packet, 3, length, version)).isEqualTo(length);
            assertSameLayout(trusted, checked);
        });
    }

    @Test
    @DisplayName("wrapFramed, as PacketDecoder calls it behind the FrameDecoder, answers as wrap does: 10,000 seeded "
        + "PUBLISHes, half of them with one byte changed (a wildcard, NUL or non-ASCII byte in the topic, a bad "
        + "QoS, a length that no longer agrees)")
    void framedSameAsWrap()
    {
        final PacketDecoder decoder = new PacketDecoder();
        final FrameDecoder frame = new FrameDecoder();
        final PublishFlyweight checked = new PublishFlyweight();
        final byte[] hostile = {'+', '#', 0, (byte)0x80, (byte)0xC3, (byte)0xFF, 0x36, 0x3F};
        SeededCases.run(0x5EED_0002L, 10_000, random ->
        {
            final int version = random.nextBoolean() ? MqttVersion.V5 : MqttVersion.V3_1_1;
            final PublishEncoder encoder = encoder(random, version);
            final UnsafeBuffer packet = new UnsafeBuffer(new byte[encoder.encodedLength()]);
            final int length = encoder.encode(packet, 0);
            if (random.nextBoolean())
            {
                // anywhere but the payload's end, mostly in the header and topic where the checks are
                final int at = random.nextInt(Math.min(length, 64));
                packet.putByte(at, hostile[random.nextInt(hostile.length)]);
            }
            final int framed = frame.decode(packet, 0, length, version, 1 << 20);
            if (framed <= 0 || frame.packetType() != PacketType.PUBLISH)
            {
                return; // not a PUBLISH any more, or not framed: wrapFramed is not reached
            }
            final int expected = checked.wrap(packet, 0, framed, version);
            assertThat(decoder.decode(packet, 0, length, version, 1 << 20)).isEqualTo(expected);
            if (expected > 0)
            {
                assertSameLayout(decoder.publish(), checked);
            }
        });
    }

    private static PublishEncoder encoder(final SplittableRandom random, final int version)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(version).qos(random.nextInt(3))
            .packetId(1 + random.nextInt(65_535)).retain(random.nextBoolean())
            .topic(topic(random)).payload(new byte[random.nextInt(4) == 0 ? 0 : random.nextInt(3_000)]);
        if (version == MqttVersion.V5 && random.nextBoolean())
        {
            encoder.properties(new MqttProperties().setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, random.nextInt(99))
                .addUserProperty("k" + random.nextInt(9), "v").set(PropertyId.CONTENT_TYPE, "text/plain"));
        }
        return encoder;
    }

    private static void assertSameLayout(final PublishFlyweight actual, final PublishFlyweight expected)
    {
        assertThat(actual.flags()).isEqualTo(expected.flags());
        assertThat(actual.packetId()).isEqualTo(expected.packetId());
        assertThat(actual.topic().offset()).isEqualTo(expected.topic().offset());
        assertThat(actual.topic().length()).isEqualTo(expected.topic().length());
        assertThat(actual.propertiesOffset()).isEqualTo(expected.propertiesOffset());
        assertThat(actual.propertiesLength()).isEqualTo(expected.propertiesLength());
        assertThat(actual.payload().offset()).isEqualTo(expected.payload().offset());
        assertThat(actual.payload().length()).isEqualTo(expected.payload().length());
    }

    private static String topic(final SplittableRandom random)
    {
        final StringBuilder topic = new StringBuilder("t");
        for (int i = random.nextInt(6); i > 0; i--)
        {
            topic.append('/').append(Integer.toString(random.nextInt(1 << 20), 36));
        }
        return topic.toString();
    }
}
