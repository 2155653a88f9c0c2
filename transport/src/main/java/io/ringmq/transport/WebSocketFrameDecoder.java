package io.ringmq.transport;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;

/**
 * Client-to-server WebSocket frames (RFC 6455 section 5) turned back into the MQTT byte stream, in place: the
 * frames' bytes are read into the connection's inbound buffer, and {@link #decode} unmasks each payload byte where
 * it lies and moves it down over the frame headers before it, so MQTT packets may span frames and frames may hold
 * several packets [MQTT-6.0.0-2] with no buffer of its own and nothing allocated. A frame header is
 * taken a byte at a time, so a frame may be cut anywhere, and a payload length is only counted down, so a hostile
 * 2^63-1 length streams like any other. Control frames (at most 125 bytes) are gathered apart and handed to the
 * {@link Handler}; ping, pong and close may come between the fragments of a message.
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-------+-+-------------+-------------------------------+
 *  |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
 *  |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
 *  |N|V|V|V|       |S|             |   (if payload len==126/127)   |
 *  | |1|2|3|       |K|             |                               |
 *  +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
 *  |     Extended payload length continued, if payload len == 127  |
 *  + - - - - - - - - - - - - - - - +-------------------------------+
 *  |                               |Masking-key, if MASK set to 1  |
 *  +-------------------------------+-------------------------------+
 *  | Masking-key (continued)       |          Payload Data         |
 *  +-------------------------------- - - - - - - - - - - - - - - - +
 * </pre>
 * Once a close arrives or the client breaks the protocol, {@link #closeCode()} says what to answer and nothing
 * more is decoded (the layer ends the stream).
 */
final class WebSocketFrameDecoder
{
    /** Called for control frames the peer expects an answer to. */
    interface Handler
    {
        /**
         * A ping arrived: answer with a pong carrying the same payload (RFC 6455 section 5.5.2).
         */
        void onPing(DirectBuffer payload, int length);
    }

    static final int OPCODE_CONTINUATION = 0x0;
    static final int OPCODE_TEXT = 0x1;
    static final int OPCODE_BINARY = 0x2;
    static final int OPCODE_CLOSE = 0x8;
    static final int OPCODE_PING = 0x9;
    static final int OPCODE_PONG = 0xA;
    static final int MAX_CONTROL_PAYLOAD_LENGTH = 125;

    /** Still open. */
    static final int OPEN = 0;
    static final int CLOSE_NORMAL = 1000;
    static final int CLOSE_GOING_AWAY = 1001;
    static final int CLOSE_PROTOCOL_ERROR = 1002;
    static final int CLOSE_UNSUPPORTED_DATA = 1003;
    /** The peer's close carried no status code: the echo carries none either (1005 never goes on the wire). */
    static final int CLOSE_NO_STATUS = 1005;
    static final int CLOSE_INVALID_PAYLOAD = 1007;

    private static final int FIRST_BYTE = 0;
    private static final int LENGTH_BYTE = 1;
    private static final int EXTENDED_LENGTH = 2;
    private static final int MASKING_KEY = 3;
    private static final int PAYLOAD = 4;
    private static final int DONE = 5;

    private final Handler handler;
    private final UnsafeBuffer control = new UnsafeBuffer(new byte[MAX_CONTROL_PAYLOAD_LENGTH]);
    private int state = FIRST_BYTE;
    private int opcode;
    private boolean fin;
    /** A fragmented binary message is under way: only continuations and control frames may come. */
    private boolean inMessage;
    private int lengthBytesLeft;
    /** The payload bytes of the current frame not decoded yet; up to 2^63-1. */
    private long payloadLeft;
    private int maskBytesRead;
    /** The masking key, its first byte highest. */
    private int mask;
    /** Which byte of the masking key the next payload byte is XORed with. */
    private int maskIndex;
    private int controlLength;
    private int closeCode = OPEN;
    private boolean closeReceived;

    WebSocketFrameDecoder(final Handler handler)
    {
        this.handler = handler;
    }

    /**
     * Decodes the frame bytes at {@code [start, end)} of {@code buffer}, leaving the unmasked payload of binary
     * frames at {@code start}.
     *
     * @return payload bytes now at {@code [start, start + returned)}; check {@link #closeCode()} after.
     */
    int decode(final MutableDirectBuffer buffer, final int start, final int end)
    {
        int read = start;
        int write = start;
        while (read < end && state != DONE)
        {
            if (state != PAYLOAD)
            {
                onHeaderByte(buffer.getByte(read++) & 0xFF);
                continue;
            }
            final int length = (int)Math.min(payloadLeft, end - read);
            if (isControl(opcode))
            {
                for (int i = 0; i < length; i++)
                {
                    control.putByte(controlLength++, (byte)(buffer.getByte(read + i) ^ maskByte(i)));
                }
            }
            else
            {
                unmask(buffer, read, write, length);
                write += length;
            }
            maskIndex = (maskIndex + length) & 3;
            read += length;
            payloadLeft -= length;
            if (payloadLeft == 0)
            {
                onFrameEnd();
            }
        }
        return write - start;
    }

    /**
     * @return {@link #OPEN}, or the close code to send: the peer's own (echoed), {@link #CLOSE_NO_STATUS} for an
     * empty close, or the error the peer made.
     */
    int closeCode()
    {
        return closeCode;
    }

