package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.charset.StandardCharsets;

/**
 * A mutable view of bytes: (buffer, offset, length). Encoders hold their variable-length fields as slices so
 * that a field can point into a decoded packet, a caller's buffer or the encoder's own scratch space without a
 * copy. A slice with a null buffer is absent.
 */
public final class Slice
{
    private DirectBuffer buffer;
    private int offset;
    private int length;

    /**
     * Points this slice at bytes owned by someone else; they must outlive its use.
     *
     * @return this.
     */
    public Slice wrap(final DirectBuffer buffer, final int offset, final int length)
    {
        this.buffer = buffer;
        this.offset = offset;
        this.length = length;
        return this;
    }

    /**
     * Points this slice at the same bytes as another slice (no copy).
     *
     * @return this.
     */
    public Slice wrap(final Slice other)
    {
        return wrap(other.buffer, other.offset, other.length);
    }

    /**
     * Points this slice at a fresh copy of a string's UTF-8 bytes (allocates: for set-up paths, not per message).
     *
     * @return this.
     */
    public Slice wrap(final String text)
    {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        return wrap(new UnsafeBuffer(bytes), 0, bytes.length);
    }

    /**
     * Points this slice at a byte array (no copy).
     *
     * @return this.
     */
    public Slice wrap(final byte[] bytes)
    {
        return wrap(new UnsafeBuffer(bytes), 0, bytes.length);
    }

    /**
     * Makes this slice absent.
     *
     * @return this.
     */
    public Slice reset()
    {
        buffer = null;
        offset = 0;
        length = 0;
        return this;
    }

    public boolean isPresent()
    {
        return null != buffer;
    }

    public DirectBuffer buffer()
    {
        return buffer;
    }

    public int offset()
    {
        return offset;
    }

    public int length()
    {
        return length;
    }

    /**
     * @return the bytes decoded as UTF-8 (allocates; for tests, logs and set-up).
     */
    public String asString()
    {
        return null == buffer ? null : buffer.getStringWithoutLengthUtf8(offset, length);
    }

    /**
     * @return a copy of the bytes (allocates).
     */
    public byte[] toByteArray()
    {
        if (null == buffer)
        {
            return null;
        }
        final byte[] bytes = new byte[length];
        buffer.getBytes(offset, bytes);
        return bytes;
    }

    public String toString()
    {
        return null == buffer ? "<absent>" : asString();
    }
}
