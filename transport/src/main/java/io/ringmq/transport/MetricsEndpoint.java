package io.ringmq.transport;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.prometheus.metrics.exporter.httpserver.MetricsHandler;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.ringmq.pipeline.ObservabilitySettings;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;

import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The operations endpoint ({@code --metrics-port}): an HTTP server on its own daemon threads that serves
 * <ul>
 *     <li>{@code /metrics}: the broker's counters ({@link CountersCollector}), the pipeline's latencies per stage
 *     ({@link StageLatencyCollector}) and the JVM's metrics in the Prometheus text exposition format (or
 *     OpenMetrics or protobuf, as the scraper asks), written by the official Prometheus Java client;</li>
 *     <li>{@code /health}: 200 {@code ok} while the broker runs, 503 once it is stopping.</li>
 * </ul>
 * A scrape reads the counters from their memory and swaps the latency recorders; it never waits for a stage or
 * I/O thread. Each endpoint has a
 * registry of its own, so brokers in one JVM (tests) do not see each other's counters.
 * <p>
 * The JDK's server reads a request's headers on one of those threads, blocking: a client that sends half a request
 * and stops would hold the thread for as long as it keeps the socket open, and with it every later scrape and
 * {@code /health}. {@link #limitJdkServer()} bounds that time.
 */
final class MetricsEndpoint implements AutoCloseable
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");
    private static final byte[] OK = "ok\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] STOPPING = "stopping\n".getBytes(StandardCharsets.US_ASCII);
    /**
     * Threads reading requests, each started when needed and ended after 30 s idle: a request that does not arrive
     * whole holds one for 2 s at most, so it takes 16 such clients a second to make a scrape wait.
     */
    private static final int THREADS = 32;

    private final HttpServer server;
    private final ExecutorService executor;
    private final BooleanSupplier running;

    private MetricsEndpoint(final HttpServer server, final ExecutorService executor, final BooleanSupplier running)
    {
        this.server = server;
        this.executor = executor;
        this.running = running;
    }

    /**
     * Starts serving when {@link BrokerContext#metricsPort()} asks for it.
     *
     * @param latencies the stage latencies, attached to the pipeline before it ran.
     * @param running   whether the broker runs, for {@code /health}.
     * @return the endpoint, or null when the port is 0 (off).
     * @throws IOException when the address cannot be bound.
     */
    static MetricsEndpoint start(final BrokerContext context, final BrokerCounters counters,
        final StageLatencyCollector latencies, final BooleanSupplier running) throws IOException
    {
        final ObservabilitySettings settings = context.observability();
        if (0 == settings.metricsPort())
        {
            return null;
        }
        final int port = ObservabilitySettings.METRICS_PORT_EPHEMERAL == settings.metricsPort() ? 0 :
            settings.metricsPort();
        final InetSocketAddress address = new InetSocketAddress(settings.metricsBindAddress(), port);
        limitJdkServer();
        final HttpServer server;
        try
        {
            server = HttpServer.create(address, 16);
        }
        catch (final BindException ex)
        {
            throw new IOException("cannot serve metrics on " + settings.metricsBindAddress() + ":" + port + ": " +
                ex.getMessage(), ex);
        }
        final PrometheusRegistry registry = new PrometheusRegistry();
        registry.register(new CountersCollector(counters));
        registry.register(latencies);
        JvmMetrics.builder().register(registry);
        final ThreadPoolExecutor executor = new ThreadPoolExecutor(THREADS, THREADS, 30, TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(), task ->
            {
                final Thread thread = new Thread(task, "ringmq-metrics");
                thread.setDaemon(true);
                return thread;
            });
        executor.allowCoreThreadTimeOut(true);
        final MetricsEndpoint endpoint = new MetricsEndpoint(server, executor, running);
        server.createContext("/metrics", new MetricsHandler(registry));
        server.createContext("/health", endpoint::health);
        server.setExecutor(executor);
        server.start();
        LOG.log(System.Logger.Level.INFO, "ringmq metrics on http://" + settings.metricsBindAddress() + ":" +
            endpoint.port() + "/metrics");
        return endpoint;
    }

    /**
     * Limits the JDK's HttpServer, unless the operator set them ({@code -D}): a request must arrive whole within 2 s
     * of its connection (a scraper's or a probe's arrives at once) and a response be taken within 10 s, else the
     * server closes the connection; a request's headers may hold 16 KiB. The JDK reads these once per process, when its first server is made, so this runs before every
     * server this process makes.
     */
    static void limitJdkServer()
    {
        setIfAbsent("sun.net.httpserver.maxReqTime", "2"); // seconds
        setIfAbsent("sun.net.httpserver.maxRspTime", "10"); // seconds
        setIfAbsent("sun.net.httpserver.maxReqHeaderSize", "16384"); // bytes
    }

    private static void setIfAbsent(final String property, final String value)
    {
        if (null == System.getProperty(property))
        {
            System.setProperty(property, value);
        }
    }

    private void health(final HttpExchange exchange) throws IOException
    {
        try (exchange)
        {
            final boolean up = running.getAsBoolean();
            final byte[] body = up ? OK : STOPPING;
            exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
            if ("HEAD".equals(exchange.getRequestMethod()))
            {
                exchange.sendResponseHeaders(up ? 200 : 503, -1);
                return;
            }
            exchange.sendResponseHeaders(up ? 200 : 503, body.length);
            try (OutputStream out = exchange.getResponseBody())
            {
                out.write(body);
            }
        }
    }

    /**
     * @return the port served (the real one when an ephemeral port was asked for).
     */
    int port()
    {
        return server.getAddress().getPort();
    }

    /**
     * Stops listening and waits (a few seconds at most) for a scrape in progress to finish.
     */
    public void close()
    {
        server.stop(0);
        executor.shutdownNow();
        try
        {
            if (!executor.awaitTermination(5, TimeUnit.SECONDS))
            {
                LOG.log(System.Logger.Level.WARNING, "ringmq metrics: a scrape did not finish within 5 s of close");
            }
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }
}
