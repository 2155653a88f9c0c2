package io.ringmq.transport;

import io.netty.buffer.PooledByteBufAllocator;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A client that publishes at QoS 1 and never reads its PUBACKs: what it is owed stays bounded, because past the
 * outbound high-water mark the broker stops reading it until it drains, so its own writes stall.
 */
class UnreadAcksTest
{
    @Test
    @Timeout(60)
    @DisplayName("a publisher that never reads its acknowledgements is not read from past the high-water mark")
    void unreadAcknowledgementsStayBounded() throws Exception
    {
        final int highWater = 64 * 1024;
        try (Broker broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .outboundHighWaterBytes(highWater));
            SocketChannel client = SocketChannel.open())
        {
            client.setOption(StandardSocketOptions.SO_RCVBUF, 4096);
            client.connect(new InetSocketAddress("127.0.0.1", broker.port()));
            client.write(ByteBuffer.wrap(RawClient.connect("deaf", true, 0)));
            final ByteBuffer connack = ByteBuffer.allocate(4);
            while (connack.hasRemaining())
            {
                client.read(connack); // the one read it does
            }
            client.configureBlocking(false);
            final long usedBefore = used();
            final byte[] payload = "x".getBytes(StandardCharsets.UTF_8);
            final int total = 2_000_000;
            int sent = 0;
            ByteBuffer pending = null;
            long stalledSince = 0;
            final long deadline = System.nanoTime() + 30_000_000_000L;
            while (sent < total && System.nanoTime() < deadline)
            {
                if (null == pending)
                {
                    pending = ByteBuffer.wrap(RawClient.publish("t", payload, 1, (sent % 65_535) + 1));
                }
                client.write(pending);
                if (pending.hasRemaining())
                {
                    stalledSince = 0 == stalledSince ? System.nanoTime() : stalledSince;
                    if (System.nanoTime() - stalledSince > 2_000_000_000L &&
                        broker.counters().get(BrokerCounters.SOCKET_WRITE_BLOCKED) > 0)
                    {
                        break; // the broker stopped reading us, its writes to us blocked: that is the point
                    }
                    Thread.onSpinWait();
                    continue;
                }
                stalledSince = 0;
                pending = null;
                sent++;
            }
            assertThat(sent).as("the broker stopped reading a client that does not read").isLessThan(total);
            assertThat(broker.counters().get(BrokerCounters.SOCKET_WRITE_BLOCKED)).isPositive();
            assertThat(used() - usedBefore).as("bytes the broker holds for it")
                .isLessThan(8L * 1024 * 1024);
            assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
        }
    }

    private static long used()
    {
        return PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory() +
            PooledByteBufAllocator.DEFAULT.metric().usedHeapMemory();
    }
}
