package io.ringmq.transport;

import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AgentThreadsTest
{
    @Test
    void anAgentWhoseStartThrowsIsReportedBeforeItsRunnerEndsTheThread() throws Exception
    {
        // Agrona's runner ends the thread when onStart throws: the broker has to hear of it, or it serves nothing
        // while it looks alive
        final AtomicBoolean reported = new AtomicBoolean();
        final AtomicBoolean worked = new AtomicBoolean();
        final AtomicReference<Throwable> seen = new AtomicReference<>();
        final CountDownLatch errorSeen = new CountDownLatch(1);
        final Agent failing = new Agent()
        {
            public void onStart()
            {
                throw new IllegalStateException("no such core");
            }

            public int doWork()
            {
                worked.set(true);
                return 0;
            }

            public String roleName()
            {
                return "pipeline";
            }
        };
        final Agent guarded = AgentThreads.startGuarded(failing, () -> reported.set(true));
        final AtomicBoolean reportedFirst = new AtomicBoolean();
        final AgentRunner runner = new AgentRunner(new BusySpinIdleStrategy(), error ->
        {
            reportedFirst.set(reported.get()); // the runner's handler must find it marked
            seen.set(error);
            errorSeen.countDown();
        }, null, guarded);

        final Thread thread = AgentRunner.startOnThread(runner);

        assertThat(errorSeen.await(10, TimeUnit.SECONDS)).isTrue();
        thread.join(10_000);
        assertThat(reportedFirst).isTrue();
        assertThat(seen.get()).isInstanceOf(IllegalStateException.class).hasMessage("no such core");
        assertThat(worked).as("the runner never ran a duty cycle").isFalse();
        runner.close();
    }

    @Test
    void aGuardedAgentThatStartsIsTheAgent() throws Exception
    {
        final List<String> calls = new ArrayList<>();
        final Agent agent = new Agent()
        {
            public void onStart()
            {
                calls.add("start");
            }

            public int doWork()
            {
                calls.add("work");
                return 3;
            }

            public void onClose()
            {
                calls.add("close");
            }

            public String roleName()
            {
                return "io-0";
            }
        };
        final Agent guarded = AgentThreads.startGuarded(agent, () -> calls.add("reported"));

        guarded.onStart();
        assertThat(guarded.doWork()).isEqualTo(3);
        guarded.onClose();

        assertThat(calls).containsExactly("start", "work", "close");
        assertThat(guarded.roleName()).isEqualTo("io-0");
    }

    @Test
    void anErrorFromStartIsPassedOnAsItIs()
    {
        final Agent failing = new Agent()
        {
            public void onStart()
            {
                throw new OutOfMemoryError("at start");
            }

            public int doWork()
            {
                return 0;
            }

            public String roleName()
            {
                return "auth";
            }
        };
        final AtomicBoolean reported = new AtomicBoolean();

        assertThatThrownBy(() -> AgentThreads.startGuarded(failing, () -> reported.set(true)).onStart())
            .isInstanceOf(OutOfMemoryError.class).hasMessage("at start");
        assertThat(reported).isTrue();
    }

    @Test
    void aFailedStartIsFatalOnceAndReachesAHandlerNamedAfterIt() throws Exception
    {
        final List<Throwable> first = new java.util.concurrent.CopyOnWriteArrayList<>();
        final CountDownLatch handled = new CountDownLatch(1);
        final AgentThreads threads = new AgentThreads(new io.ringmq.pipeline.BrokerContext(),
            new io.ringmq.pipeline.status.ErrorLog(new io.ringmq.pipeline.status.BrokerCounters()), error ->
            {
                first.add(error);
                handled.countDown();
            });
        final Agent agent = new Agent()
        {
            public int doWork()
            {
                return 0;
            }

            public String roleName()
            {
                return "route";
            }
        };

        threads.onAgentError(agent, new IllegalArgumentException("a duty cycle's error"), false);
        assertThat(threads.fatal()).as("an error in a duty cycle is recorded, not fatal").isFalse();

        final IllegalStateException startError = new IllegalStateException("start");
        threads.onAgentError(agent, startError, true);
        threads.onAgentError(agent, new IllegalStateException("a second start"), true);
        assertThat(handled.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(threads.fatal()).isTrue();

        // a handler named after the failure (the command line names its own after launch) hears of it at once
        final List<Throwable> late = new ArrayList<>();
        threads.onFatalError(late::add);
        assertThat(late).containsExactly(startError);
        assertThat(first).containsExactly(startError);
    }
}
