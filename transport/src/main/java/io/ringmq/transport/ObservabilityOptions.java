package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import picocli.CommandLine.Option;

import java.nio.file.Path;

import static io.ringmq.transport.Main.DEFAULTS;

/**
 * The {@code ringmq} options that say what the broker tells about itself (a picocli mixin of {@link Main}): the log's
 * level and format, the {@code $SYS} topics, the counters file {@code ringmq stat} reads, and the Prometheus
 * endpoint.
 */
final class ObservabilityOptions
{
    @Option(names = "--log-level", paramLabel = "LEVEL",
        description = "error, warn, info or debug (default: ${DEFAULT-VALUE}).", order = 430)
    String logLevel = "info";

    @Option(names = "--log-format", paramLabel = "FORMAT",
        description = "text, or json for one JSON object per line (default: ${DEFAULT-VALUE}).", order = 440)
    String logFormat = "text";

    @Option(names = "--sys-interval", paramLabel = "DURATION",
        description = "How often the $SYS tree is published, retained (Mosquitto's topics); 0 turns it off "
            + "(default: ${DEFAULT-VALUE}).", order = 450)
    String sysInterval = OptionValues.durationText(DEFAULTS.observability().sysIntervalMs());

    @Option(names = "--counters-dir", paramLabel = "DIR",
        description = "Where the counters file that 'ringmq stat' reads is kept (default: /dev/shm/ringmq, or "
            + "ringmq under java.io.tmpdir where there is no /dev/shm).", order = 520)
    Path countersDir;

    // the Prometheus endpoint
    @Option(names = "--metrics-port", paramLabel = "PORT",
        description = "Serve /metrics (Prometheus text format: the broker's counters and JVM metrics) and /health "
            + "over HTTP on this port; 0 = off (default: ${DEFAULT-VALUE}).", order = 530)
    int metricsPort = 0;

    @Option(names = "--metrics-bind", paramLabel = "ADDRESS",
        description = "Address the metrics endpoint listens on (default: ${DEFAULT-VALUE}).", order = 540)
    String metricsBind = "127.0.0.1";

    /**
     * Copies these options into {@code context}; the log's level and format are not in it (see {@link Logging}).
     */
    void applyTo(final BrokerContext context)
    {
        context.observability(o -> o.sysIntervalMs(OptionValues.parseLongDurationMs(sysInterval))
            .countersDir(countersDir)
            .metricsEndpoint(metricsBind, metricsPort));
    }
}
