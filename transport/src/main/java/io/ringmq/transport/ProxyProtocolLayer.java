package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;

/**
 * HAProxy's PROXY protocol (versions 1 and 2, https://www.haproxy.org/download/2.9/doc/proxy-protocol.txt) on a
 * listener behind a load balancer or TLS terminator: the header the proxy sends first is read and judged before
 * any other byte goes up, and {@link #proxiedAddress()} then says who the client is. Bytes after the header, in
 * the same read or later, go up unchanged (a TLS ClientHello when TLS sits above).
 * <pre>
 *   v1: "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"      text, at most 107 bytes; TCP4, TCP6 or UNKNOWN
 *   v2: \r\n\r\n\0\r\nQUIT\n  ver|cmd  af|proto  length(2)      16 bytes, then addresses and TLVs (skipped)
 *        0x21 PROXY, 0x20 LOCAL   0x11 TCP/IPv4, 0x21 TCP/IPv6, 0x00 UNSPEC, 0x31 UNIX
 * </pre>
 * LOCAL (the proxy's own health check), UNKNOWN, UNSPEC and UNIX sources leave {@link #proxiedAddress()} null: the
 * socket's address is the client's. A malformed header, one over its bound, a wrong signature, or a version the
 * listener does not take ends the stream (-1); a connection that sends no header reads 0 until the agent's connect
 * timeout closes it. Every byte of the header is checked as it arrives, so a stranger is refused on its first
 * wrong byte. The header's buffer is made once per connection and dropped once the header is parsed; what it grows
 * past its first {@value #MAX_V1_LENGTH} bytes (a v2 header's TLVs, up to {@value #MAX_V2_BLOCK_LENGTH} bytes) is
 * counted in {@link HeapShare#UNADMITTED}, as a WebSocket Upgrade request's growth is: past that share the
 * connection ends, counted as having no buffer memory left (a listener reachable by others than the proxy would let
 * 20,000 sockets hold 80 MB of heap in headers that never end). The DNS is never asked, addresses are parsed as
 * literals.
 */
final class ProxyProtocolLayer implements SocketLayer
{
    /**
     * Which versions of the header a listener takes (as {@code ListenerSettings.ProxyProtocol} names them); with
     * {@link #ANY}, the first byte tells them apart.
     */
    enum Versions
    {
        /** The text header only. */
        V1,
        /** The binary header only. */
        V2,
        /** Either. */
        ANY
    }

    /** The longest v1 header, CRLF included ("PROXY UNKNOWN" and two full IPv6 addresses and ports). */
    static final int MAX_V1_LENGTH = 107;
    /** The v2 header before its address block: signature, version and command, family, length. */
    static final int V2_FIXED_LENGTH = 16;
    /** The longest v2 address block with its TLVs that is taken. */
    static final int MAX_V2_BLOCK_LENGTH = 4 * 1024;

    private static final int NEED_MORE = 0;
    private static final int MALFORMED = -1;
    private static final byte[] V1_PREFIX = "PROXY ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] V2_SIGNATURE = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
    private static final int V2_COMMAND_LOCAL = 0x20;
    private static final int V2_COMMAND_PROXY = 0x21;
    private static final int AF_UNSPEC = 0;
    private static final int AF_INET = 1;
    private static final int AF_INET6 = 2;
    private static final int AF_UNIX = 3;
    private static final int PROTOCOL_STREAM = 1;
    private static final int INET_BLOCK_LENGTH = 12;
    private static final int INET6_BLOCK_LENGTH = 36;
    private static final int UNIX_BLOCK_LENGTH = 216;
    private static final int TLV_HEADER_LENGTH = 3;

    private final SocketLayer below;
    private final Versions versions;
    private final UnadmittedHeap unadmitted;
    /** The header as it arrives, then what followed it until read; null once that was handed up. */
    private ByteBuf header = Unpooled.buffer(MAX_V1_LENGTH + 1, V2_FIXED_LENGTH + MAX_V2_BLOCK_LENGTH);
    private boolean parsed;
    /** What the header's buffer grew by past its first length: counted in {@link UnadmittedHeap}. */
    private int grown;
    private InetSocketAddress proxiedAddress;
    private boolean failed;
    private String malformed;

