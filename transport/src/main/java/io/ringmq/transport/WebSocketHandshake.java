package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.Locale;

/**
 * The server side of RFC 6455's opening handshake (section 4.2) for MQTT over WebSocket (MQTT 5.0 section 6): the
 * HTTP/1.1 Upgrade request gathered as it arrives, at most {@link #MAX_REQUEST_LENGTH} bytes (what its buffer grows
 * past the first read's {@value #FIRST_READ_LENGTH} bytes counted in {@link UnadmittedHeap}), judged once its
 * header ends and answered with {@code 101 Switching Protocols} or a plain {@code 400}/{@code 404} refusal. One per
 * connection, dropped once it answered; nothing here is on the message path.
 * <pre>
 *   GET /mqtt HTTP/1.1                           request line: GET, HTTP/1.1, the path (any, or the required one)
 *   Upgrade: websocket                           a token list holding "websocket", any case
 *   Connection: keep-alive, Upgrade              a token list holding "upgrade", any case
 *   Sec-WebSocket-Version: 13                    else 400 naming 13 (section 4.4)
 *   Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==  16 bytes in base64, once
 *   Sec-WebSocket-Protocol: mqtt                 optional; offered only other names: 400 [MQTT-6.0.0-3]
 * </pre>
 */
final class WebSocketHandshake
{
    /** The request line and headers together, blank line included: a longer request is refused. */
    static final int MAX_REQUEST_LENGTH = 8 * 1024;
    /** The request has not ended yet. */
    static final int NEED_MORE = 0;
    /** Answered with 101: WebSocket frames follow. */
    static final int ACCEPTED = 1;
    /** Answered with 400 or 404: the connection ends once the answer is written. */
    static final int REFUSED = 2;
    /** The socket ended before the request did. */
    static final int END_OF_STREAM = -1;

    /** The MQTT subprotocol [MQTT-6.0.0-4], and the name MQTT 3.1 clients offered (mqttv3.1). */
    static final String MQTT = "mqtt";
    static final String MQTT_V31 = "mqttv3.1";

    private static final String ACCEPT_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    private static final int FIRST_READ_LENGTH = 512;
    private static final byte[] METHOD = "GET ".getBytes(StandardCharsets.US_ASCII);
    private static final String BAD_REQUEST = "HTTP/1.1 400 Bad Request\r\n";
    private static final String NOT_FOUND = "HTTP/1.1 404 Not Found\r\n";
    private static final String REFUSAL_END = "Connection: close\r\nContent-Length: 0\r\n\r\n";

    private final String requiredPath;
    private final UnadmittedHeap unadmitted;
    private ByteBuf request = Unpooled.buffer(FIRST_READ_LENGTH, MAX_REQUEST_LENGTH);
    /** What the request's buffer grew by past its first read's length: counted in {@link UnadmittedHeap}. */
    private int grown;
    /** Where the search for the blank line that ends the header goes on. */
    private int scanned;
    private byte[] response;
    private String refusal;

    /**
     * @param requiredPath the only path accepted (its query ignored), e.g. {@code /mqtt}; null accepts any path,
     *                     as Mosquitto does.
     */
    WebSocketHandshake(final String requiredPath, final UnadmittedHeap unadmitted)
    {
        this.requiredPath = requiredPath;
        this.unadmitted = unadmitted;
    }

    /**
     * Reads what the layer below has of the request and judges it once its header ended.
     *
     * @return {@link #NEED_MORE}, {@link #ACCEPTED}, {@link #REFUSED} or {@link #END_OF_STREAM}.
     */
    int read(final SocketLayer below) throws IOException
    {
        while (true)
        {
            if (!request.isWritable())
            {
                if (request.capacity() == MAX_REQUEST_LENGTH)
                {
                    return refuse(BAD_REQUEST, "request header over " + MAX_REQUEST_LENGTH + " bytes", "");
                }
                final int growth = Math.min(request.capacity(), request.maxWritableBytes());
                unadmitted.take(growth); // past the unadmitted share of the heap, or its address's: this one ends
                grown += growth;
                request.ensureWritable(growth);
            }
            final int read = below.read(request);
            if (read < 0)
            {
                return END_OF_STREAM;
            }
            if (read == 0)
            {
                return NEED_MORE;
            }
            final int verdict = scan();
            if (verdict != NEED_MORE)
            {
                return verdict;
            }
        }
    }

    /**
     * @return the bytes to write: the 101 or the refusal; null before the request was judged.
     */
    byte[] response()
    {
        return response;
    }

    /**
     * @return why the request was refused, or null.
     */
    String refusal()
    {
        return refusal;
    }

    /**
     * @return bytes that came after the request's header (the client's first frames), still readable.
     */
    ByteBuf leftover()
    {
        return request;
    }

    /**
     * Drops the request's buffer.
     */
    void release()
    {
        request = Unpooled.EMPTY_BUFFER;
        unadmitted.giveBack(grown);
        grown = 0;
    }

    /**
     * {@code Sec-WebSocket-Accept}: base64 of the SHA-1 of the key and RFC 6455's GUID (section 4.2.2).
     */
    static String acceptKey(final String key)
    {
        try
        {
            final MessageDigest sha1 = MessageDigest.getInstance("SHA-1");
            final byte[] digest = sha1.digest((key + ACCEPT_GUID).getBytes(StandardCharsets.US_ASCII));
            return Base64.getEncoder().encodeToString(digest);
        }
        catch (final NoSuchAlgorithmException ex)
        {
            throw new IllegalStateException("every JDK has SHA-1", ex);
        }
    }

