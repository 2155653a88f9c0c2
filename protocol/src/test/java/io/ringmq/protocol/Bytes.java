package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;

import java.util.HexFormat;

/**
 * Test helpers for writing packets as the specification prints them: hex bytes and ASCII strings.
 */
final class Bytes
{
    private Bytes()
    {
    }

    /**
     * @param hex bytes as hex pairs, spaces allowed, e.g. "10 0C 00 04".
     */
    static byte[] hex(final String hex)
    {
        return HexFormat.of().parseHex(hex.replace(" ", ""));
    }

    static UnsafeBuffer buffer(final String hex)
    {
        return new UnsafeBuffer(hex(hex));
    }

    static UnsafeBuffer buffer(final byte[] bytes)
    {
        return new UnsafeBuffer(bytes);
    }

    /**
     * @return a two-byte length followed by the ASCII string, as hex.
     */
    static String str(final String ascii)
    {
        final StringBuilder sb = new StringBuilder(String.format("%04X", ascii.length()));
        for (final char c : ascii.toCharArray())
        {
            sb.append(String.format("%02X", (int)c));
        }
        return sb.toString();
    }

    /**
     * @param firstByte the fixed header's first byte as hex, e.g. "30".
     * @param body      the variable header and payload as hex; the remaining length is computed.
     * @return the whole packet as hex.
     */
    static String packet(final String firstByte, final String... body)
    {
        final String joined = String.join("", body).replace(" ", "");
        int remaining = joined.length() / 2;
        final StringBuilder sb = new StringBuilder(firstByte);
        do
        {
            int b = remaining & 0x7F;
            remaining >>>= 7;
            if (remaining > 0)
            {
                b |= 0x80;
            }
            sb.append(String.format("%02X", b));
        }
        while (remaining > 0);
        return sb.append(joined).toString();
    }

    /**
     * @return an MQTT 5.0 property section: its variable byte integer length, then the properties given as hex.
     */
    static String props(final String... properties)
    {
        return packet("", properties);
    }

    static String hexOf(final byte[] bytes)
    {
        return HexFormat.of().withUpperCase().formatHex(bytes);
    }

    static byte[] copy(final UnsafeBuffer buffer, final int length)
    {
        final byte[] bytes = new byte[length];
        buffer.getBytes(0, bytes);
        return bytes;
    }
}
