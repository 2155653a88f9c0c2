package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.CountersFile;
import io.ringmq.pipeline.status.CountersFileDescriptor;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Review of the operations features ($SYS, metrics, reload, embedding): each test shows one defect and fails
 * until it is fixed.
 */
class OperationsReviewTest extends InProcessBrokerTest
{
    @TempDir
    Path directory;

    @Test
    @Timeout(60)
    @DisplayName("$SYS: a client cannot overwrite the broker's retained $SYS topics (Mosquitto denies client writes "
        + "to $SYS)")
    void clientCannotSpoofSysTopics() throws Exception
    {
        // the first round goes out at start; the next only after a minute, so the spoof is what a dashboard reads
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(60_000)));
        final Paho dashboard = closeLater(Paho.connect(broker.port(), "dashboard"));
        dashboard.client.subscribe("$SYS/broker/version", 0);
        final Paho.Received genuine = dashboard.next();
        assertThat(genuine).isNotNull();
        assertThat(genuine.payload()).startsWith("ringmq ");

        final Paho attacker = closeLater(Paho.connect(broker.port(), "attacker"));
        attacker.publish("$SYS/broker/version", "mosquitto 1.4.0 (spoofed)", 1, true);
        attacker.publish("$SYS/broker/clients/connected", "0", 1, true);

        final Paho late = closeLater(Paho.connect(broker.port(), "late"));
        late.client.subscribe("$SYS/broker/version", 0);
        final Paho.Received seen = late.next();
        assertThat(seen).isNotNull();
        assertThat(seen.payload()).as("a client's PUBLISH to $SYS must not replace the broker's own value")
            .startsWith("ringmq ");
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = BrokerContext.Threading.class)
    @Timeout(60)
    @DisplayName("a broker that fails to start (metrics port taken) leaves no selector open")
    void failedStartLeaksNoFileDescriptors(final BrokerContext.Threading threading) throws Exception
    {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            final int metricsPort = taken.getLocalPort();
            attemptStart(metricsPort, threading); // warm up: classes, the JDK's own descriptors, its server's limits
            // the JDK's HttpServer.create leaks its ServerSocketChannel when bind fails (1 fd): measured apart
            final long jdkBefore = openDescriptors();
            for (int i = 0; i < 20; i++)
            {
                assertThatThrownBy(() -> com.sun.net.httpserver.HttpServer.create(
                    new java.net.InetSocketAddress("127.0.0.1", metricsPort), 16)).isInstanceOf(IOException.class);
            }
            final long jdkLeak = openDescriptors() - jdkBefore;
            final long before = openDescriptors();
            for (int i = 0; i < 20; i++)
            {
                attemptStart(metricsPort, threading);
            }
            // descriptors the JDK frees only when their objects are collected: wait for that, with a deadline
            final long deadline = System.nanoTime() + 10_000_000_000L;
            long after = openDescriptors();
            while (after - before - jdkLeak >= 5 && System.nanoTime() < deadline)
            {
                System.gc();
                Thread.onSpinWait();
                after = openDescriptors();
            }
            assertThat(after - before - jdkLeak).as("file descriptors ringmq left open by 20 failed starts " +
                "(beyond the " + jdkLeak + " the JDK's HttpServer leaks by itself)").isLessThan(5);
        }
    }

    private void attemptStart(final int metricsPort, final BrokerContext.Threading threading)
    {
        assertThatThrownBy(() -> Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.countersDir(directory)).threads(t -> t.threading(threading))
            .observability(o -> o.sysIntervalMs(0)
            .metricsEndpoint("127.0.0.1", metricsPort)))).isInstanceOf(IOException.class);
    }

    private static long openDescriptors() throws IOException
    {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd")))
        {
            return fds.count();
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("$SYS with the smallest ring (--ring-size 64, shared threading): every topic of the tree is "
        + "published, not always the same first 64")
    void everySysTopicIsPublishedWithASmallRing() throws Exception
    {
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0).memory(m -> m.ringSize(64))
            .threads(t -> t.threading(BrokerContext.Threading.SHARED)).observability(o -> o.sysIntervalMs(200)));
        final String last = "$SYS/broker/ringmq/" +
            io.ringmq.pipeline.status.BrokerCounters.key(io.ringmq.pipeline.status.BrokerCounters.count() - 1);
        final Paho dashboard = closeLater(Paho.connect(broker.port(), "dashboard"));
        dashboard.client.subscribe("$SYS/#", 0);
        final java.util.Set<String> seen = new java.util.HashSet<>();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5); // 25 rounds
        while (System.nanoTime() < deadline && !seen.contains(last))
        {
            final Paho.Received message = dashboard.received.poll(100, TimeUnit.MILLISECONDS);
            if (null != message)
            {
                seen.add(message.topic());
            }
        }
        assertThat(seen).as("topics seen in 25 rounds: " + seen.size()).contains(last);
    }

    @Test
    @Timeout(60)
    @DisplayName("a start that runs out of direct memory (Main handles that OutOfMemoryError) releases the port and "
        + "the counters file")
    void startOutOfDirectMemoryReleasesPortAndCountersFile() throws Exception
    {
        // below the ephemeral range: no other test's client or port-0 listener takes it meanwhile (two test JVMs)
        final int port = TestBrokers.freePort();
        // a 1 GiB message log is more than this JVM's direct memory (-Xmx1g): refused before any is touched
        assertThatThrownBy(() -> Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(port)
            .observability(o -> o.countersDir(directory).sysIntervalMs(0)).memory(m -> m.messageLogBytes(1 << 30))))
            .isInstanceOf(OutOfMemoryError.class);
        try (Stream<Path> left = Files.list(directory))
        {
            assertThat(left).as("counters files left behind").isEmpty();
        }
        try (ServerSocket again = new ServerSocket(port, 1, InetAddress.getLoopbackAddress()))
        {
            assertThat(again.getLocalPort()).as("the port is free again").isEqualTo(port);
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("ringmq reload never signals a process that is not the broker that wrote the counters file "
        + "(a stale file whose pid was reused)")
    void reloadDoesNotSignalAReusedPid() throws Exception
    {
        final Process bystander = new ProcessBuilder("sleep", "60").start();
        try
        {
            // a broker killed with SIGKILL (OOM killer, docker kill) leaves its counters file; its pid is reused
            final CountersFile stale = CountersFile.create(directory);
            stale.buffer().putLong(CountersFileDescriptor.PID_OFFSET, bystander.pid());
            Main.run("reload", "--counters-dir", directory.toString());
            assertThat(bystander.waitFor(1, TimeUnit.SECONDS)).as("the unrelated process was killed by SIGHUP")
                .isFalse();
            assertThat(bystander.isAlive()).isTrue();
            stale.close();
        }
        finally
        {
            bystander.destroyForcibly();
        }
    }
}
