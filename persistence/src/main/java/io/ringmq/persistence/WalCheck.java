package io.ringmq.persistence;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * Reads a RocksDB write-ahead log's framing to tell the recovery report what RocksDB's own recovery will drop:
 * RocksDB tolerates a torn tail silently. The log is a sequence of 32 KiB blocks of records:
 *
 * <pre>
 *   0       4        6      7 (11 for recyclable types: + 4 bytes log number)
 *   +-------+--------+------+--------------------+
 *   | crc32c| length | type | payload (length)   |
 *   +-------+--------+------+--------------------+
 *   crc: masked CRC32C of type byte and payload, little-endian; a block tail under 7 bytes is zero padding
 * </pre>
 *
 * Only framing and checksums are checked, not the write batches inside.
 */
final class WalCheck
{
    static final int BLOCK_LENGTH = 32 * 1024;
    static final int HEADER_LENGTH = 7;
    static final int RECYCLABLE_HEADER_LENGTH = 11;
    private static final int MASK_DELTA = 0xa282ead8;

    /**
     * What a check found.
     *
     * @param fileLength    bytes in the file.
     * @param goodLength    bytes up to the end of the last record that checks out.
     * @param recordCount   records that check out.
     * @param problem       null when the whole file checks out, else what is wrong at {@code goodLength}.
     */
    record Result(long fileLength, long goodLength, long recordCount, String problem)
    {
        boolean isClean()
        {
            return problem == null;
        }
    }

    private WalCheck()
    {
    }

    static Result check(final Path log) throws IOException
    {
        try (FileChannel channel = FileChannel.open(log, StandardOpenOption.READ))
        {
            final long fileLength = channel.size();
            final ByteBuffer block = ByteBuffer.allocate(BLOCK_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            final CRC32C crc = new CRC32C();
            long blockStart = 0;
            long goodLength = 0;
            long recordCount = 0;
            while (blockStart < fileLength)
            {
                block.clear();
                while (block.hasRemaining() && channel.read(block, blockStart + block.position()) > 0)
                {
                    // fill the block, or to the end of the file
                }
                final int blockLength = block.position();
                int offset = 0;
                while (offset + HEADER_LENGTH <= blockLength)
                {
                    final int length = block.getShort(offset + 4) & 0xFFFF;
                    final int type = block.get(offset + 6) & 0xFF;
                    if (type == 0 && length == 0)
                    {
                        if (allZero(block, offset, blockLength))
                        {
                            break; // preallocated or padded: nothing more in this block
                        }
                        return new Result(fileLength, goodLength, recordCount,
                            "zero-type record followed by data at byte " + (blockStart + offset));
                    }
                    final int headerLength = isRecyclable(type) ? RECYCLABLE_HEADER_LENGTH : HEADER_LENGTH;
                    if (offset + headerLength + length > blockLength)
                    {
                        return new Result(fileLength, goodLength, recordCount,
                            "record at byte " + (blockStart + offset) + " claims " + length + " bytes, " +
                            Math.max(0, blockLength - offset - headerLength) + " there");
                    }
                    if (headerLength == HEADER_LENGTH)
                    {
                        crc.reset();
                        crc.update(block.array(), offset + 6, 1 + length);
                        final int expected = unmask(block.getInt(offset));
                        if ((int)crc.getValue() != expected)
                        {
                            return new Result(fileLength, goodLength, recordCount,
                                "checksum mismatch in record at byte " + (blockStart + offset));
                        }
                    }
                    offset += headerLength + length;
                    goodLength = blockStart + offset;
                    recordCount++;
                }
                if (blockLength < BLOCK_LENGTH && offset < blockLength && !allZero(block, offset, blockLength))
                {
                    return new Result(fileLength, goodLength, recordCount,
                        "torn record header at byte " + (blockStart + offset));
                }
                blockStart += BLOCK_LENGTH;
            }
            return new Result(fileLength, goodLength, recordCount, null);
        }
    }

    private static boolean isRecyclable(final int type)
    {
        return (type >= 5 && type <= 8) || type == 11 || type == 131;
    }

    private static boolean allZero(final ByteBuffer block, final int from, final int to)
    {
        for (int i = from; i < to; i++)
        {
            if (block.get(i) != 0)
            {
                return false;
            }
        }
        return true;
    }

    private static int unmask(final int masked)
    {
        final int rot = masked - MASK_DELTA;
        return (rot >>> 17) | (rot << 15);
    }
}