    /**
     * @param below    the socket's own layer (TCP): the proxy's header is the first thing on the wire, under TLS.
     * @param versions which header versions the listener takes.
     */
    ProxyProtocolLayer(final SocketLayer below, final Versions versions)
    {
        this(below, versions, new UnadmittedHeap());
    }

    /**
     * @param unadmitted what the connection holds before admission, shared by its layers.
     */
    ProxyProtocolLayer(final SocketLayer below, final Versions versions, final UnadmittedHeap unadmitted)
    {
        this.below = below;
        this.versions = versions;
        this.unadmitted = unadmitted;
    }

    public int read(final ByteBuf in) throws IOException
    {
        if (!parsed)
        {
            final int known = readAddress();
            if (known <= 0)
            {
                return known;
            }
        }
        if (null == header)
        {
            return below.read(in);
        }
        final int after = header.readableBytes();
        in.writeBytes(header); // what followed the header in its last read goes up first, unchanged
        dropHeader();
        return after;
    }

    /**
     * Reads the header and nothing above it: bytes that followed it in the same read wait here for the next
     * {@link #read} ({@link #hasBufferedInput()} says so), so the agent knows the client before any of them reaches
     * TLS.
     */
    @Override
    public int readAddress() throws IOException
    {
        while (!parsed && !failed)
        {
            final int read = below.read(header);
            if (read <= 0)
            {
                return read;
            }
            final int length = parse();
            if (length == MALFORMED)
            {
                failed = true;
                break;
            }
            if (length > 0)
            {
                parsed = true;
                header.readerIndex(length);
                if (!header.isReadable())
                {
                    dropHeader();
                }
                return 1;
            }
            if (!header.isWritable())
            {
                final int capacity = Math.min(header.maxCapacity(), 2 * header.capacity());
                unadmitted.take(capacity - header.capacity()); // past the share: this connection ends
                grown += capacity - header.capacity();
                header.capacity(capacity);
            }
        }
        return parsed ? 1 : -1;
    }

    public int write(final ByteBuf out) throws IOException
    {
        return below.write(out);
    }

    public boolean flush() throws IOException
    {
        return below.flush();
    }

    public boolean hasPendingOutput()
    {
        return below.hasPendingOutput();
    }

    public boolean hasBufferedInput()
    {
        return (parsed && null != header) || below.hasBufferedInput();
    }

    public String peerIdentity()
    {
        return below.peerIdentity();
    }

    /**
     * @return the client's address and port from a PROXY header (v1 TCP4/TCP6, v2 PROXY over TCP/IPv4 or IPv6);
     * null before the header was parsed and for LOCAL, UNKNOWN, UNSPEC and UNIX, where the socket's own remote
     * address stands.
     */
    public InetSocketAddress proxiedAddress()
    {
        return proxiedAddress;
    }

    public boolean addressKnown()
    {
        return parsed;
    }

    public UnadmittedHeap unadmittedHeap()
    {
        return unadmitted;
    }

    @Override
    public long bytesFromSocket()
    {
        return below.bytesFromSocket();
    }

    public void close()
    {
        dropHeader();
        below.close();
    }

    private void dropHeader()
    {
        header = null;
        unadmitted.giveBack(grown);
        grown = 0;
    }

    /**
     * @return why the header was refused, or null.
     */
    String malformed()
    {
        return malformed;
    }

    /**
     * @return the header's length once it is whole and valid, {@link #NEED_MORE} or {@link #MALFORMED}.
     */
    private int parse()
    {
        final int available = header.writerIndex();
        final int first = header.getByte(0);
        if (first == V1_PREFIX[0] && versions != Versions.V2)
        {
            return parseV1(available);
        }
        if (first == V2_SIGNATURE[0] && versions != Versions.V1)
        {
            return parseV2(available);
        }
        return malformed("not a PROXY " + (versions == Versions.ANY ? "" : versions + " ") + "header");
    }

