package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code invoker} threading mode: the broker runs no thread of its own; the test steps every agent (the I/O
 * agent, then auth, routing, the delivery shard and release) with {@link Broker#invoke()} and sees each step's
 * effect, as Aeron's tests step the media driver's agents.
 */
class InvokerThreadingTest
{
    @Test
    @Timeout(30)
    @DisplayName("stepped by the test: CONNECT, SUBSCRIBE and PUBLISH go through every agent on the test's thread")
    void stepsEveryAgent() throws Exception
    {
        try (Broker broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(BrokerContext.Threading.INVOKER)).observability(o -> o.sysIntervalMs(0)));
            Socket subscriber = new Socket("127.0.0.1", broker.port());
            Socket publisher = new Socket("127.0.0.1", broker.port()))
        {
            int work = 0;
            for (int i = 0; i < 100 && work < 2; i++)
            {
                work += broker.invoke(); // accepting and registering the two connections is work
            }
            assertThat(work).isGreaterThanOrEqualTo(2);
            int idle = 0;
            for (int i = 0; i < 100 && idle < 3; i++)
            {
                idle = broker.invoke() == 0 ? idle + 1 : 0;
            }
            assertThat(idle).as("with nothing sent, stepping finds no work").isEqualTo(3);

            send(subscriber, RawClient.connect("sub", true, 60));
            assertThat(readType(broker, subscriber)).isEqualTo(PacketType.CONNACK);
            send(subscriber, RawClient.subscribe(1, "t/#", 0));
            assertThat(readType(broker, subscriber)).isEqualTo(PacketType.SUBACK);
            send(publisher, RawClient.connect("pub", true, 60));
            assertThat(readType(broker, publisher)).isEqualTo(PacketType.CONNACK);
            send(publisher, RawClient.publish("t/1", "hello".getBytes(StandardCharsets.UTF_8), 0, 0));
            assertThat(readType(broker, subscriber)).isEqualTo(PacketType.PUBLISH);
            assertThat(broker.counters().get(BrokerCounters.EVENTS_DELIVER)).as("CONNECT, SUBSCRIBE, CONNECT, PUBLISH").isEqualTo(4);
            assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
        }
    }

    private static void send(final Socket socket, final byte[] bytes) throws Exception
    {
        final OutputStream out = socket.getOutputStream();
        out.write(bytes);
        out.flush();
    }

    /**
     * Steps the broker until the client has a whole packet to read, then reads it.
     *
     * @return its packet type.
     */
    private static int readType(final Broker broker, final Socket socket) throws Exception
    {
        final InputStream in = socket.getInputStream();
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (in.available() < 2 && System.nanoTime() < deadline)
        {
            broker.invoke();
        }
        final int first = in.read();
        int length = 0;
        int shift = 0;
        int digit;
        do
        {
            digit = in.read();
            length |= (digit & 0x7F) << shift;
            shift += 7;
        }
        while ((digit & 0x80) != 0);
        assertThat(in.readNBytes(length)).hasSize(length);
        return first >>> 4;
    }
}
