package io.ringmq.protocol;

import org.agrona.AbstractMutableDirectBuffer;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.UnsafeApi;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Copies a short run of bytes between Agrona buffers a word at a time, for the hot path's small copies: a PUBLISH
 * into its ring slot, an acknowledgement into a connection's staging, a topic or payload into an outgoing packet.
 *
 * <p>{@link MutableDirectBuffer#putBytes(int, DirectBuffer, int, int)} ends in {@code Unsafe.copyMemory}, which C1
 * (the only compiler below 512m: {@code bin/ringmq}) does not make an intrinsic: each copy runs the JDK's checks,
 * two native {@code Class.isArray} calls for a heap buffer and a native call for the copy itself. For a 64-byte
 * PUBLISH that was a tenth of the broker's CPU at ingest (docs/perf/2026-12-01-c1-hot-path.md). Here both ranges are
 * checked once and the bytes move in 8-byte loads and stores (C1's intrinsics), the tail in at most three more;
 * longer runs, a destination that must grow and overlapping ranges still go to {@code putBytes}, whose fixed cost
 * long runs amortise.
 */
public final class SmallCopy
{
    /** Runs up to this many bytes are copied in words here; longer ones by {@code putBytes}. */
    public static final int WORD_COPY_MAX_LENGTH = 256;

    private SmallCopy()
    {
    }

    /**
     * As {@code dst.putBytes(dstIndex, src, srcIndex, length)}: an {@link IndexOutOfBoundsException} and nothing
     * written when either range falls outside its buffer (checked here even where Agrona's own checks are turned
     * off), a destination that must grow grown by {@code putBytes}, overlapping ranges copied as by
     * {@code putBytes}.
     */
    public static void copy(
        final MutableDirectBuffer dst, final int dstIndex, final DirectBuffer src, final int srcIndex, final int length)
    {
        // through the buffers' classes: calls through their interfaces are itable dispatches under C1
        if (length <= WORD_COPY_MAX_LENGTH && src instanceof AbstractMutableDirectBuffer &&
            (dst instanceof UnsafeBuffer ||
            dst instanceof AbstractMutableDirectBuffer && (long)dstIndex + length <= dst.capacity())) // no growth
        {
            copyWords((AbstractMutableDirectBuffer)dst, dstIndex, (AbstractMutableDirectBuffer)src, srcIndex, length);
        }
        else
        {
            dst.putBytes(dstIndex, src, srcIndex, length);
        }
    }

    private static void copyWords(
        final AbstractMutableDirectBuffer dst, final int dstIndex, final AbstractMutableDirectBuffer src,
        final int srcIndex, final int length)
    {
        dst.boundsCheck(dstIndex, length);
        src.boundsCheck(srcIndex, length);
        final byte[] dstArray = dst.byteArray();
        final long dstAddress = dst.addressOffset() + dstIndex;
        final byte[] srcArray = src.byteArray();
        final long srcAddress = src.addressOffset() + srcIndex;
        if (srcArray == dstArray && srcAddress < dstAddress + length && dstAddress < srcAddress + length)
        {
            dst.putBytes(dstIndex, src, srcIndex, length); // overlapping: the word loop copies forwards only
            return;
        }
        int i = 0;
        for (final int words = length & ~7; i < words; i += 8)
        {
            UnsafeApi.putLong(dstArray, dstAddress + i, UnsafeApi.getLong(srcArray, srcAddress + i));
        }
        if ((length & 4) != 0)
        {
            UnsafeApi.putInt(dstArray, dstAddress + i, UnsafeApi.getInt(srcArray, srcAddress + i));
            i += 4;
        }
        if ((length & 2) != 0)
        {
            UnsafeApi.putShort(dstArray, dstAddress + i, UnsafeApi.getShort(srcArray, srcAddress + i));
            i += 2;
        }
        if ((length & 1) != 0)
        {
            UnsafeApi.putByte(dstArray, dstAddress + i, UnsafeApi.getByte(srcArray, srcAddress + i));
        }
    }
}
