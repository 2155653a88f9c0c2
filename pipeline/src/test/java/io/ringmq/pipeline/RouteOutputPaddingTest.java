package io.ringmq.pipeline;

import org.agrona.collections.IntArrayList;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A message in the routing output is padded to 4 bytes, and the padding is copied with it: the buffer it is
 * gathered in must hold the padding too, whatever capacity its growth stopped at. Found by the whole-connection
 * fuzz target (ConnectionFuzzTest): a retained message delivered on SUBSCRIBE threw IndexOutOfBoundsException out
 * of the routing stage, counted as an unexpected error.
 */
class RouteOutputPaddingTest
{
    @Test
    @DisplayName("fuzz finding: a retained message ending 1..3 bytes short of its buffer's odd capacity is written "
        + "whole, padding included")
    void retainedMessageEndingInsideThePaddingIsWritten()
    {
        // 24-byte header + 1-byte topic + 4,348-byte payload = 4,373 bytes, padded to 4,376; the gathering buffer
        // grows 256 -> 384 -> ... -> 2,916 -> 4,374, so the padding ends 2 bytes past its capacity
        final byte[] payload = new byte[4_373 - RouteOutput.MESSAGE_HEADER_LENGTH - 1];
        payload[payload.length - 1] = 42;
        final RouteOutput.Writer writer = new RouteOutput.Writer();
        writer.reset();
        assertThat(writer.addRetained(new Message(new byte[]{'t'}, payload, 1, true), 1, 1 << 20)).isTrue();
        final int length = writer.length(0);
        final UnsafeBuffer out = new UnsafeBuffer(new byte[length + 64]);
        final IngressEvent event = new IngressEvent(256);

        writer.write(out, 0, new IntArrayList(), 0, event);

        assertThat(event.retainedCount).isEqualTo(1);
        assertThat(out.getByte(event.retainedOffset + RouteOutput.MESSAGE_HEADER_LENGTH + 1 + payload.length - 1))
            .as("the payload's last byte").isEqualTo((byte)42);
    }
}
