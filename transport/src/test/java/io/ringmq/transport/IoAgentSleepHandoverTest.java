package io.ringmq.transport;

import com.lmax.disruptor.RingBuffer;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One I/O agent stepped on the test's thread with the {@code wake} idle strategy: a packet that arrives right after
 * the sleeping {@code select} handed the ready keys over (when, in shared threading, the next duty cycle skips its
 * own {@code selectNow}) is read by the duty cycle after that, or by the next sleep at once, never a whole sleep
 * later; and the skip is for that one cycle only.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IoAgentSleepHandoverTest
{
    /**
     * The sleep's timeout ({@link IdleStrategies#SLEEP_MS}): a select that missed the ready key would last all of it;
     * one that sees it returns at once, so anything below it, however busy the machine, tells them apart.
     */
    private static final long AT_ONCE_NS = TimeUnit.MILLISECONDS.toNanos(IdleStrategies.SLEEP_MS);

    @ParameterizedTest(name = "{0} threading")
    @EnumSource(value = BrokerContext.Threading.class, names = {"SHARED", "SHARED_NETWORK"})
    void aPacketAfterTheHandoverIsReadWithinTwoCyclesOrAtOnceBySleep(final BrokerContext.Threading threading)
        throws Exception
    {
        final BrokerContext context = new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0))
            .threads(t -> t.threading(threading)).conclude();
        try (SteppedAgent stepped = SteppedAgent.open(context))
        {
            final RingBuffer<IngressEvent> ring = stepped.ring;
            final ManyToOneRingBuffer outbound = stepped.outbound;
            final IoAgent agent = stepped.agent;
            final IdleStrategies.SleepingIdleStrategy idle =
                IdleStrategies.wake(agent.selector(), agent::hasPendingWork, agent.readyAfterSleep());
            agent.wire(new IoAgent[]{agent}, new Wakeable[]{idle}, Wakeable.NONE);
            try (RawClient client = new RawClient(stepped.port()))
            {
                // accept and register the socket: cycles until nothing is left to do
                settle(agent);
                client.send(RawClient.connect("c", true, 60)); // on loopback the bytes are readable when send returns
                sleepUntilOnTheRing(idle, ring, 0); // the sleeping select hands the CONNECT over
                // the pipeline's CONNACK, as IoAgentBackpressureTest writes it
                final int index = outbound.tryClaim(OutboundFrame.SEND, OutboundFrame.BYTES_OFFSET + 4);
                outbound.buffer().putLong(index, ring.get(0).connectionId);
                outbound.buffer().putBytes(index + Long.BYTES, new byte[]{0x20, 0x02, 0x00, 0x00});
                outbound.commit(index);
                settle(agent);
                assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
                settle(agent);

                client.send(RawClient.publish("t/0", new byte[8], 0, 0));
                sleepUntilOnTheRing(idle, ring, 1); // a handover
                client.send(RawClient.publish("t/a", new byte[8], 0, 0)); // came right after it
                int cycles = 0;
                while (ring.getCursor() < 2)
                {
                    assertThat(++cycles).as("duty cycles before the packet after a handover is read")
                        .isLessThanOrEqualTo(2);
                    agent.doWork();
                }

                // the skip is for one cycle only: with nothing handed over, every cycle's selectNow reads
                settle(agent);
                client.send(RawClient.publish("t/b", new byte[8], 0, 0));
                agent.doWork();
                assertThat(ring.getCursor()).as("read by the first cycle with no handover before it").isEqualTo(3);

                // after a handover, a cycle that skipped its selectNow leaves a ready key to the next sleep, which
                // returns at once
                settle(agent);
                client.send(RawClient.publish("t/c", new byte[8], 0, 0));
                sleepUntilOnTheRing(idle, ring, 4);
                client.send(RawClient.publish("t/d", new byte[8], 0, 0));
                agent.doWork(); // in shared threading: no selectNow here
                final long start = System.nanoTime();
                sleepUntilOnTheRing(idle, ring, 5);
                assertThat(System.nanoTime() - start).as("ns until the next sleep read the ready key")
                    .isLessThan(AT_ONCE_NS);
            }
        }
    }

    /**
     * Duty cycles until one finds nothing to do (the agent's own work: accepting, registering, flushing).
     */
    private static void settle(final IoAgent agent) throws Exception
    {
        for (int i = 0; i < 1_000 && agent.doWork() > 0; i++)
        {
            // until idle
        }
    }

    /**
     * Idles (polls, then the sleeping select) until the ring's cursor reaches {@code sequence}.
     */
    private static void sleepUntilOnTheRing(
        final IdleStrategies.SleepingIdleStrategy idle, final RingBuffer<IngressEvent> ring, final long sequence)
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ring.getCursor() < sequence)
        {
            assertThat(System.nanoTime()).as("timed out idling for ring sequence " + sequence).isLessThan(deadline);
            idle.idle(0);
        }
    }
}
