package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.CountersFile;
import io.ringmq.pipeline.status.CountersFileReader;
import io.ringmq.pipeline.status.ErrorLog;
import org.agrona.concurrent.status.CountersReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The counters file as another process sees it: a real broker's counters read through the mapped file, the
 * {@code ringmq stat} command, the file's removal on close, and the distinct error log.
 */
@Timeout(60)
class CountersFileTest
{
    private static final int MESSAGES = 5;

    @TempDir
    Path directory;

    private Broker broker;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, false);
    }

    private Broker broker() throws IOException
    {
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(BrokerContext.Threading.SHARED)).observability(o -> o.countersDir(directory)));
        return broker;
    }

    private void publish(final int count) throws Exception
    {
        final Paho paho = Paho.connect(broker.port(), "counters-publisher");
        closeables.add(paho);
        for (int i = 0; i < count; i++)
        {
            paho.publish("counters/test", "message " + i, 1, false);
        }
    }

    private static long value(final CountersReader counters, final String label)
    {
        final long[] found = {Long.MIN_VALUE};
        counters.forEach((value, counterId, counterLabel) ->
        {
            if (counterLabel.equals(label))
            {
                found[0] = value;
            }
        });
        assertThat(found[0]).as("a counter labelled '" + label + "'").isNotEqualTo(Long.MIN_VALUE);
        return found[0];
    }

    private static void await(final BooleanSupplier condition, final String what) throws InterruptedException
    {
        final long deadlineNs = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() - deadlineNs > 0)
            {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5);
        }
    }

    private static String stat(final int expectedExit, final String... args)
    {
        final PrintStream out = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try
        {
            final String[] command = new String[args.length + 1];
            command[0] = "stat";
            System.arraycopy(args, 0, command, 1, args.length);
            final int exit = Main.run(command);
            assertThat(exit).as(captured.toString(StandardCharsets.UTF_8)).isEqualTo(expectedExit);
        }
        finally
        {
            System.setOut(out);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    @DisplayName("a reader of the mapped file sees the live broker's counters, pid and labels")
    void readerSeesLiveCounters() throws Exception
    {
        broker();
        final Path file = broker.countersFile();
        assertThat(file.getParent()).isEqualTo(directory);
        assertThat(file.getFileName().toString()).startsWith("ringmq-" + ProcessHandle.current().pid() + "-")
            .endsWith(".counters");
        publish(MESSAGES);
        try (CountersFileReader reader = CountersFileReader.open(file))
        {
            assertThat(reader.pid()).isEqualTo(ProcessHandle.current().pid());
            assertThat(reader.isBrokerAlive()).isTrue();
            await(() -> value(reader.counters(), "PUBLISH in") == MESSAGES, "PUBLISH in == " + MESSAGES);
            assertThat(value(reader.counters(), "connections accepted")).isGreaterThanOrEqualTo(1);
            assertThat(value(reader.counters(), "unexpected errors (stages and agents)")).isZero();
            assertThat(reader.counters().getCounterTypeId(BrokerCounters.PUBLISH_IN))
                .isEqualTo(BrokerCounters.BROKER_COUNTER_TYPE_ID);
            assertThat(reader.counters().getCounterValue(BrokerCounters.PUBLISH_IN))
                .isEqualTo(broker.counters().get(BrokerCounters.PUBLISH_IN));
        }
    }

    @Test
    @DisplayName("a starting broker removes the counters files of brokers whose process is gone, and only those")
    void leftOverFilesOfDeadBrokersAreRemoved() throws IOException
    {
        final Path gone = directory.resolve("ringmq-999999999-0.counters"); // no such process
        Files.writeString(gone, "left by a broker killed with SIGKILL");
        final Path notOurs = directory.resolve("other.counters");
        Files.writeString(notOurs, "x");
        try (CountersFile file = CountersFile.create(directory))
        {
            assertThat(gone).doesNotExist();
            assertThat(notOurs).exists();
            assertThat(file.path()).exists();
            try (CountersFile second = CountersFile.create(directory))
            {
                assertThat(file.path()).as("a live broker's file stays").exists();
            }
        }
    }

    @Test
    @DisplayName("ringmq stat --once prints every counter as 'label: value', found by file, directory or pid")
    void statOnce() throws Exception
    {
        broker();
        publish(MESSAGES);
        await(() -> broker.counters().get(BrokerCounters.PUBLISH_IN) == MESSAGES, "PUBLISH in == " + MESSAGES);
        final String byFile = stat(0, "--once", "--file", broker.countersFile().toString());
        assertThat(byFile).contains("# file: " + broker.countersFile(), " (running)", "PUBLISH in: " + MESSAGES + "\n",
            "connections refused (max-connections): 0\n").doesNotContain("# distinct errors");
        assertThat(byFile.lines().filter(line -> !line.startsWith("#")))
            .allMatch(line -> line.matches(".+: -?\\d+"));
        assertThat(stat(0, "--once", "--counters-dir", directory.toString())).contains("PUBLISH in: " + MESSAGES);
        assertThat(stat(0, "--once", "--counters-dir", directory.toString(), "--pid",
            Long.toString(ProcessHandle.current().pid()), "--errors"))
            .contains("PUBLISH in: " + MESSAGES, "# distinct errors: 0");
        assertThat(stat(1, "--once", "--counters-dir", directory.toString(), "--pid", "999999999"))
            .contains("no counters files");
    }

    @Test
    @DisplayName("close() deletes the file; the counters stay readable in process")
    void fileRemovedOnClose() throws Exception
    {
        broker();
        final Path file = broker.countersFile();
        publish(1);
        assertThat(file).exists();
        for (final AutoCloseable closeable : closeables)
        {
            closeable.close();
        }
        closeables.clear();
        broker.close();
        assertThat(file).doesNotExist();
        assertThat(Files.list(directory)).isEmpty();
        assertThat(broker.counters().get(BrokerCounters.PUBLISH_IN)).isEqualTo(1);
        assertThat(stat(1, "--once", "--file", file.toString())).contains("gone");
    }

    @Test
    @DisplayName("brokers in one process get files of their own")
    void namesNeverCollide() throws Exception
    {
        try (Broker first = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(BrokerContext.Threading.SHARED)).observability(o -> o.countersDir(directory)));
            Broker second = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
                .threads(t -> t.threading(BrokerContext.Threading.SHARED))
                .observability(o -> o.countersDir(directory))))
        {
            assertThat(first.countersFile()).isNotEqualTo(second.countersFile());
            assertThat(CountersFileReader.find(directory, ProcessHandle.current().pid()))
                .containsExactlyInAnyOrder(first.countersFile(), second.countersFile());
        }
        assertThat(Files.list(directory)).isEmpty();
    }

    @Test
    @DisplayName("the error log region records a distinct error once, with a count of 2 when it happens twice")
    void distinctErrorLog() throws Exception
    {
        try (CountersFile file = CountersFile.create(directory))
        {
            final BrokerCounters counters = new BrokerCounters(file);
            final ErrorLog errors = new ErrorLog(counters);
            for (int i = 0; i < 2; i++)
            {
                errors.record("routing stage", new IllegalStateException("broken index"));
            }
            errors.record("delivery stage", new IllegalStateException("broken index"));
            assertThat(counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isEqualTo(3);

            final List<String> seen = new ArrayList<>();
            try (CountersFileReader reader = CountersFileReader.open(file.path()))
            {
                final int distinct = reader.readErrors((count, firstMs, lastMs, text) ->
                {
                    assertThat(lastMs).isGreaterThanOrEqualTo(firstMs);
                    seen.add(count + " " + text.lines().findFirst().orElse(""));
                    assertThat(text).contains("Caused by: java.lang.IllegalStateException: broken index",
                        CountersFileTest.class.getName());
                });
                assertThat(distinct).isEqualTo(2);
            }
            assertThat(seen).containsExactly(
                "2 io.ringmq.pipeline.status.ErrorLog$UnexpectedError: unexpected error in routing stage",
                "1 io.ringmq.pipeline.status.ErrorLog$UnexpectedError: unexpected error in delivery stage");
            assertThat(stat(0, "--once", "--errors", "--file", file.path().toString()))
                .contains("# distinct errors: 2", "count: 2\n", "first: ", "last: ", "broken index");
        }
    }
}
