package io.ringmq.pipeline.persistence;

import org.agrona.ExpandableDirectByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * What the persistence stage writes for messages it stored for a session, for the tests of what delivery writes
 * after them.
 */
public final class StoredMessages
{
    private StoredMessages()
    {
    }

    /**
     * Writes a QUEUED record (a one-byte value) for each message number of the session.
     */
    public static void queued(final DurableStore store, final long sessionKey, final long... numbers)
    {
        final StoreWriter writer = store.writer(true);
        final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(Records.MESSAGE_KEY_LENGTH);
        final UnsafeBuffer value = new UnsafeBuffer(new byte[1]);
        for (final long number : numbers)
        {
            writer.put(key, 0, Records.messageKey(key, sessionKey, Records.QUEUED, number), value, 0, 1);
        }
        writer.commit();
    }
}
