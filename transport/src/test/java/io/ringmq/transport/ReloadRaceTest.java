package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Reloads racing what a careless operator and hostile clients do at the same time: a reload after (or while) the
 * broker stops, a storm of reloads from several threads (SIGHUP runs each on its own thread) while clients connect
 * and leave.
 */
class ReloadRaceTest extends InProcessBrokerTest
{
    @TempDir
    Path directory;

    private static BrokerContext settings()
    {
        return new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .persistence(p -> p.persistent(false));
    }

    /**
     * @return the config file the command line names: {@code max_queued_messages 100} to begin with.
     */
    private Path config() throws Exception
    {
        edit(100);
        return directory.resolve("ringmq.conf");
    }

    /**
     * The operator edits the config file.
     */
    private void edit(final int maxQueued) throws Exception
    {
        Files.writeString(directory.resolve("ringmq.conf"), "max_queued_messages " + maxQueued + "\n",
            StandardCharsets.UTF_8);
    }

    private static int freePort() throws Exception
    {
        return TestBrokers.freePort();
    }

    @Test
    @Timeout(60)
    @DisplayName("hostile: a reload after the broker closed (SIGHUP during SIGTERM) binds no listener and does not "
        + "wait for agents that no longer run")
    void reloadAfterCloseBindsNothing() throws Exception
    {
        launch(settings().limits(l -> l.maxConnections(10)));
        final int free = freePort();
        broker.close();

        final long startNs = System.nanoTime();
        broker.reload(settings().limits(l -> l.maxConnections(3)).addListener(new ListenerSettings(free, "127.0.0.1"))
            .conclude());
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs))
            .as("no wait for the stopped agents to take the limits").isLessThan(Broker.LIMITS_TAKEN_TIMEOUT_MS / 2);
        try (ServerSocket again = new ServerSocket(free, 50, InetAddress.getByName("127.0.0.1")))
        {
            assertThat(again.getLocalPort()).as("the port the reload named is free: nothing left bound").isEqualTo(free);
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("hostile: a reload racing the close leaves no listener bound once both are done")
    void reloadRacingCloseLeavesNothingBound() throws Exception
    {
        for (int round = 0; round < 5; round++)
        {
            launch(settings().limits(l -> l.maxConnections(10)));
            final int free = freePort();
            final CountDownLatch go = new CountDownLatch(1);
            final AtomicReference<Throwable> failed = new AtomicReference<>();
            final Thread reloader = new Thread(() ->
            {
                try
                {
                    go.await();
                    broker.reload(settings().limits(l -> l.maxConnections(3 + (int)(System.nanoTime() & 3)))
                        .addListener(new ListenerSettings(free, "127.0.0.1")).conclude());
                }
                catch (final Throwable ex)
                {
                    failed.set(ex);
                }
            });
            reloader.start();
            go.countDown();
            broker.close();
            reloader.join(20_000);
            assertThat(reloader.isAlive()).isFalse();
            assertThat(failed.get()).isNull();
            try (ServerSocket again = new ServerSocket(free, 50, InetAddress.getByName("127.0.0.1")))
            {
                assertThat(again.getLocalPort()).as("round " + round + ": nothing left bound").isEqualTo(free);
            }
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("hostile: a storm of reloads from four threads while clients connect and leave: each returns with "
        + "every owner on its limits, the last one holds, the connected stay served")
    void reloadStorm() throws Exception
    {
        launch(settings().threads(each -> each.threading(BrokerContext.Threading.DEDICATED).ioThreads(2))
            .limits(l -> l.maxConnections(50)));
        final Paho subscriber = closeLater(Paho.connect(broker.port(), "storm-sub"));
        subscriber.client.subscribe("storm/t", 1);
        final Paho publisher = closeLater(Paho.connect(broker.port(), "storm-pub"));
        final AtomicReference<Throwable> failed = new AtomicReference<>();
        final List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++)
        {
            final int seed = t;
            threads.add(new Thread(() ->
            {
                try
                {
                    for (int i = 0; i < 10; i++)
                    {
                        final BrokerContext next = settings().threads(each -> each
                            .threading(BrokerContext.Threading.DEDICATED).ioThreads(2));
                        next.limits().maxConnections(40 + seed + i).maxQueued(100 + i).connectTimeoutMs(100 + i * 1000)
                            .maxPacketSize(1024 * (1 + i));
                        broker.reload(next.conclude());
                    }
                }
                catch (final Throwable ex)
                {
                    failed.set(ex);
                }
            }));
        }
        threads.add(new Thread(() ->
        {
            try
            {
                for (int i = 0; i < 20; i++)
                {
                    try (RawClient client = new RawClient(broker.port()))
                    {
                        client.handshake(RawClient.connect("storm-" + i, true, 60));
                    }
                }
            }
            catch (final Throwable ex)
            {
                failed.set(ex);
            }
        }));
        threads.forEach(Thread::start);
        for (final Thread thread : threads)
        {
            thread.join(90_000);
            assertThat(thread.isAlive()).isFalse();
        }
        assertThat(failed.get()).isNull();

        assertThat(broker.reload(settings().threads(each -> each.threading(BrokerContext.Threading.DEDICATED)
            .ioThreads(2))
            .limits(l -> l.maxConnections(3)).conclude())).contains("max-connections");
        try (RawClient third = new RawClient(broker.port()))
        {
            assertThat(third.handshake(RawClient.connect("storm-third", true, 60))).isZero();
            try (RawClient fourth = new RawClient(broker.port()))
            {
                fourth.send(RawClient.connect("storm-fourth", true, 60));
                assertThat(fourth.readPacketOrClosed(5_000)).as("over the last limit").isNegative();
            }
        }
        publisher.publish("storm/t", "after", 1, false);
        assertThat(subscriber.next()).as("still served").isNotNull();
    }

    @Test
    @Timeout(60)
    @DisplayName("hostile: SIGHUPs that come while a reload is under way, the file edited before each: the last "
        + "edit is what stays (a signal's reload reads the file when its turn comes, not before)")
    void overlappingSignalsKeepTheLastEdit() throws Exception
    {
        final String[] args = {"-c", config().toString(), "--bind", "127.0.0.1", "--port", "0", "--sys-interval", "0",
            "--persistence", "memory"};
        launch(Main.rereadContext(args));
        final List<Thread> signals = new ArrayList<>();
        synchronized (broker) // a reload under way: the signals wait for it
        {
            for (int version = 2; version <= 4; version++)
            {
                edit(version * 100);
                final Thread signal = new Thread(() -> SignalReloads.reloadOnSignal(broker, args), "SIGHUP handler " + version);
                signal.start();
                final long untilNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (signal.getState() != Thread.State.BLOCKED && System.nanoTime() < untilNs)
                {
                    Thread.sleep(1); // polled: a thread's state has no wait of its own
                }
                assertThat(signal.getState()).as("signal " + version + " waits").isEqualTo(Thread.State.BLOCKED);
                signals.add(signal);
            }
        }
        for (final Thread signal : signals)
        {
            signal.join(20_000);
            assertThat(signal.isAlive()).isFalse();
        }
        assertThat(broker.limits().limits().maxQueued()).as("the file says 400").isEqualTo(400);
    }

    @Test
    @Timeout(60)
    @DisplayName("reload, --threading shared-network with two I/O agents: every owner (the stages in one agent) takes "
        + "the limits well within the reload's bound, and the new limit holds")
    void sharedNetworkOwnersTakeTheLimits() throws Exception
    {
        launch(settings().threads(t -> t.threading(BrokerContext.Threading.SHARED_NETWORK).ioThreads(2))
            .limits(l -> l.maxConnections(10)));
        final long startNs = System.nanoTime();
        assertThat(broker.reload(settings().threads(t -> t.threading(BrokerContext.Threading.SHARED_NETWORK)
            .ioThreads(2))
            .limits(l -> l.maxConnections(1)).conclude())).contains("max-connections");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs))
            .isLessThan(Broker.LIMITS_TAKEN_TIMEOUT_MS / 2);
        try (RawClient first = new RawClient(broker.port()))
        {
            assertThat(first.handshake(RawClient.connect("sn-first", true, 60))).isZero();
            try (RawClient second = new RawClient(broker.port()))
            {
                second.send(RawClient.connect("sn-second", true, 60));
                assertThat(second.readPacketOrClosed(5_000)).as("over the new limit").isNegative();
            }
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("hostile: a SIGHUP while the broker is still starting (the file read already, a long recovery under "
        + "way) is applied once it runs, not dropped")
    void aSignalDuringTheStartIsApplied() throws Exception
    {
        final String[] args = {"-c", config().toString(), "--bind", "127.0.0.1", "--port", "0", "--sys-interval", "0",
            "--persistence", "memory"};
        final SignalReloads signals = new SignalReloads(args);
        final BrokerContext read = Main.rereadContext(args); // what the start reads
        edit(200);
        signals.signal(); // the operator's SIGHUP while it starts
        launch(read);
        signals.started(broker);
        assertThat(broker.limits().limits().maxQueued()).as("the file says 200").isEqualTo(200);
    }
}
