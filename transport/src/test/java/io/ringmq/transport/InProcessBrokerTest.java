package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.AfterEach;

import java.util.ArrayList;
import java.util.List;

/**
 * A test of one in-process broker and its clients: what it opens is closed after each test, clients first, and the
 * broker must have counted no unexpected error.
 */
abstract class InProcessBrokerTest
{
    private final List<AutoCloseable> closeables = new ArrayList<>();
    Broker broker;

    /**
     * Starts this test's broker.
     *
     * @return its port.
     */
    int launch(final BrokerContext context) throws Exception
    {
        broker = Broker.launch(context);
        return broker.port();
    }

    <T extends AutoCloseable> T closeLater(final T closeable)
    {
        closeables.add(closeable);
        return closeable;
    }

    @AfterEach
    void closeBrokerAndClients() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }
}
