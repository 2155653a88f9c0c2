package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SessionWindows;
import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * What one plan of room taken back from sessions away costs the delivery shard ({@code AwayRoom.plan}), planned and
 * given up (nothing dropped, so each call sees the same queues), over a full window of 1,024 sessions away:
 * <ul>
 *   <li>{@code ownCopies}: each session queues 4 copies of its own; the plan takes 64 of them (its most);</li>
 *   <li>{@code fleet}: the 1,024 sessions share 64 copies (one topic); the plan takes the newest from all 1,024 (its
 *   most entries) and stops;</li>
 *   <li>{@code pinned}: each session queues 300 messages another client holds too; the plan steps over them until its
 *   work is spent, and finds nothing (an attacker's most expensive plan, with all its steps);</li>
 *   <li>{@code pinnedBackToBack}: the same plan again and again on the wall clock, as a shard does when every event
 *   wants room: what each costs on average once the steps of {@code AwayRoom.STEP_RATE} are spent;</li>
 *   <li>{@code spread}: each copy is shared with a session outside the window; no copy is ever ready, and each round
 *   steps every queue over one (the open case of sharers listed far apart, at its most work).</li>
 * </ul>
 *
 * <pre>
 * mvn -q -Pbenchmarks -pl pipeline test-compile exec:exec -Djmh.args="AwayRoomBenchmark"
 * </pre>
 * Every case but {@code pinnedBackToBack} plans a second after the one before, on a clock of its own, so each plan
 * has all its steps.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class AwayRoomBenchmark
{
    private static final int SESSIONS = ShardSessions.AWAY_LOOK;

    private final SharedMessage.Pool pool = new SharedMessage.Pool(0, 0, Long.MAX_VALUE);
    private final SessionWindows windows = new SessionWindows(4 * SESSIONS + 1);
    private final UnsafeBuffer bytes = new UnsafeBuffer(new byte[256]);
    private final AwayRoom room = new AwayRoom();
    private ShardSessions ownCopies;
    private ShardSessions fleet;
    private ShardSessions pinned;
    private ShardSessions spread;
    /** The clock of the cases that plan with all their steps: a second further each plan. */
    private long planAtMs;

    @Setup
    public void setUp()
    {
        ownCopies = sessions(0);
        for (int s = 0; s < SESSIONS; s++)
        {
            for (int m = 0; m < 4; m++)
            {
                queue(ownCopies, s, copy());
            }
        }
        fleet = sessions(SESSIONS);
        for (int m = 0; m < 64; m++)
        {
            final SharedMessage copy = copy();
            for (int s = 0; s < SESSIONS; s++)
            {
                queue(fleet, SESSIONS + s, copy);
            }
        }
        pinned = sessions(2 * SESSIONS);
        for (int s = 0; s < SESSIONS; s++)
        {
            for (int m = 0; m < 300; m++)
            {
                final SharedMessage copy = copy();
                copy.retain(); // held elsewhere too: a connected client's window
                queue(pinned, 2 * SESSIONS + s, copy);
            }
        }
        spread = sessions(3 * SESSIONS);
        final DeliverySession outside = new DeliverySession(4 * SESSIONS, true, 16, windows);
        for (int m = 0; m < 300; m++)
        {
            final SharedMessage copy = copy();
            for (int s = 0; s < SESSIONS; s++)
            {
                queue(spread, 3 * SESSIONS + s, copy);
            }
            copy.retain();
            outside.enqueue(copy, 1, false, null, 0); // away, not listed in this window
        }
    }

    @Benchmark
    public long ownCopies()
    {
        return plan(ownCopies, Long.MAX_VALUE);
    }

    @Benchmark
    public long fleet()
    {
        return plan(fleet, Long.MAX_VALUE);
    }

    @Benchmark
    public long pinned()
    {
        return plan(pinned, 1);
    }

    @Benchmark
    public long pinnedBackToBack()
    {
        final long freed = room.plan(pinned, 1, System.currentTimeMillis());
        room.clear();
        return freed;
    }

    @Benchmark
    public long spread()
    {
        return plan(spread, 1);
    }

    private long plan(final ShardSessions sessions, final long wanted)
    {
        planAtMs += 1_000;
        final long freed = room.plan(sessions, wanted, planAtMs);
        room.clear();
        return freed;
    }

    private ShardSessions sessions(final int firstId)
    {
        final ShardSessions sessions = new ShardSessions();
        for (int s = 0; s < SESSIONS; s++)
        {
            sessions.put(new DeliverySession(firstId + s, true, 16, windows));
        }
        return sessions;
    }

    private void queue(final ShardSessions sessions, final int id, final SharedMessage copy)
    {
        final DeliverySession session = sessions.get(id);
        copy.retain();
        session.enqueue(copy, 1, false, null, 0);
        sessions.queuedAway(session);
    }

    private SharedMessage copy()
    {
        return pool.copy(bytes, 0, 1, bytes, 0, 0, bytes, 1, 100, Message.NEVER, 1);
    }
}
