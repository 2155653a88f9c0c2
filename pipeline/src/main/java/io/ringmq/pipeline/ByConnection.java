package io.ringmq.pipeline;

import java.util.function.Consumer;

import org.agrona.collections.Long2ObjectHashMap;

/**
 * A stage's values by connection id, remembering the last one found: a connection's packets reach a stage in runs
 * (all that one read of its socket framed, hundreds of PUBLISHes from a busy publisher), so on the PUBLISH path most
 * lookups are answered without hashing. One thread owns it, as it owns its stage.
 */
final class ByConnection<V>
{
    private final Long2ObjectHashMap<V> map = new Long2ObjectHashMap<>();
    private long lastId;
    /** The value of {@link #lastId}; null when nothing is remembered. */
    private V last;

    /**
     * @return the connection's value, null when it has none.
     */
    V get(final long connectionId)
    {
        final V value = last;
        return null != value && connectionId == lastId ? value : find(connectionId);
    }

    private V find(final long connectionId)
    {
        final V value = map.get(connectionId);
        if (null != value)
        {
            lastId = connectionId;
            last = value;
        }
        return value;
    }

    /**
     * @return the value the connection had, null when none.
     */
    V put(final long connectionId, final V value)
    {
        forgetLast(connectionId);
        return map.put(connectionId, value);
    }

    /**
     * @return the value the connection had, null when none.
     */
    V remove(final long connectionId)
    {
        forgetLast(connectionId);
        return map.remove(connectionId);
    }

    private void forgetLast(final long connectionId)
    {
        if (connectionId == lastId)
        {
            last = null;
        }
    }

    int size()
    {
        return map.size();
    }

    /**
     * Hands every value to {@code action}, which must not add or remove connections.
     */
    void forEachValue(final Consumer<? super V> action)
    {
        final Long2ObjectHashMap<V>.ValueIterator each = map.values().iterator();
        while (each.hasNext())
        {
            action.accept(each.next());
        }
    }
}