    private int parseV1(final int available)
    {
        if (!startsWith(V1_PREFIX, available))
        {
            return malformed("not a PROXY v1 header");
        }
        for (int i = 0; i < Math.min(available, MAX_V1_LENGTH - 1); i++) // CRLF ends by byte 107
        {
            final int b = header.getByte(i);
            if (b == '\r')
            {
                if (i + 1 == available)
                {
                    return NEED_MORE;
                }
                if (header.getByte(i + 1) != '\n')
                {
                    return malformed("v1: CR without LF");
                }
                return parseV1Line(header.toString(0, i, StandardCharsets.US_ASCII)) ? i + 2 : MALFORMED;
            }
            if (b < ' ' || b > '~')
            {
                return malformed("v1: a byte that is not printable ASCII");
            }
        }
        return available >= MAX_V1_LENGTH ? malformed("v1: no CRLF in " + MAX_V1_LENGTH + " bytes") : NEED_MORE;
    }

    private boolean parseV1Line(final String line)
    {
        final String[] fields = line.split(" ", -1);
        if (fields.length >= 2 && "UNKNOWN".equals(fields[1]))
        {
            return true; // the rest of the line is ignored, the socket's address stands
        }
        final boolean tcp4 = fields.length == 6 && "TCP4".equals(fields[1]);
        if (!tcp4 && !(fields.length == 6 && "TCP6".equals(fields[1])))
        {
            return malformed("v1: not PROXY TCP4|TCP6 src dst sport dport, nor UNKNOWN") >= 0;
        }
        final InetAddress source = tcp4 ? ipv4(fields[2]) : ipv6(fields[2]);
        final InetAddress destination = tcp4 ? ipv4(fields[3]) : ipv6(fields[3]);
        final int sourcePort = port(fields[4]);
        if (null == source || null == destination || sourcePort < 0 || port(fields[5]) < 0)
        {
            return malformed("v1: a malformed " + fields[1] + " address or port") >= 0;
        }
        proxiedAddress = new InetSocketAddress(source, sourcePort);
        return true;
    }

    private int parseV2(final int available)
    {
        if (!startsWith(V2_SIGNATURE, available))
        {
            return malformed("not the PROXY v2 signature");
        }
        if (available < V2_FIXED_LENGTH)
        {
            return available > V2_SIGNATURE.length && !validCommand(header.getByte(V2_SIGNATURE.length) & 0xFF) ?
                malformed("v2: not version 2 LOCAL or PROXY") : NEED_MORE;
        }
        final int command = header.getByte(12) & 0xFF;
        final int family = header.getByte(13) >> 4 & 0x0F;
        final int protocol = header.getByte(13) & 0x0F;
        final int blockLength = header.getUnsignedShort(14);
        if (!validCommand(command))
        {
            return malformed("v2: not version 2 LOCAL or PROXY");
        }
        if (family > AF_UNIX || protocol > 2)
        {
            return malformed("v2: an unknown address family or protocol");
        }
        if (blockLength > MAX_V2_BLOCK_LENGTH)
        {
            return malformed("v2: address block and TLVs over " + MAX_V2_BLOCK_LENGTH + " bytes");
        }
        final int length = V2_FIXED_LENGTH + blockLength;
        if (available < length)
        {
            return NEED_MORE; // the buffer grows as the bytes arrive, not to the length the header claims
        }
        if (command == V2_COMMAND_LOCAL)
        {
            return length; // the proxy speaking for itself: the block is ignored, the socket's address stands
        }
        final int addressLength = family == AF_INET ? INET_BLOCK_LENGTH : family == AF_INET6 ? INET6_BLOCK_LENGTH :
            family == AF_UNIX ? UNIX_BLOCK_LENGTH : 0;
        if (blockLength < addressLength)
        {
            return malformed("v2: an address block shorter than its family's");
        }
        if ((family == AF_INET || family == AF_INET6) && protocol != PROTOCOL_STREAM)
        {
            return malformed("v2: a datagram source on a stream listener");
        }
        if (!validTlvs(V2_FIXED_LENGTH + addressLength, length))
        {
            return malformed("v2: a TLV runs past the header");
        }
        if (family == AF_INET || family == AF_INET6)
        {
            proxiedAddress = v2Address(family == AF_INET ? 4 : 16);
        }
        return length;
    }

