package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Review: a remote that does not answer the TCP handshake (here: a listener whose accept queue is full, so the
 * kernel drops the SYNs, as a firewalled host does). Bridge.dial blocks in Socket.connect for CONNECT_TIMEOUT_MS
 * (10 s); Bridge.close() cannot reach that socket (closeLinks only closes links, Thread.interrupt does not end a
 * blocking connect), so Broker.close() waits up to 10 s per such bridge, one bridge after the other.
 */
@Timeout(60)
class BridgeCloseWhileDialingReviewTest extends BridgeReviewBase
{

    @Test
    void brokerClosesPromptlyWhileItsBridgeDialsAnUnansweringRemote() throws Exception
    {
        final ServerSocket full = new ServerSocket();
        closeables.add(full);
        full.bind(new InetSocketAddress("127.0.0.1", 0), 1);
        for (int i = 0; i < 2; i++)
        {
            final Socket filler = new Socket();
            closeables.add(filler);
            filler.connect(full.getLocalSocketAddress(), 1_000);
        }
        boolean dropped = false;
        try (Socket probe = new Socket())
        {
            probe.connect(full.getLocalSocketAddress(), 300);
        }
        catch (final SocketTimeoutException ex)
        {
            dropped = true;
        }
        assumeThat(dropped).as("the kernel drops SYNs to a full accept queue").isTrue();

        final Broker a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
            "connection b1", "address 127.0.0.1:" + full.getLocalPort(), "topic x out 0", "try_private false",
            "connection b2", "address 127.0.0.1:" + full.getLocalPort(), "topic y out 0", "try_private false");
        BridgeReviewSupport.await("both bridges dialing", 10, () ->
            BridgeReviewSupport.threadIn("ringmq-bridge-b1", "dial") &&
            BridgeReviewSupport.threadIn("ringmq-bridge-b2", "dial"));

        final long tookMs = BridgeReviewSupport.timed(30_000, a::close);
        assertThat(tookMs).as("Broker.close() with two bridges dialing an unanswering remote (ms; -1: > 30 s)")
            .isBetween(0L, 3_000L);
    }
}