    private int scan()
    {
        final int end = request.writerIndex();
        for (int i = 0; i < METHOD.length && i < end; i++)
        {
            if (request.getByte(i) != METHOD[i])
            {
                return refuse(BAD_REQUEST, "not a GET request", ""); // judged on its first bytes: no slow drip
            }
        }
        for (int i = Math.max(3, scanned); i < end; i++)
        {
            if (request.getByte(i) == '\n' && request.getByte(i - 1) == '\r' && request.getByte(i - 2) == '\n' &&
                request.getByte(i - 3) == '\r')
            {
                final String header = request.toString(0, i - 3, StandardCharsets.ISO_8859_1);
                request.readerIndex(i + 1);
                return judge(header);
            }
        }
        scanned = end;
        return NEED_MORE;
    }

    private int judge(final String header)
    {
        final String[] lines = header.split("\r\n", -1);
        final String[] requestLine = lines[0].split(" ", -1);
        if (requestLine.length != 3 || !"GET".equals(requestLine[0]) || !"HTTP/1.1".equals(requestLine[2]) ||
            !requestLine[1].startsWith("/"))
        {
            return refuse(BAD_REQUEST, "not a GET / HTTP/1.1 request line", "");
        }
        final int query = requestLine[1].indexOf('?');
        final String path = query < 0 ? requestLine[1] : requestLine[1].substring(0, query);
        if (null != requiredPath && !requiredPath.equals(path))
        {
            return refuse(NOT_FOUND, "path " + path + " is not " + requiredPath, "");
        }
        boolean upgrade = false;
        boolean connectionUpgrade = false;
        String version = null;
        String key = null;
        boolean offered = false;
        String chosen = null;
        for (int i = 1; i < lines.length; i++)
        {
            final String line = lines[i];
            final int colon = line.indexOf(':');
            if (colon <= 0 || !isToken(line, 0, colon) || !isFieldValue(line, colon + 1))
            {
                return refuse(BAD_REQUEST, "malformed header line", ""); // folded lines start with a space
            }
            final String name = line.substring(0, colon).toLowerCase(Locale.ROOT);
            final String value = line.substring(colon + 1).trim();
            switch (name)
            {
                case "upgrade":
                    upgrade |= hasToken(value, "websocket");
                    break;
                case "connection":
                    connectionUpgrade |= hasToken(value, "upgrade");
                    break;
                case "sec-websocket-version":
                    version = null == version ? value : "duplicate";
                    break;
                case "sec-websocket-key":
                    if (null != key)
                    {
                        return refuse(BAD_REQUEST, "Sec-WebSocket-Key twice", "");
                    }
                    key = value;
                    break;
                case "sec-websocket-protocol":
                    for (final String offer : value.split(",", -1))
                    {
                        final String name2 = offer.trim();
                        offered |= !name2.isEmpty();
                        if (MQTT.equalsIgnoreCase(name2) || (null == chosen && MQTT_V31.equalsIgnoreCase(name2)))
                        {
                            chosen = name2; // "mqtt" is preferred to the 3.1 name; the client's spelling is echoed
                        }
                    }
                    break;
                default:
                    break;
            }
        }
        if (!upgrade || !connectionUpgrade)
        {
            return refuse(BAD_REQUEST, "no Upgrade: websocket or Connection: upgrade", "");
        }
        if (!"13".equals(version))
        {
            return refuse(BAD_REQUEST, "Sec-WebSocket-Version is not 13", "Sec-WebSocket-Version: 13\r\n");
        }
        if (!validKey(key))
        {
            return refuse(BAD_REQUEST, "Sec-WebSocket-Key is not 16 bytes in base64", "");
        }
        if (offered && null == chosen)
        {
            return refuse(BAD_REQUEST, "no subprotocol mqtt offered [MQTT-6.0.0-3]", "");
        }
        // [MQTT-6.0.0-4] the chosen subprotocol is echoed; a client that offered none (older ones) gets none
        final String text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
            "Sec-WebSocket-Accept: " + acceptKey(key) + "\r\n" +
            (null == chosen ? "" : "Sec-WebSocket-Protocol: " + chosen + "\r\n") + "\r\n";
        response = text.getBytes(StandardCharsets.ISO_8859_1);
        return ACCEPTED;
    }

    private int refuse(final String statusLine, final String why, final String extraHeaders)
    {
        refusal = why;
        response = (statusLine + extraHeaders + REFUSAL_END).getBytes(StandardCharsets.ISO_8859_1);
        return REFUSED;
    }

    private static boolean validKey(final String key)
    {
        if (null == key || key.length() != 24)
        {
            return false;
        }
        try
        {
            return Base64.getDecoder().decode(key).length == 16;
        }
        catch (final IllegalArgumentException ex)
        {
            return false;
        }
    }

    /**
     * @return whether a comma-separated list holds {@code token}, any case.
     */
    static boolean hasToken(final String list, final String token)
    {
        for (final String element : list.split(",", -1))
        {
            if (token.equalsIgnoreCase(element.trim()))
            {
                return true;
            }
        }
        return false;
    }

    private static boolean isToken(final String line, final int from, final int to)
    {
        for (int i = from; i < to; i++)
        {
            final char c = line.charAt(i);
            if (c <= ' ' || c >= 0x7F || "()<>@,;:\\\"/[]?={}".indexOf(c) >= 0)
            {
                return false;
            }
        }
        return true;
    }

    private static boolean isFieldValue(final String line, final int from)
    {
        for (int i = from; i < line.length(); i++)
        {
            final char c = line.charAt(i);
            if ((c < ' ' && c != '\t') || c == 0x7F)
            {
                return false;
            }
        }
        return true;
    }
}