    private InetSocketAddress v2Address(final int addressLength)
    {
        final byte[] address = new byte[addressLength];
        header.getBytes(V2_FIXED_LENGTH, address);
        final int port = header.getUnsignedShort(V2_FIXED_LENGTH + 2 * addressLength);
        try
        {
            return new InetSocketAddress(InetAddress.getByAddress(address), port);
        }
        catch (final UnknownHostException ex)
        {
            throw new IllegalStateException("4 or 16 bytes are an address", ex);
        }
    }

    private boolean validTlvs(final int from, final int end)
    {
        int index = from;
        while (index < end)
        {
            if (index + TLV_HEADER_LENGTH > end)
            {
                return false;
            }
            index += TLV_HEADER_LENGTH + header.getUnsignedShort(index + 1);
        }
        return index == end;
    }

    private static boolean validCommand(final int command)
    {
        return command == V2_COMMAND_LOCAL || command == V2_COMMAND_PROXY;
    }

    private boolean startsWith(final byte[] prefix, final int available)
    {
        for (int i = 0, n = Math.min(prefix.length, available); i < n; i++)
        {
            if (header.getByte(i) != prefix[i])
            {
                return false;
            }
        }
        return true;
    }

    private int malformed(final String why)
    {
        malformed = why;
        return MALFORMED;
    }

    /**
     * @return a dotted-quad IPv4 literal (no leading zeros), or null.
     */
    static InetAddress ipv4(final String text)
    {
        final String[] parts = text.split("\\.", -1);
        if (parts.length != 4)
        {
            return null;
        }
        final byte[] address = new byte[4];
        for (int i = 0; i < 4; i++)
        {
            final int octet = decimal(parts[i], 3);
            if (octet < 0 || octet > 255)
            {
                return null;
            }
            address[i] = (byte)octet;
        }
        try
        {
            return InetAddress.getByAddress(address);
        }
        catch (final UnknownHostException ex)
        {
            return null;
        }
    }

    /**
     * @return an IPv6 literal, or null. Only hex digits, colons and dots reach the parser, with a colon among them,
     * so {@link InetAddress#getByName} takes it as a literal and never asks the DNS.
     */
    static InetAddress ipv6(final String text)
    {
        if (text.isEmpty() || text.length() > 45 || text.indexOf(':') < 0 || text.charAt(0) == '.')
        {
            return null;
        }
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if (Character.digit(c, 16) < 0 && c != ':' && c != '.')
            {
                return null;
            }
        }
        try
        {
            final InetAddress address = InetAddress.getByName(text);
            return address instanceof Inet6Address || text.startsWith("::ffff:") ? address : null;
        }
        catch (final UnknownHostException ex)
        {
            return null;
        }
    }

    /**
     * @return a port 0..65535 without leading zeros, or -1.
     */
    static int port(final String text)
    {
        final int port = decimal(text, 5);
        return port > 65_535 ? -1 : port;
    }

    /**
     * @return the value of 1 to {@code maxDigits} decimal digits with no leading zero, or -1.
     */
    private static int decimal(final String text, final int maxDigits)
    {
        if (text.isEmpty() || text.length() > maxDigits || (text.length() > 1 && text.charAt(0) == '0'))
        {
            return -1;
        }
        int value = 0;
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if (c < '0' || c > '9')
            {
                return -1;
            }
            value = value * 10 + c - '0';
        }
        return value;
    }
}
