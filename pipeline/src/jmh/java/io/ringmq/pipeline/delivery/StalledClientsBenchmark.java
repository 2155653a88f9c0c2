package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SessionWindows;
import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * What a look for stalled clients costs the delivery shard ({@code StalledClients.refused}): one pass over its
 * {@code sessions} connected sessions, of which {@code inFlight} have 4 messages in flight each and are watched; none is
 * stalled for the timeout, so each look ends no one and the next sees the same. {@code look} is a whole pass, its
 * steps back to back; {@code step} one step of {@link StalledClients#LOOK_STEP} sessions, the longest a look holds the
 * shard's thread. A shard begins a look at most every {@link StalledClients#LOOK_INTERVAL_MS}, and takes a step at most
 * every {@link StalledClients#STEP_INTERVAL_MS}, only while a client that is not stalled is refused a copy.
 *
 * <pre>
 * mvn -q -Pbenchmarks -pl pipeline test-compile exec:exec -Djmh.args="StalledClientsBenchmark"
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class StalledClientsBenchmark
{
    @Param({"100000"})
    int sessions;

    @Param({"1000", "10000"})
    int inFlight;

    private final SharedMessage.Pool pool = new SharedMessage.Pool(0, 0, Long.MAX_VALUE);
    private final UnsafeBuffer bytes = new UnsafeBuffer(new byte[256]);
    private final ShardSessions shard = new ShardSessions();
    /** Nothing is ended here (the timeout is never reached), so no output is needed. */
    private final StalledClients stalled = new StalledClients(shard, null, new BrokerCounters(), Long.MAX_VALUE);
    private DeliverySession refused;
    private long nowMs;

    @Setup
    public void setUp()
    {
        final SessionWindows windows = new SessionWindows(sessions + 1);
        final AddressHolds holds = new AddressHolds();
        for (int id = 0; id < sessions; id++)
        {
            final DeliverySession session = new DeliverySession(id, false, 32, windows);
            session.bind(id + 1, holds, AddressKeys.NONE);
            if (id % (sessions / inFlight) == 0)
            {
                for (int m = 0; m < 4; m++)
                {
                    final SharedMessage copy = pool.copy(bytes, 0, 1, bytes, 0, 0, bytes, 1, 100, Message.NEVER, 1);
                    copy.retain();
                    session.addInflight(copy, 1, false, null, 0);
                }
            }
            shard.put(session);
        }
        refused = new DeliverySession(sessions, false, 32, windows);
        refused.bind(sessions + 1, holds, AddressKeys.NONE);
        shard.put(refused);
    }

    /**
     * A whole look: its steps back to back.
     */
    @Benchmark
    public boolean look()
    {
        boolean ended;
        do
        {
            nowMs += StalledClients.LOOK_INTERVAL_MS;
            ended = stalled.refused(refused, nowMs);
        }
        while (stalled.looking());
        return ended;
    }

    /**
     * One step of a look: the longest the shard's thread is held by it.
     */
    @Benchmark
    public boolean step()
    {
        nowMs += StalledClients.LOOK_INTERVAL_MS;
        return stalled.refused(refused, nowMs);
    }
}
