package io.ringmq.protocol;

import org.agrona.MutableDirectBuffer;

/**
 * An encoder of a whole packet, sized before it is written (size-then-write): what a writer needs to take any packet
 * into its buffer without knowing which it is.
 */
public interface PacketEncoder
{
    /**
     * @return the packet's length, fixed header included, as {@link #encode} writes it.
     */
    int encodedLength();

    /**
     * @return bytes written.
     */
    int encode(MutableDirectBuffer buffer, int offset);
}
