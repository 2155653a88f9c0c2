package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

/**
 * Writes the seed corpus of {@link PacketFuzzTest} and {@link CodecFuzzTest}: valid packets of every type for both
 * protocol versions (from {@link Samples}, fixed seeds, so a rerun writes the same files), each behind the control
 * byte its target expects. Run once by hand after a change to the codec's formats:
 * <pre>
 *   java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp protocol/target/test-classes:protocol/target/classes:$AGRONA io.ringmq.protocol.PacketSeeds \
 *       protocol/src/test/resources/io/ringmq/protocol
 * </pre>
 * Findings' regression inputs are added beside these by hand, named {@code finding-*}.
 */
final class PacketSeeds
{
    private static final int PER_TYPE = 3;

    private PacketSeeds()
    {
    }

    public static void main(final String[] args) throws IOException
    {
        final Path root = Path.of(args[0]);
        final Path packets = root.resolve("PacketFuzzTestInputs");
        final Path codec = root.resolve("CodecFuzzTestInputs");
        final Random random = new Random(0x5EED);
        for (final int version : new int[]{MqttVersion.V3_1_1, MqttVersion.V5})
        {
            final int last = version == MqttVersion.V5 ? PacketType.AUTH : PacketType.DISCONNECT;
            for (int type = PacketType.CONNECT; type <= last; type++)
            {
                for (int i = 0; i < PER_TYPE; i++)
                {
                    final byte[] packet = Samples.of(random, version, type).bytes();
                    final String name = "v" + version + "-" + PacketType.name(type).toLowerCase() + "-" + i;
                    final int control = (version == MqttVersion.V5 ? 1 : 0) | 2 |
                        (type >= PacketType.PUBACK && type <= PacketType.PUBCOMP ? (type - PacketType.PUBACK) << 2 : 0) |
                        (type == PacketType.PINGRESP ? 4 : 0);
                    write(packets.resolve(method(type)), name, control, packet);
                    write(packets.resolve("anyPacket"), name, control, packet);
                    write(codec.resolve("frameDecoder"), name, version == MqttVersion.V5 ? 1 : 0, packet);
                }
            }
            for (int context = 0; context < 16; context++)
            {
                if (context == PacketType.PINGREQ || context == PacketType.PINGRESP)
                {
                    continue;
                }
                final MqttProperties properties = Samples.properties(random, MqttVersion.V5, context);
                final byte[] section = new byte[properties.sectionLength()];
                properties.encode(new UnsafeBuffer(section), 0);
                write(codec.resolve("properties"), "context-" + context + "-" + version,
                    indexOfContext(context), section);
            }
        }
        for (final int value : new int[]{0, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, 268_435_455})
        {
            final byte[] vbi = new byte[VariableByteInteger.encodedLength(value)];
            VariableByteInteger.encode(new UnsafeBuffer(vbi), 0, value);
            Files.createDirectories(codec.resolve("variableByteIntegerDecode"));
            Files.write(codec.resolve("variableByteIntegerDecode").resolve("vbi-" + value), vbi);
        }
        final String[] texts = {"a/b/c", "\u00e9\u00df\u6c34\u20ac", "\uD83D\uDE00 emoji", "\uFEFFbom", "sport/+/#"};
        for (int i = 0; i < texts.length; i++)
        {
            write(codec.resolve("utf8Validate"), "text-" + i, 0, texts[i].getBytes(StandardCharsets.UTF_8));
            Files.createDirectories(codec.resolve("utf8RoundTrip"));
            Files.write(codec.resolve("utf8RoundTrip").resolve("text-" + i), texts[i].getBytes(StandardCharsets.UTF_8));
        }
    }

    private static int indexOfContext(final int context)
    {
        final int[] contexts = CodecFuzzTest.PROPERTY_CONTEXTS;
        for (int i = 0; i < contexts.length; i++)
        {
            if (contexts[i] == context)
            {
                return i;
            }
        }
        throw new IllegalArgumentException("context " + context);
    }

    private static String method(final int type)
    {
        switch (type)
        {
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP: return "acks";
            case PacketType.PINGREQ:
            case PacketType.PINGRESP: return "pings";
            default: return PacketType.name(type).toLowerCase();
        }
    }

    private static void write(final Path directory, final String name, final int control, final byte[] body)
        throws IOException
    {
        Files.createDirectories(directory);
        final byte[] bytes = new byte[body.length + 1];
        bytes[0] = (byte)control;
        System.arraycopy(body, 0, bytes, 1, body.length);
        Files.write(directory.resolve(name), bytes);
    }
}
