package io.ringmq.pipeline.status;

import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;

/**
 * The layout of a broker's counters file (as Aeron's {@code CncFileDescriptor} lays out its CnC file): a header,
 * then the counters' metadata and values for Agrona's {@link org.agrona.concurrent.status.CountersManager}, then
 * a {@link org.agrona.concurrent.errors.DistinctErrorLog}. Every region starts on a cache line and the values
 * region gives each counter a record of its own ({@link CountersReader#COUNTER_LENGTH} bytes), so no two
 * counters share a cache line.
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |                  Version (0 until the header is complete)     |  0
 *  +---------------------------------------------------------------+
 *  |                  Header Length                                |  4
 *  +---------------------------------------------------------------+
 *  |                  PID of the broker process                    |  8
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                  Start Time (epoch ms)                        | 16
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                  Metadata Offset                              | 24
 *  +---------------------------------------------------------------+
 *  |                  Metadata Length                              | 28
 *  +---------------------------------------------------------------+
 *  |                  Values Offset                                | 32
 *  +---------------------------------------------------------------+
 *  |                  Values Length                                | 36
 *  +---------------------------------------------------------------+
 *  |                  Error Log Offset                             | 40
 *  +---------------------------------------------------------------+
 *  |                  Error Log Length                             | 44
 *  +---------------------------------------------------------------+
 *  |                  Reserved up to Header Length                ...  48
 *  +---------------------------------------------------------------+
 *  |                  Counters Metadata                           ...  Metadata Offset
 *  +---------------------------------------------------------------+
 *  |                  Counters Values                             ...  Values Offset
 *  +---------------------------------------------------------------+
 *  |                  Distinct Error Log                          ...  Error Log Offset
 *  +---------------------------------------------------------------+
 * </pre>
 * All fields are in the platform's byte order. The writer fills the header and writes the version last, with
 * release semantics; a reader that sees version 0 is looking at a file still being laid out.
 */
public final class CountersFileDescriptor
{
    /** The layout version this code writes and reads. */
    public static final int VERSION = 1;

    public static final int VERSION_OFFSET = 0;
    public static final int HEADER_LENGTH_OFFSET = 4;
    public static final int PID_OFFSET = 8;
    public static final int START_TIMESTAMP_OFFSET = 16;
    public static final int METADATA_OFFSET_OFFSET = 24;
    public static final int METADATA_LENGTH_OFFSET = 28;
    public static final int VALUES_OFFSET_OFFSET = 32;
    public static final int VALUES_LENGTH_OFFSET = 36;
    public static final int ERROR_LOG_OFFSET_OFFSET = 40;
    public static final int ERROR_LOG_LENGTH_OFFSET = 44;

    /** The header's length: two cache lines, so the regions after it start aligned. */
    public static final int HEADER_LENGTH = 2 * BitUtil.CACHE_LINE_LENGTH;

    /** Counters a broker's file has room for. */
    public static final int MAX_COUNTERS = 256;
    public static final int VALUES_LENGTH = MAX_COUNTERS * CountersReader.COUNTER_LENGTH;
    public static final int METADATA_LENGTH = MAX_COUNTERS * CountersReader.METADATA_LENGTH;
    /** Room for the distinct errors' stack traces. */
    public static final int ERROR_LOG_LENGTH = 1024 * 1024;

    public static final String FILE_PREFIX = "ringmq-";
    public static final String FILE_SUFFIX = ".counters";

    private CountersFileDescriptor()
    {
    }

    /**
     * @return the length of a whole file with the default regions.
     */
    public static int fileLength()
    {
        return HEADER_LENGTH + METADATA_LENGTH + VALUES_LENGTH + ERROR_LOG_LENGTH;
    }

    /**
     * Lays out the header of a new file, the version last.
     */
    public static void fillHeader(final AtomicBuffer file, final long pid, final long startTimestampMs)
    {
        file.putInt(HEADER_LENGTH_OFFSET, HEADER_LENGTH);
        file.putLong(PID_OFFSET, pid);
        file.putLong(START_TIMESTAMP_OFFSET, startTimestampMs);
        file.putInt(METADATA_OFFSET_OFFSET, HEADER_LENGTH);
        file.putInt(METADATA_LENGTH_OFFSET, METADATA_LENGTH);
        file.putInt(VALUES_OFFSET_OFFSET, HEADER_LENGTH + METADATA_LENGTH);
        file.putInt(VALUES_LENGTH_OFFSET, VALUES_LENGTH);
        file.putInt(ERROR_LOG_OFFSET_OFFSET, HEADER_LENGTH + METADATA_LENGTH + VALUES_LENGTH);
        file.putInt(ERROR_LOG_LENGTH_OFFSET, ERROR_LOG_LENGTH);
        // the version last: a reader that sees it sees every field above
        file.putIntRelease(VERSION_OFFSET, VERSION);
    }

    public static int version(final AtomicBuffer file)
    {
        return file.getIntVolatile(VERSION_OFFSET);
    }

    public static long pid(final DirectBuffer file)
    {
        return file.getLong(PID_OFFSET);
    }

    public static long startTimestampMs(final DirectBuffer file)
    {
        return file.getLong(START_TIMESTAMP_OFFSET);
    }

    /**
     * @return a view of the counters' metadata region.
     */
    public static AtomicBuffer metaDataBuffer(final AtomicBuffer file)
    {
        return region(file, file.getInt(METADATA_OFFSET_OFFSET), file.getInt(METADATA_LENGTH_OFFSET));
    }

    /**
     * @return a view of the counters' values region.
     */
    public static AtomicBuffer valuesBuffer(final AtomicBuffer file)
    {
        return region(file, file.getInt(VALUES_OFFSET_OFFSET), file.getInt(VALUES_LENGTH_OFFSET));
    }

    /**
     * @return a view of the distinct error log region.
     */
    public static AtomicBuffer errorLogBuffer(final AtomicBuffer file)
    {
        return region(file, file.getInt(ERROR_LOG_OFFSET_OFFSET), file.getInt(ERROR_LOG_LENGTH_OFFSET));
    }

    private static AtomicBuffer region(final AtomicBuffer file, final int offset, final int length)
    {
        if (offset < HEADER_LENGTH || length <= 0 || (long)offset + length > file.capacity())
        {
            throw new IllegalStateException("counters file region out of bounds: offset=" + offset + " length=" +
                length + " file=" + file.capacity());
        }
        return new UnsafeBuffer(file, offset, length);
    }
}
