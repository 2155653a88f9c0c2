package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.util.Arrays;

/**
 * The payload of SUBSCRIBE (filters, each with an options byte) and of UNSUBSCRIBE (filters alone), as reusable
 * views. Storage grows to the largest packet seen and is then reused.
 */
public final class TopicFilterList
{
    private Slice[] filters = new Slice[0];
    private int[] options = new int[0];
    private int count;

    public int count()
    {
        return count;
    }

    public Slice filter(final int index)
    {
        return filters[checkIndex(index)];
    }

    /**
     * @return the raw subscription options byte (0 for UNSUBSCRIBE).
     */
    public int options(final int index)
    {
        return options[checkIndex(index)];
    }

    public TopicFilterList clear()
    {
        count = 0;
        return this;
    }

    /**
     * Adds a filter as a view of the caller's bytes.
     *
     * @return this.
     */
    public TopicFilterList add(final DirectBuffer buffer, final int offset, final int length, final int options)
    {
        ensureCapacity();
        filters[count].wrap(buffer, offset, length);
        this.options[count++] = options;
        return this;
    }

    /**
     * Adds a filter from a string (allocates; for set-up paths).
     *
     * @return this.
     */
    public TopicFilterList add(final String filter, final int options)
    {
        ensureCapacity();
        filters[count].wrap(filter);
        this.options[count++] = options;
        return this;
    }

    /**
     * Decodes filters until {@code end}, validating each [MQTT-3.8.3-1] and, with options, their reserved bits.
     *
     * @return 0, or a negative {@link DecodeError}.
     */
    int decode(final DirectBuffer buffer, final int offset, final int end, final int version, final boolean withOptions)
    {
        count = 0;
        int pos = offset;
        while (pos < end)
        {
            final int next = Fields.skipUtf8(buffer, pos, end);
            if (next < 0)
            {
                return next;
            }
            final int filterOffset = pos + 2;
            final int filterLength = next - filterOffset;
            final int valid = Topics.validateFilter(buffer, filterOffset, filterLength, version);
            if (valid < 0)
            {
                return valid;
            }
            pos = next;
            int option = 0;
            if (withOptions)
            {
                if (pos >= end)
                {
                    return DecodeError.FIELD_OVERRUNS_PACKET;
                }
                option = buffer.getByte(pos++) & 0xFF;
                final int checked = SubscriptionOptions.validate(
                    option, version, Topics.isShared(buffer, filterOffset, filterLength));
                if (checked < 0)
                {
                    return checked;
                }
            }
            add(buffer, filterOffset, filterLength, option);
        }
        return 0;
    }

    int encodedLength(final boolean withOptions)
    {
        int length = 0;
        for (int i = 0; i < count; i++)
        {
            length += 2 + filters[i].length() + (withOptions ? 1 : 0);
        }
        return length;
    }

    int encode(final MutableDirectBuffer buffer, final int offset, final boolean withOptions)
    {
        int pos = offset;
        for (int i = 0; i < count; i++)
        {
            pos = Fields.putSlice(buffer, pos, filters[i]);
            if (withOptions)
            {
                buffer.putByte(pos++, (byte)options[i]);
            }
        }
        return pos;
    }

    private void ensureCapacity()
    {
        if (count == filters.length)
        {
            final int capacity = Math.max(4, count * 2);
            filters = Arrays.copyOf(filters, capacity);
            options = Arrays.copyOf(options, capacity);
            for (int i = count; i < capacity; i++)
            {
                filters[i] = new Slice();
            }
        }
    }

    private int checkIndex(final int index)
    {
        if (index < 0 || index >= count)
        {
            throw new IndexOutOfBoundsException("index " + index + " of " + count);
        }
        return index;
    }
}
