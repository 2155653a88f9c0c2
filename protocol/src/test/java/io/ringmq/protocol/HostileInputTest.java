package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Random;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Whatever bytes arrive, the decoder answers with a length, NEED_MORE or a typed error: it never throws, never
 * reads past what it was given, and never takes more than a bounded time.
 */
@Timeout(60)
class HostileInputTest
{
    private static final int MAX_PACKET = 4096;
    private final PacketDecoder decoder = new PacketDecoder();

    @Test
    void randomBytes()
    {
        SeededCases.run(0x5EED_0101L, 5000, random ->
        {
            final byte[] bytes = noise(random);
            decodeAll(bytes, random.nextBoolean() ? MqttVersion.V5 : MqttVersion.V3_1_1);
        });
    }

    @Test
    void randomBodiesBehindEveryPacketType()
    {
        SeededCases.run(0x5EED_0201L, 3000, random ->
        {
            final byte[] body = noise(random);
            final int version = random.nextBoolean() ? MqttVersion.V5 : MqttVersion.V3_1_1;
            for (int type = 1; type <= 15; type++)
            {
                final int flags = type == PacketType.PUBLISH ? body.length > 0 ? body[0] & 0x0B : 0 :
                    PacketType.requiredFlags(type);
                final byte[] packet = Bytes.hex(Bytes.packet(String.format("%X%X", type, flags), Bytes.hexOf(body)));
                decodeAll(packet, version);
            }
        });
    }

    @Test
    void bitFlipsOfValidPackets()
    {
        final Random random = new Random(42);
        for (int i = 0; i < 20_000; i++)
        {
            final Samples.Sample sample = Samples.any(random, random.nextBoolean() ? MqttVersion.V5 : MqttVersion.V3_1_1);
            final byte[] bytes = sample.bytes().clone();
            final int flips = 1 + random.nextInt(3);
            for (int f = 0; f < flips; f++)
            {
                final int bit = random.nextInt(bytes.length * 8);
                bytes[bit >>> 3] ^= (byte)(1 << (bit & 7));
            }
            decodeAll(bytes, sample.version());
        }
    }

    @Test
    void truncatedBodiesWithAdjustedRemainingLength()
    {
        final Random random = new Random(7);
        for (int i = 0; i < 2_000; i++)
        {
            final Samples.Sample sample = Samples.any(random, random.nextBoolean() ? MqttVersion.V5 : MqttVersion.V3_1_1);
            final UnsafeBuffer original = new UnsafeBuffer(sample.bytes());
            final int packed = VariableByteInteger.decode(original, 1, original.capacity());
            final int bodyOffset = 1 + VariableByteInteger.byteCount(packed);
            final String first = String.format("%02X", original.getByte(0) & 0xFF);
            for (int cut = 0; cut < original.capacity() - bodyOffset; cut++)
            {
                final byte[] body = new byte[cut];
                original.getBytes(bodyOffset, body);
                final byte[] packet = Bytes.hex(Bytes.packet(first, Bytes.hexOf(body)));
                final UnsafeBuffer buffer = new UnsafeBuffer(packet);
                final int result = decoder.decode(buffer, 0, packet.length, sample.version(), MAX_PACKET);
                assertThat(result).as(sample + " cut at " + cut).isNotEqualTo(DecodeError.NEED_MORE);
                if (result > 0)
                {
                    assertThat(result).isEqualTo(packet.length);
                }
            }
        }
    }

    @Test
    void everyPrefixOfAValidPacketNeedsMore()
    {
        final Random random = new Random(3);
        for (int i = 0; i < 500; i++)
        {
            final Samples.Sample sample = Samples.any(random, MqttVersion.V5);
            final UnsafeBuffer buffer = new UnsafeBuffer(sample.bytes());
            for (int available = 0; available < buffer.capacity(); available++)
            {
                assertThat(decoder.decode(buffer, 0, available, sample.version(), MAX_PACKET * 256))
                    .isEqualTo(DecodeError.NEED_MORE);
            }
        }
    }

    @Test
    void manyRepeatedUserPropertiesAreAcceptedAndARepeatedSingleIsRefusedAtOnce()
    {
        final StringBuilder many = new StringBuilder();
        for (int i = 0; i < 10_000; i++)
        {
            many.append("26 0000 0000");
        }
        final byte[] ok = Bytes.hex(Bytes.packet("30", Bytes.str("t"), Bytes.props(many.toString())));
        assertThat(decoder.decode(new UnsafeBuffer(ok), 0, ok.length, MqttVersion.V5, 1 << 20)).isEqualTo(ok.length);
        assertThat(decoder.publish().properties().userPropertyCount()).isEqualTo(10_000);

        final StringBuilder repeated = new StringBuilder();
        for (int i = 0; i < 10_000; i++)
        {
            repeated.append("02 00000001");
        }
        final byte[] bad = Bytes.hex(Bytes.packet("30", Bytes.str("t"), Bytes.props(repeated.toString())));
        assertThat(decoder.decode(new UnsafeBuffer(bad), 0, bad.length, MqttVersion.V5, 1 << 20))
            .isEqualTo(DecodeError.DUPLICATE_PROPERTY);
    }

    @Test
    void aPropertyLengthPastThePacketIsRefused()
    {
        final byte[] bytes = Bytes.hex(Bytes.packet("30", Bytes.str("t"), "FFFFFF7F 01 00"));
        assertThat(decoder.decode(new UnsafeBuffer(bytes), 0, bytes.length, MqttVersion.V5, MAX_PACKET))
            .isEqualTo(DecodeError.FIELD_OVERRUNS_PACKET);
    }

    /**
     * Up to 64 bytes, three in five any byte and two in five a byte that means something to the decoder: lengths,
     * continuation bits, property identifiers and first bytes of packets.
     */
    private static byte[] noise(final SplittableRandom random)
    {
        return SeededCases.bytes(random, 64, 3, 2, (byte)0x00, (byte)0x01, (byte)0x02, (byte)0x7F,
            (byte)0x80, (byte)0xFF, (byte)0x26, (byte)0x0B, (byte)0x23, (byte)0x30, (byte)0x10, (byte)0x82);
    }

    /**
     * Decodes packet after packet until an error or the end, as a connection's reader would.
     */
    private void decodeAll(final byte[] bytes, final int version)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(bytes);
        int offset = 0;
        while (offset < bytes.length)
        {
            final int result = decoder.decode(buffer, offset, bytes.length - offset, version, MAX_PACKET);
            if (result <= 0)
            {
                if (result < 0)
                {
                    assertThat(DecodeError.describe(result)).doesNotStartWith("undefined");
                    assertThat(DecodeError.reasonCode(result)).isGreaterThanOrEqualTo(0x80);
                }
                return;
            }
            assertThat(result).isLessThanOrEqualTo(bytes.length - offset);
            offset += result;
        }
    }
}
