package io.ringmq.pipeline.persistence;

import org.agrona.DirectBuffer;

/**
 * Sees one stored record during recovery; the buffers are valid only during the call.
 */
@FunctionalInterface
public interface RecordVisitor
{
    void onRecord(DirectBuffer key, int keyLength, DirectBuffer value, int valueLength);
}
