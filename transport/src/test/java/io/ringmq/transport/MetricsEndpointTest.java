package io.ringmq.transport;

import io.ringmq.pipeline.ObservabilitySettings;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The Prometheus endpoint of a real broker: a known traffic pattern shows in {@code /metrics} with the right values,
 * every line is valid exposition format, JVM metrics are there, {@code /health} answers, and closing the broker
 * closes the endpoint.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MetricsEndpointTest
{
    /** A sample line: name, optional labels (quoted values may hold anything escaped), value, optional timestamp. */
    private static final Pattern SAMPLE = Pattern.compile(
        "([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\]|\\\\.)*\",?)*\\})? (\\S+)( -?\\d+)?");
    private static final Pattern COMMENT = Pattern.compile(
        "# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)");
    private static final Set<String> TYPES = Set.of("counter", "gauge", "histogram", "summary", "untyped", "info",
        "stateset", "unknown");

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Broker broker;

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    private Broker broker(final int metricsPort) throws IOException
    {
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0))
            .threads(t -> t.threading(BrokerContext.Threading.SHARED))
            .observability(o -> o.metricsEndpoint("127.0.0.1", metricsPort)));
        return broker;
    }

    private HttpResponse<String> get(final String path) throws IOException, InterruptedException
    {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + broker.metricsPort() + path))
            .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Scrapes until {@code condition} holds for the samples, or fails after 10 seconds with the last scrape.
     */
    private Map<String, Double> scrapeUntil(final Predicate<Map<String, Double>> condition) throws Exception
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        String body;
        do
        {
            final HttpResponse<String> response = get("/metrics");
            assertThat(response.statusCode()).isEqualTo(200);
            body = response.body();
            final Map<String, Double> samples = parse(body);
            if (condition.test(samples))
            {
                return samples;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5)); // then scrape again, until the deadline
        }
        while (System.nanoTime() < deadline);
        throw new AssertionError("the condition never held; last scrape:\n" + body);
    }

    /**
     * Parses the text exposition format strictly: every line a HELP, a TYPE or a sample with a valid name.
     *
     * @return each sample (name with its labels, as written) and its value.
     */
    static Map<String, Double> parse(final String body)
    {
        final Map<String, Double> samples = new HashMap<>();
        for (final String line : body.split("\n"))
        {
            if (line.startsWith("#"))
            {
                final Matcher comment = COMMENT.matcher(line);
                assertThat(comment.matches()).as("comment line: %s", line).isTrue();
                if ("TYPE".equals(comment.group(1)))
                {
                    assertThat(TYPES).as("type in: %s", line).contains(comment.group(3));
                }
                continue;
            }
            final Matcher sample = SAMPLE.matcher(line);
            assertThat(sample.matches()).as("sample line: %s", line).isTrue();
            final String value = sample.group(3);
            final double parsed = "+Inf".equals(value) ? Double.POSITIVE_INFINITY :
                "-Inf".equals(value) ? Double.NEGATIVE_INFINITY : Double.parseDouble(value);
            final String key = sample.group(1) + (null == sample.group(2) ? "" : sample.group(2));
            assertThat(samples.put(key, parsed)).as("duplicate sample %s", key).isNull();
        }
        return samples;
    }

    private static String latency(final String suffix, final String stage, final String le)
    {
        return StageLatencyCollector.NAME + suffix + "{stage=\"" + stage + "\"" +
            (null == le ? "" : ",le=\"" + le + "\"") + "}";
    }

    private static double value(final Map<String, Double> samples, final String name)
    {
        return samples.getOrDefault(name, -1.0);
    }

    @Test
    @DisplayName("/metrics shows a known traffic pattern in the broker's counters, with JVM metrics, all valid")
    void countersAfterKnownTraffic() throws Exception
    {
        broker(ObservabilitySettings.METRICS_PORT_EPHEMERAL);
        assertThat(broker.metricsPort()).isPositive();
        final Paho subscriber = closeLater(Paho.connect(broker.port(), "sub"));
        subscriber.client.subscribe("m/#", 1);
        final Paho publisher = closeLater(Paho.connect(broker.port(), "pub"));
        closeLater(Paho.connect(broker.port(), "idle"));
        for (int i = 0; i < 10; i++)
        {
            publisher.publish("m/" + i, "p" + i, 1, false); // Paho waits for the PUBACK
        }
        for (int i = 0; i < 10; i++)
        {
            assertThat(subscriber.next()).as("message %d", i).isNotNull();
        }

        final Map<String, Double> samples = scrapeUntil(s ->
            value(s, "ringmq_publish_in_total") == 10 && value(s, "ringmq_publish_out_total") == 10 &&
            value(s, latency("_count", "release", null)) == 10);
        assertThat(value(samples, "ringmq_connections_accepted_total")).isGreaterThanOrEqualTo(3);
        assertThat(value(samples, "ringmq_packets_in_total")).isGreaterThanOrEqualTo(3 + 1 + 10);
        assertThat(value(samples, "ringmq_unexpected_errors_stages_and_agents_total")).isZero();
        assertThat(value(samples, "ringmq_ingress_ring_occupancy_slots_in_use")).isGreaterThanOrEqualTo(0);
        assertThat(value(samples, "ringmq_events_handled_routing_stage_total")).isGreaterThanOrEqualTo(10);

        final int[] counterCount = {0};
        broker.counters().reader().forEach((id, typeId, key, label) -> counterCount[0]++);
        assertThat(samples.keySet().stream().filter(name -> name.startsWith("ringmq_") &&
            !name.startsWith(StageLatencyCollector.NAME)))
            .as("one sample per broker counter").hasSize(counterCount[0]);

        for (final String stage : List.of("auth", "route", "deliver-0", "release"))
        {
            assertThat(value(samples, latency("_count", stage, null))).as("PUBLISHes past %s", stage).isEqualTo(10);
            assertThat(value(samples, latency("_bucket", stage, "+Inf"))).isEqualTo(10);
            assertThat(value(samples, latency("_bucket", stage, "1.0E-6")))
                .isLessThanOrEqualTo(value(samples, latency("_bucket", stage, "0.001")))
                .isLessThanOrEqualTo(value(samples, latency("_bucket", stage, "10.0")));
            assertThat(value(samples, latency("_bucket", stage, "10.0"))).as("buckets are cumulative").isEqualTo(10);
            assertThat(value(samples, latency("_sum", stage, null))).isPositive().isLessThan(10 * 10.0);
        }

        final String body = get("/metrics").body();
        assertThat(body).contains("# TYPE ringmq_connections_accepted_total counter\n")
            .contains("# TYPE ringmq_ingress_ring_occupancy_slots_in_use gauge\n")
            .contains("# HELP ringmq_publish_in_total PUBLISH in\n");
        assertThat(samples).containsKey("jvm_threads_current").containsKey("jvm_memory_used_bytes{area=\"heap\"}")
            .containsKey("jvm_classes_currently_loaded");
    }

    @Test
    @DisplayName("/health answers 200 ok while the broker runs; closing the broker closes the endpoint")
    void healthAndClose() throws Exception
    {
        broker(ObservabilitySettings.METRICS_PORT_EPHEMERAL);
        final HttpResponse<String> health = get("/health");
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body().strip()).isEqualTo("ok");
        assertThat(get("/no-such-path").statusCode()).isEqualTo(404);

        final int port = broker.metricsPort();
        broker.close();
        final HttpClient fresh = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        assertThatThrownBy(() -> fresh.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port +
            "/health")).timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString()))
            .isInstanceOf(IOException.class);
    }

    @Test
    @DisplayName("the endpoint is off by default")
    void offByDefault() throws Exception
    {
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(BrokerContext.Threading.SHARED)));
        assertThat(broker.metricsPort()).isZero();
        assertThat(new BrokerContext().observability().metricsPort()).isZero();
        assertThat(new BrokerContext().observability().metricsBindAddress()).isEqualTo("127.0.0.1");
    }

    @Test
    @DisplayName("counter labels become distinct, valid Prometheus names")
    void names()
    {
        assertThat(CountersCollector.metricName(BrokerCounters.CONNECTIONS_REFUSED_LIMIT))
            .isEqualTo("ringmq_connections_refused_max_connections");
        assertThat(CountersCollector.metricName(BrokerCounters.EVENTS_AUTH))
            .isEqualTo("ringmq_events_handled_auth_stage");
        assertThat(CountersCollector.metricName(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER))
            .isEqualTo("ringmq_qos_0_dropped_slow_subscriber");
        assertThat(CountersCollector.metricName(BrokerCounters.CLIENTS_CONNECTED))
            .as("a gauge, without its marker").isEqualTo("ringmq_clients_connected");
        final Set<String> names = new HashSet<>();
        new BrokerCounters().reader().forEach((id, typeId, key, label) ->
        {
            final String name = CountersCollector.metricName(id);
            assertThat(name).matches("[a-zA-Z_:][a-zA-Z0-9_:]*").doesNotEndWith("_total");
            assertThat(names.add(name)).as("distinct: %s", name).isTrue();
        });
        assertThat(new CountersCollector(new BrokerCounters()).collect().size()).isEqualTo(names.size());
    }

    @Test
    @DisplayName("--metrics-port and --metrics-bind reach the context; a bad port is refused")
    void options(@TempDir final Path dir) throws IOException
    {
        final Main main = new Main();
        new picocli.CommandLine(main).parseArgs("--metrics-port", "9404", "--metrics-bind", "0.0.0.0");
        final BrokerContext context = main.context().conclude();
        assertThat(context.observability().metricsPort()).isEqualTo(9404);
        assertThat(context.observability().metricsBindAddress()).isEqualTo("0.0.0.0");
        assertThat(context.toString()).contains("metrics=0.0.0.0:9404");
        final Main bad = new Main();
        new picocli.CommandLine(bad).parseArgs("--metrics-port", "70000");
        assertThatThrownBy(() -> bad.context().conclude()).hasMessageContaining("--metrics-port");

        final Path config = dir.resolve("ringmq.conf");
        Files.writeString(config, "metrics-port 9500\nmetrics-bind=127.0.0.2\n");
        final Main fromFile = new Main();
        new picocli.CommandLine(fromFile).parseArgs(Main.withConfigFile(new String[]{"--config", config.toString()}).args());
        assertThat(fromFile.context().conclude().observability().metricsPort()).isEqualTo(9500);
        assertThat(fromFile.context().observability().metricsBindAddress()).isEqualTo("127.0.0.2");
    }


    @Test
    @Timeout(90)
    @DisplayName("hostile: 8 half requests a second, for as long as it takes: every whole /health request is answered "
        + "200 within 1 s (a liveness probe's timeout)")
    void trickleOfHalfRequestsLeavesHealthAnswering() throws Exception
    {
        broker(ObservabilitySettings.METRICS_PORT_EPHEMERAL);
        final java.util.concurrent.ConcurrentLinkedQueue<java.net.Socket> slow =
            new java.util.concurrent.ConcurrentLinkedQueue<>();
        final java.util.concurrent.ScheduledExecutorService attacker =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        closeLater(attacker::shutdownNow);
        closeLater(() ->
        {
            for (final java.net.Socket socket : slow)
            {
                socket.close();
            }
        });
        attacker.scheduleAtFixedRate(() ->
        {
            try
            {
                final java.net.Socket socket = new java.net.Socket("127.0.0.1", broker.metricsPort());
                socket.getOutputStream().write("GET /health HTTP/1.1\r\n".getBytes(
                    java.nio.charset.StandardCharsets.US_ASCII));
                slow.add(socket);
            }
            catch (final IOException ignored)
            {
                // the next one tries again
            }
        }, 0, 125, TimeUnit.MILLISECONDS);
        TestBrokers.await("24 half requests sent, past the 2 s limit", () -> slow.size() >= 24);
        for (int i = 0; i < 6; i++)
        {
            final long startNs = System.nanoTime();
            try (java.net.Socket probe = new java.net.Socket("127.0.0.1", broker.metricsPort()))
            {
                probe.setSoTimeout(5_000);
                probe.getOutputStream().write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(
                    java.nio.charset.StandardCharsets.US_ASCII));
                final byte[] head = probe.getInputStream().readNBytes(12);
                assertThat(new String(head, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("HTTP/1.1 200");
            }
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs)).as("probe %d", i).isLessThan(1_000);
        }
    }

    @Test
    @DisplayName("hostile: clients that send half a request and stop are closed after 2 s; /health and /metrics "
        + "answer meanwhile")
    void halfRequestsDoNotWedgeTheEndpoint() throws Exception
    {
        broker(ObservabilitySettings.METRICS_PORT_EPHEMERAL);
        assertThat(get("/health").statusCode()).isEqualTo(200);
        final List<java.net.Socket> slow = new ArrayList<>();
        for (int i = 0; i < 6; i++)
        {
            final java.net.Socket socket = closeLater(new java.net.Socket("127.0.0.1", broker.metricsPort()));
            socket.getOutputStream().write("GET /health HTTP/1.1\r\nHost: x\r\n".getBytes(
                java.nio.charset.StandardCharsets.US_ASCII)); // never the blank line that ends the headers
            socket.getOutputStream().flush();
            slow.add(socket);
        }
        assertThat(get("/health").statusCode()).as("answered within 10 s").isEqualTo(200);
        assertThat(get("/metrics").statusCode()).isEqualTo(200);
        for (final java.net.Socket socket : slow)
        {
            socket.setSoTimeout(15_000);
            int read;
            try
            {
                read = socket.getInputStream().read();
            }
            catch (final java.net.SocketException reset)
            {
                read = -1; // closed with a reset: it left unread bytes behind
            }
            assertThat(read).as("closed by the server, nothing answered").isEqualTo(-1);
        }
    }
    private <T extends AutoCloseable> T closeLater(final T closeable)
    {
        closeables.add(closeable);
        return closeable;
    }
}