    /**
     * @return whether the peer sent a close (rather than breaking the protocol).
     */
    boolean closeReceived()
    {
        return closeReceived;
    }

    private void onHeaderByte(final int b)
    {
        switch (state)
        {
            case FIRST_BYTE:
                fin = (b & 0x80) != 0;
                opcode = b & 0x0F;
                if ((b & 0x70) != 0)
                {
                    fail(CLOSE_PROTOCOL_ERROR); // RSV1-3 without a negotiated extension (5.2)
                }
                else if (opcode == OPCODE_TEXT)
                {
                    fail(CLOSE_UNSUPPORTED_DATA); // [MQTT-6.0.0-1] MQTT is sent in binary frames only
                }
                else if (opcode == OPCODE_BINARY ? inMessage : opcode == OPCODE_CONTINUATION && !inMessage)
                {
                    fail(CLOSE_PROTOCOL_ERROR); // a message starts while one is open, or a continuation of none (5.4)
                }
                else if (isControl(opcode) ? !fin || opcode > OPCODE_PONG : opcode > OPCODE_BINARY)
                {
                    fail(CLOSE_PROTOCOL_ERROR); // a fragmented control frame (5.5) or a reserved opcode (5.2)
                }
                else
                {
                    state = LENGTH_BYTE;
                }
                break;
            case LENGTH_BYTE:
                final int length = b & 0x7F;
                if ((b & 0x80) == 0)
                {
                    fail(CLOSE_PROTOCOL_ERROR); // a client masks every frame (5.1)
                }
                else if (isControl(opcode) && length > MAX_CONTROL_PAYLOAD_LENGTH)
                {
                    fail(CLOSE_PROTOCOL_ERROR); // control frames carry at most 125 bytes (5.5)
                }
                else
                {
                    payloadLeft = length < 126 ? length : 0;
                    lengthBytesLeft = length == 127 ? 8 : length == 126 ? 2 : 0;
                    maskBytesRead = 0;
                    state = lengthBytesLeft > 0 ? EXTENDED_LENGTH : MASKING_KEY;
                }
                break;
            case EXTENDED_LENGTH:
                if (lengthBytesLeft == 8 && (b & 0x80) != 0)
                {
                    fail(CLOSE_PROTOCOL_ERROR); // the most significant bit of a 64-bit length is 0 (5.2)
                    break;
                }
                payloadLeft = payloadLeft << 8 | b;
                if (--lengthBytesLeft == 0)
                {
                    state = MASKING_KEY;
                }
                break;
            default: // MASKING_KEY
                mask = mask << 8 | b;
                if (++maskBytesRead == 4)
                {
                    maskIndex = 0;
                    controlLength = 0;
                    state = PAYLOAD;
                    if (payloadLeft == 0)
                    {
                        onFrameEnd();
                    }
                }
                break;
        }
    }

    private void onFrameEnd()
    {
        state = FIRST_BYTE;
        switch (opcode)
        {
            case OPCODE_PING:
                handler.onPing(control, controlLength);
                break;
            case OPCODE_PONG:
                break; // an unsolicited pong needs no answer (5.5.3)
            case OPCODE_CLOSE:
                onClose();
                break;
            default:
                inMessage = !fin;
                break;
        }
    }

    private void onClose()
    {
        if (controlLength == 0)
        {
            closeReceived = true;
            fail(CLOSE_NO_STATUS);
            return;
        }
        final int code = controlLength < 2 ? 0 : control.getShort(0, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        if (!validCloseCode(code))
        {
            fail(CLOSE_PROTOCOL_ERROR); // a 1-byte body or a code no endpoint may send (7.4)
            return;
        }
        try
        {
            // the reason is UTF-8 (5.5.1); decoded once per connection, on its way out
            StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(control.byteArray(), 2, controlLength - 2));
        }
        catch (final CharacterCodingException ex)
        {
            fail(CLOSE_INVALID_PAYLOAD);
            return;
        }
        closeReceived = true;
        fail(code);
    }

    private void fail(final int code)
    {
        closeCode = code;
        state = DONE;
    }

    /**
     * XORs {@code length} payload bytes with the masking key and moves them from {@code from} down to {@code to}
     * ({@code to <= from}): eight at a time, each long read before the write that could reach it.
     */
    private void unmask(final MutableDirectBuffer buffer, final int from, final int to, final int length)
    {
        final long rotated = Integer.rotateLeft(mask, maskIndex << 3) & 0xFFFF_FFFFL;
        final long mask64 = rotated << 32 | rotated;
        int i = 0;
        for (; i + Long.BYTES <= length; i += Long.BYTES)
        {
            buffer.putLong(to + i, buffer.getLong(from + i, ByteOrder.BIG_ENDIAN) ^ mask64, ByteOrder.BIG_ENDIAN);
        }
        for (; i < length; i++)
        {
            buffer.putByte(to + i, (byte)(buffer.getByte(from + i) ^ maskByte(i)));
        }
    }

    /**
     * @return the masking key's byte for the payload byte {@code i} past the current position.
     */
    private byte maskByte(final int i)
    {
        return (byte)(mask >>> ((3 - ((maskIndex + i) & 3)) << 3));
    }

    private static boolean isControl(final int opcode)
    {
        return (opcode & 0x8) != 0;
    }

    /**
     * @return whether a close frame may carry {@code code} (RFC 6455 section 7.4 and IANA's registry).
     */
    static boolean validCloseCode(final int code)
    {
        return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
    }
}
