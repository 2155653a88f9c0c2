package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SessionWindows;
import org.agrona.concurrent.UnsafeBuffer;

import java.lang.reflect.Field;

/**
 * What the unit tests of {@link AwayRoom} build on: a pool with no bound, the windows' registry, copies of a given size,
 * and a look at private fields.
 */
final class AwayCopies
{
    final SharedMessage.Pool pool = new SharedMessage.Pool(0, 0, Long.MAX_VALUE);
    final SessionWindows windows = new SessionWindows(4096);

    /**
     * @return a copy with a one-byte topic and {@code payloadLength} bytes of payload, with no reference yet.
     */
    SharedMessage copy(final int payloadLength)
    {
        final UnsafeBuffer bytes = new UnsafeBuffer(new byte[payloadLength + 1]);
        return pool.copy(bytes, 0, 1, bytes, 0, 0, bytes, 1, payloadLength, Message.NEVER, 1);
    }

    static Object field(final Object o, final String name) throws ReflectiveOperationException
    {
        final Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }

    static void setField(final Object o, final String name, final Object value) throws ReflectiveOperationException
    {
        final Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        f.set(o, value);
    }
}
