package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.ExpandableDirectByteBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link SmallCopy} against {@code putBytes}: the same bytes for every length either side of the word loop's limit,
 * at every alignment, from heap, off-heap and expandable buffers; nothing written outside the range; the same bounds errors.
 */
class SmallCopyTest
{
    private static final int CAPACITY = SmallCopy.WORD_COPY_MAX_LENGTH + 64;

    private static final List<IntFunction<UnsafeBuffer>> DESTINATIONS = List.of(
        capacity -> new UnsafeBuffer(new byte[capacity]),
        capacity -> new UnsafeBuffer(ByteBuffer.allocateDirect(capacity)),
        capacity -> new UnsafeBuffer(new byte[capacity + 7], 3, capacity)); // an array view at an odd offset
    private static final List<IntFunction<MutableDirectBuffer>> SOURCES = List.of(
        capacity -> new UnsafeBuffer(new byte[capacity]),
        capacity -> new UnsafeBuffer(ByteBuffer.allocateDirect(capacity)),
        capacity -> new UnsafeBuffer(new byte[capacity + 7], 3, capacity),
        ExpandableArrayBuffer::new,
        ExpandableDirectByteBuffer::new);

    @Test
    @DisplayName("every length up to past the word limit, every alignment, heap, off-heap, expandable: the bytes putBytes writes")
    void sameBytesAsPutBytes()
    {
        final Random random = new Random(7);
        for (final IntFunction<MutableDirectBuffer> srcKind : SOURCES)
        {
            for (final IntFunction<UnsafeBuffer> dstKind : DESTINATIONS)
            {
                final MutableDirectBuffer src = srcKind.apply(CAPACITY);
                for (int i = 0; i < CAPACITY; i++)
                {
                    src.putByte(i, (byte)random.nextInt());
                }
                final UnsafeBuffer dst = dstKind.apply(CAPACITY);
                final UnsafeBuffer expected = new UnsafeBuffer(new byte[CAPACITY]);
                for (int length = 0; length <= SmallCopy.WORD_COPY_MAX_LENGTH + 9; length++)
                {
                    final int srcIndex = length % 9;
                    final int dstIndex = (length * 7) % (CAPACITY - length + 1);
                    dst.setMemory(0, CAPACITY, (byte)0x5A);
                    expected.setMemory(0, CAPACITY, (byte)0x5A);
                    SmallCopy.copy(dst, dstIndex, src, srcIndex, length);
                    expected.putBytes(dstIndex, src, srcIndex, length);
                    assertThat(bytes(dst)).as("length %d at %d from %d", length, dstIndex, srcIndex)
                        .isEqualTo(bytes(expected));
                }
            }
        }
    }

    @Test
    @DisplayName("a range past either buffer's end, or negative, fails as putBytes does and writes nothing")
    void boundsChecked()
    {
        final UnsafeBuffer src = new UnsafeBuffer(new byte[64]);
        src.setMemory(0, 64, (byte)1);
        final UnsafeBuffer dst = new UnsafeBuffer(ByteBuffer.allocateDirect(64));
        final int[][] cases = {
            {60, 0, 8},          // destination ends past its capacity
            {0, 60, 8},          // source ends past its capacity
            {-1, 0, 8},          // negative destination index
            {0, -8, 8},          // negative source index
            {0, 0, -1},          // negative length
            {Integer.MAX_VALUE - 3, 0, 8}, // an index whose end overflows
            {0, 0, 65}};         // longer than both
        for (final int[] c : cases)
        {
            assertThatThrownBy(() -> SmallCopy.copy(dst, c[0], src, c[1], c[2]))
                .as("dst %d src %d length %d", c[0], c[1], c[2])
                .isInstanceOf(IndexOutOfBoundsException.class);
            assertThat(bytes(dst)).as("nothing written").containsOnly(0);
        }
        // past the word limit, putBytes' own check
        final UnsafeBuffer large = new UnsafeBuffer(new byte[SmallCopy.WORD_COPY_MAX_LENGTH * 2]);
        assertThatThrownBy(() -> SmallCopy.copy(dst, 0, large, 0, large.capacity()))
            .isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    @DisplayName("overlapping ranges of one buffer, either way round, as putBytes copies them")
    void overlappingAsPutBytes()
    {
        for (final IntFunction<UnsafeBuffer> kind : DESTINATIONS)
        {
            for (final int shift : new int[]{-9, -8, -1, 1, 3, 8, 17})
            {
                final UnsafeBuffer buffer = kind.apply(CAPACITY);
                final UnsafeBuffer expected = new UnsafeBuffer(new byte[CAPACITY]);
                for (int i = 0; i < CAPACITY; i++)
                {
                    buffer.putByte(i, (byte)i);
                    expected.putByte(i, (byte)i);
                }
                final int from = 20;
                final int length = 100;
                SmallCopy.copy(buffer, from + shift, buffer, from, length);
                expected.putBytes(from + shift, expected, from, length);
                assertThat(bytes(buffer)).as("shift %d", shift).isEqualTo(bytes(expected));
            }
        }
    }

    @Test
    @DisplayName("an ExpandableArrayBuffer destination: copied into where it fits, grown as putBytes grows it where not")
    void expandableDestination()
    {
        final UnsafeBuffer src = new UnsafeBuffer(new byte[40]);
        for (int i = 0; i < 40; i++)
        {
            src.putByte(i, (byte)(i + 1));
        }
        final MutableDirectBuffer fits = new ExpandableArrayBuffer(64);
        SmallCopy.copy(fits, 24, src, 0, 40);
        assertThat(fits.capacity()).isEqualTo(64);
        for (int i = 0; i < 40; i++)
        {
            assertThat(fits.getByte(24 + i)).isEqualTo((byte)(i + 1));
        }
        assertThatThrownBy(() -> SmallCopy.copy(fits, -1, src, 0, 8)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    @DisplayName("a destination that grows (ExpandableArrayBuffer) grows as putBytes would grow it")
    void expandableDestinationGrows()
    {
        final UnsafeBuffer src = new UnsafeBuffer(new byte[40]);
        for (int i = 0; i < 40; i++)
        {
            src.putByte(i, (byte)i);
        }
        final MutableDirectBuffer dst = new ExpandableArrayBuffer(8);
        SmallCopy.copy(dst, 30, src, 0, 40);
        assertThat(dst.capacity()).isGreaterThanOrEqualTo(70);
        for (int i = 0; i < 40; i++)
        {
            assertThat(dst.getByte(30 + i)).isEqualTo((byte)i);
        }
    }

    private static byte[] bytes(final DirectBuffer buffer)
    {
        final byte[] bytes = new byte[buffer.capacity()];
        buffer.getBytes(0, bytes);
        return bytes;
    }
}
