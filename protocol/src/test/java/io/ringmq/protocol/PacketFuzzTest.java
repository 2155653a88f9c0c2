package io.ringmq.protocol;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.agrona.concurrent.UnsafeBuffer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Coverage-guided fuzz targets (Jazzer) for every packet decoder and flyweight, one target per packet type so the
 * fuzzer's corpus and coverage stay per type. The first input byte chooses the connection's protocol version (bit
 * 0) and whether the packet's fixed-header flags are forced to the required ones (bit 1); the rest is the packet,
 * whose type nibble the target sets.
 * <p>
 * Checked for every input: a decoder returns a value and never throws; the value is NEED_MORE, a known error or
 * exactly the frame's length; a flyweight offered the bytes without framing refuses a length that disagrees with
 * the fixed header; and a packet that decodes re-encodes (with our encoders) to a packet that decodes to the same
 * fields.
 * <p>
 * Corpus: {@code src/test/resources/io/ringmq/protocol/PacketFuzzTestInputs/<method>/}, valid packets of each type
 * for both versions ({@link PacketSeeds} writes them) and the regression inputs of findings.
 */
class PacketFuzzTest
{
    /** Larger than anything the fuzzer writes: the maximum packet size is the frame decoder's target's business. */
    private static final int MAX_PACKET_LENGTH = 1 << 20;

    @FuzzTest(maxDuration = "10s")
    void connect(final byte[] data)
    {
        check(data, PacketType.CONNECT);
    }

    @FuzzTest(maxDuration = "10s")
    void connack(final byte[] data)
    {
        check(data, PacketType.CONNACK);
    }

    @FuzzTest(maxDuration = "10s")
    void publish(final byte[] data)
    {
        check(data, PacketType.PUBLISH);
    }

    /**
     * PUBACK, PUBREC, PUBREL and PUBCOMP: bits 2..3 of the first byte pick which.
     */
    @FuzzTest(maxDuration = "10s")
    void acks(final byte[] data)
    {
        check(data, data.length > 0 ? PacketType.PUBACK + ((data[0] >>> 2) & 3) : PacketType.PUBACK);
    }

    @FuzzTest(maxDuration = "10s")
    void subscribe(final byte[] data)
    {
        check(data, PacketType.SUBSCRIBE);
    }

    @FuzzTest(maxDuration = "10s")
    void suback(final byte[] data)
    {
        check(data, PacketType.SUBACK);
    }

    @FuzzTest(maxDuration = "10s")
    void unsubscribe(final byte[] data)
    {
        check(data, PacketType.UNSUBSCRIBE);
    }

    @FuzzTest(maxDuration = "10s")
    void unsuback(final byte[] data)
    {
        check(data, PacketType.UNSUBACK);
    }

    /**
     * PINGREQ and PINGRESP: bit 2 of the first byte picks which.
     */
    @FuzzTest(maxDuration = "10s")
    void pings(final byte[] data)
    {
        check(data, data.length > 0 && (data[0] & 4) != 0 ? PacketType.PINGRESP : PacketType.PINGREQ);
    }

    @FuzzTest(maxDuration = "10s")
    void disconnect(final byte[] data)
    {
        check(data, PacketType.DISCONNECT);
    }

    @FuzzTest(maxDuration = "10s")
    void auth(final byte[] data)
    {
        check(data, PacketType.AUTH);
    }

    /**
     * Any bytes at all, the type nibble included, through {@link PacketDecoder} as an I/O agent calls it.
     */
    @FuzzTest(maxDuration = "10s")
    void anyPacket(final byte[] data)
    {
        check(data, -1);
    }

    /**
     * @param data the fuzzer's input: a control byte, then the packet.
     * @param type the packet type to force into the first byte, or -1 to leave it as the fuzzer wrote it.
     */
    static void check(final byte[] data, final int type)
    {
        if (data.length < 2)
        {
            return;
        }
        final int version = (data[0] & 1) == 0 ? MqttVersion.V3_1_1 : MqttVersion.V5;
        final byte[] packet = java.util.Arrays.copyOfRange(data, 1, data.length);
        if (type >= 0)
        {
            final int flags = (data[0] & 2) != 0 && type != PacketType.PUBLISH ?
                PacketType.requiredFlags(type) : packet[0] & 0x0F;
            packet[0] = (byte)((type << 4) | flags);
        }
        final UnsafeBuffer buffer = new UnsafeBuffer(packet);
        final PacketDecoder decoder = new PacketDecoder();
        final int result = decoder.decode(buffer, 0, packet.length, version, MAX_PACKET_LENGTH);
        if (result < 0)
        {
            assertThat(DecodeError.isError(result)).as("a known error: %d", result).isTrue();
        }
        else if (result > 0)
        {
            assertThat(result).as("the frame's length").isEqualTo(decoder.frame().frameLength());
            roundTrip(decoder, version);
        }
        wrapUnframed(buffer, packet.length, version);
        final int again = decoder.decode(buffer, 0, packet.length, version, MAX_PACKET_LENGTH);
        assertThat(again).as("the same verdict twice: no state kept between packets").isEqualTo(result);
    }

    /**
     * Re-encodes the decoded packet and decodes that: the same fields must come back.
     */
    private static void roundTrip(final PacketDecoder decoder, final int version)
    {
        final int type = decoder.packetType();
        final int encodeVersion = type == PacketType.CONNECT ? decoder.connect().protocolLevel() : version;
        final String before = Samples.render(decoder, encodeVersion);
        final byte[] bytes = Reencode.of(decoder, encodeVersion);
        final PacketDecoder second = new PacketDecoder();
        final int result = second.decode(new UnsafeBuffer(bytes), 0, bytes.length, version, Integer.MAX_VALUE);
        assertThat(result).as("the re-encoded %s decodes: %s", PacketType.name(type), before)
            .isEqualTo(bytes.length);
        assertThat(Samples.render(second, encodeVersion)).as("the same fields after a round trip").isEqualTo(before);
    }

    /**
     * Offers the bytes straight to the flyweight of their type, as a caller that skipped the frame decoder would:
     * the length given is all the bytes, whatever the fixed header says, and a result must still be a value.
     */
    private static void wrapUnframed(final UnsafeBuffer buffer, final int length, final int version)
    {
        final int type = (buffer.getByte(0) & 0xFF) >>> 4;
        final int result;
        switch (type)
        {
            case PacketType.CONNECT: result = new ConnectFlyweight().wrap(buffer, 0, length); break;
            case PacketType.CONNACK: result = new ConnackFlyweight().wrap(buffer, 0, length, version); break;
            case PacketType.PUBLISH: result = new PublishFlyweight().wrap(buffer, 0, length, version); break;
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP: result = new AckFlyweight().wrap(buffer, 0, length, version); break;
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE: result = new SubscribeFlyweight().wrap(buffer, 0, length, version); break;
            case PacketType.SUBACK:
            case PacketType.UNSUBACK: result = new SubackFlyweight().wrap(buffer, 0, length, version); break;
            case PacketType.PINGREQ:
            case PacketType.PINGRESP: result = PingCodec.decode(buffer, 0, length, type); break;
            case PacketType.DISCONNECT: result = new DisconnectFlyweight().wrap(buffer, 0, length, version); break;
            case PacketType.AUTH: result = new AuthFlyweight().wrap(buffer, 0, length, version); break;
            default: return;
        }
        assertThat(result == length || DecodeError.isError(result))
            .as("%s unframed: the whole length or an error, not %d", PacketType.name(type), result).isTrue();
    }
}
