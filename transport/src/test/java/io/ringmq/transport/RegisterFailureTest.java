package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.net.ssl.SSLContext;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An accepted socket whose connection cannot be made (its layers throw: here a TLS engine the JDK refuses, as an
 * engine set up with a protocol it does not know is refused) leaves nothing behind: the socket is closed, its
 * connection count and its listener's are given back, and the error goes on to the agent's error log at the end of
 * the duty cycle, whose other work is done. Before, only an {@link java.io.IOException} was cleaned up: each such
 * socket stayed open and held a count for good, and once {@code --max-connections} of them had piled up every client
 * was refused.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RegisterFailureTest
{
    private static final int MAX_CONNECTIONS = 2;
    private static final long STEP_LIMIT_NS = 10_000_000_000L;

    @Test
    void aSocketWhoseLayersCannotBeMadeIsClosedAndHoldsNoCount() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext().limits(l -> l.maxConnections(MAX_CONNECTIONS))))
        {
            edge.listener.layers.tls(refusedEngines());
            final List<RuntimeException> errors = new ArrayList<>();
            for (int i = 1; i <= MAX_CONNECTIONS * 3; i++)
            {
                final RawClient client = edge.client();
                final int expected = i;
                stepThroughErrors(edge, errors, () -> errors.size() >= expected);
                assertThat(errors.get(i - 1)).as("the engine's refusal, passed on to the error log")
                    .isInstanceOf(IllegalArgumentException.class);
                assertThat(client.readPacketOrClosed(5_000)).as("socket %d closed by the broker", i).isEqualTo(-1);
                assertThat(edge.connectionCount.get()).as("connections counted after socket %d", i).isZero();
                assertThat(edge.listener.connectionCount.get()).as("its listener's count").isZero();
            }

            edge.listener.layers.tls(null); // the listener as it was: more than --max-connections failed, none counts
            final RawClient client = edge.client();
            edge.connect3(client, "after-the-failures");
            assertThat(edge.connectionCount.get()).as("the one connected").isEqualTo(1);
        }
    }

    @Test
    void aFailedRegistrationCostsTheOtherConnectionsNothingOfTheCycle() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final RawClient connected = edge.client();
            final long connectionId = edge.connect3(connected, "stays");
            edge.listener.layers.tls(refusedEngines());
            final List<RuntimeException> errors = new ArrayList<>();
            final long accepted = edge.counters.get(BrokerCounters.CONNECTIONS_ACCEPTED);
            edge.client();
            // accepted in one cycle (its select), registered in the next
            stepThroughErrors(edge, errors, () -> edge.counters.get(BrokerCounters.CONNECTIONS_ACCEPTED) > accepted);
            assertThat(errors).as("nothing registered in the cycle that accepted it").isEmpty();

            edge.send(connectionId, new byte[]{(byte)0xD0, 0x00}); // a PINGRESP for the connected client
            try
            {
                edge.agent.doWork();
            }
            catch (final RuntimeException ex)
            {
                errors.add(ex);
            }
            assertThat(errors).as("the failure, thrown at the end of the cycle that registered it").hasSize(1);
            assertThat(edge.connectionCount.get()).as("only the connected client counts").isEqualTo(1);
            assertThat(connected.readPacket(5_000)).as("written in that same cycle, no step since")
                .isEqualTo(PacketType.PINGRESP);
        }
    }

    @Test
    void aSocketAcceptedButNotRegisteredAtTheAgentsCloseIsClosedAndHoldsNoCount() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final RawClient client = edge.client();
            final List<RuntimeException> errors = new ArrayList<>();
            stepThroughErrors(edge, errors, () -> edge.counters.get(BrokerCounters.CONNECTIONS_ACCEPTED) > 0);
            assertThat(edge.connectionCount.get()).as("counted at its accept").isEqualTo(1);

            edge.agent.onClose(); // a stop between its accept and the next cycle
            assertThat(edge.connectionCount.get()).isZero();
            assertThat(edge.listener.connectionCount.get()).isZero();
            assertThat(client.readPacketOrClosed(5_000)).as("closed").isEqualTo(-1);
            assertThat(errors).isEmpty();
        }
    }

    /**
     * @return a TLS context whose engines the JDK refuses (a protocol it does not know).
     */
    private static TlsContext refusedEngines() throws Exception
    {
        return new TlsContext(SSLContext.getDefault(), new String[]{"TLSv0.9"}, null, TlsContext.CLIENT_AUTH_NONE,
            TlsContext.IDENTITY_NONE);
    }

    /**
     * Steps the agent until the condition holds, keeping what its duty cycles throw (an agent runner would log them
     * and run the next cycle).
     */
    private static void stepThroughErrors(final SteppedEdge edge, final List<RuntimeException> errors,
        final BooleanSupplier until) throws Exception
    {
        final long deadline = System.nanoTime() + STEP_LIMIT_NS;
        while (!until.getAsBoolean() && System.nanoTime() < deadline)
        {
            try
            {
                edge.agent.doWork();
            }
            catch (final RuntimeException ex)
            {
                errors.add(ex);
            }
        }
        assertThat(until.getAsBoolean()).as("stepped until the condition held").isTrue();
    }
}
