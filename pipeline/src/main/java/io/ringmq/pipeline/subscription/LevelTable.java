package io.ringmq.pipeline.subscription;

import org.agrona.DirectBuffer;

import java.util.Arrays;
import java.util.function.Consumer;

/**
 * An open-addressing hash map from one topic level (bytes) to a child node, looked up by a (buffer, offset,
 * length) view so that matching a topic allocates nothing. Only inserts allocate (a copy of the key).
 *
 * @param <N> the node type.
 */
public final class LevelTable<N>
{
    private byte[][] keys = new byte[4][];
    private Object[] values = new Object[4];
    private int size;

    /**
     * @return the node under this level, or null.
     */
    @SuppressWarnings("unchecked")
    public N get(final DirectBuffer buffer, final int offset, final int length)
    {
        final int mask = keys.length - 1;
        int i = hash(buffer, offset, length) & mask;
        while (null != keys[i])
        {
            if (equals(keys[i], buffer, offset, length))
            {
                return (N)values[i];
            }
            i = (i + 1) & mask;
        }
        return null;
    }

    /**
     * @return the node under this level, or null.
     */
    @SuppressWarnings("unchecked")
    public N get(final byte[] level)
    {
        final int mask = keys.length - 1;
        int i = hash(level) & mask;
        while (null != keys[i])
        {
            if (Arrays.equals(keys[i], level))
            {
                return (N)values[i];
            }
            i = (i + 1) & mask;
        }
        return null;
    }

    /**
     * Adds a node under a level that is not present yet.
     */
    public void put(final byte[] level, final N node)
    {
        if ((size + 1) * 4 > keys.length * 3)
        {
            resize(keys.length * 2);
        }
        insert(level, node);
        size++;
    }

    /**
     * Removes the node under a level, if present.
     */
    public void remove(final byte[] level)
    {
        final int mask = keys.length - 1;
        int i = hash(level) & mask;
        while (null != keys[i])
        {
            if (Arrays.equals(keys[i], level))
            {
                keys[i] = null;
                values[i] = null;
                size--;
                // re-insert the rest of the probe run so that lookups still find them
                i = (i + 1) & mask;
                while (null != keys[i])
                {
                    final byte[] key = keys[i];
                    final Object value = values[i];
                    keys[i] = null;
                    values[i] = null;
                    insert(key, value);
                    i = (i + 1) & mask;
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }

    public int size()
    {
        return size;
    }

    public boolean isEmpty()
    {
        return size == 0;
    }

    /**
     * Visits every child node.
     */
    @SuppressWarnings("unchecked")
    public void forEach(final Consumer<N> visitor)
    {
        for (int i = 0; i < keys.length; i++)
        {
            if (null != keys[i])
            {
                visitor.accept((N)values[i]);
            }
        }
    }

    /**
     * @return the child at raw slot {@code i} (may be null), for allocation-free iteration with
     * {@link #capacity()}.
     */
    @SuppressWarnings("unchecked")
    public N at(final int i)
    {
        return (N)values[i];
    }

    public int capacity()
    {
        return keys.length;
    }

    private void insert(final byte[] key, final Object value)
    {
        final int mask = keys.length - 1;
        int i = hash(key) & mask;
        while (null != keys[i])
        {
            i = (i + 1) & mask;
        }
        keys[i] = key;
        values[i] = value;
    }

    private void resize(final int capacity)
    {
        final byte[][] oldKeys = keys;
        final Object[] oldValues = values;
        keys = new byte[capacity][];
        values = new Object[capacity];
        for (int i = 0; i < oldKeys.length; i++)
        {
            if (null != oldKeys[i])
            {
                insert(oldKeys[i], oldValues[i]);
            }
        }
    }

    private static int hash(final DirectBuffer buffer, final int offset, final int length)
    {
        int h = 1;
        for (int i = 0; i < length; i++)
        {
            h = 31 * h + buffer.getByte(offset + i);
        }
        return mix(h);
    }

    private static int hash(final byte[] key)
    {
        int h = 1;
        for (final byte b : key)
        {
            h = 31 * h + b;
        }
        return mix(h);
    }

    private static int mix(final int h)
    {
        final int x = h * 0x9E3779B9;
        return x ^ (x >>> 16);
    }

    private static boolean equals(final byte[] key, final DirectBuffer buffer, final int offset, final int length)
    {
        if (key.length != length)
        {
            return false;
        }
        for (int i = 0; i < length; i++)
        {
            if (key[i] != buffer.getByte(offset + i))
            {
                return false;
            }
        }
        return true;
    }
}
