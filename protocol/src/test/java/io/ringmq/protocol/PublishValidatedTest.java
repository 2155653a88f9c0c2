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
            final int qos = random.nextInt(3);
            final PublishEncoder encoder = new PublishEncoder().reset().version(version).qos(qos)
                .packetId(1 + random.nextInt(65_535)).retain(random.nextBoolean())
                .topic(topic(random)).payload(new byte[random.nextInt(4) == 0 ? 0 : random.nextInt(3_000)]);
            if (version == MqttVersion.V5 && random.nextBoolean())
            {
                encoder.properties(new MqttProperties().setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, random.nextInt(99))
                    .addUserProperty("k" + random.nextInt(9), "v").set(PropertyId.CONTENT_TYPE, "text/plain"));
            }
            final UnsafeBuffer packet = new UnsafeBuffer(new byte[encoder.encodedLength() + 3]);
            final int length = encoder.encode(packet, 3);
            assertThat(checked.wrap(packet, 3, length, version)).isEqualTo(length);
            assertThat(trusted.wrapValidated(packet, 3, length, version)).isEqualTo(length);
            assertThat(trusted.flags()).isEqualTo(checked.flags());
            assertThat(trusted.packetId()).isEqualTo(checked.packetId());
            assertThat(trusted.topic().offset()).isEqualTo(checked.topic().offset());
            assertThat(trusted.topic().length()).isEqualTo(checked.topic().length());
            assertThat(trusted.propertiesOffset()).isEqualTo(checked.propertiesOffset());
            assertThat(trusted.propertiesLength()).isEqualTo(checked.propertiesLength());
            assertThat(trusted.payload().offset()).isEqualTo(checked.payload().offset());
            assertThat(trusted.payload().length()).isEqualTo(checked.payload().length());
        });
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
