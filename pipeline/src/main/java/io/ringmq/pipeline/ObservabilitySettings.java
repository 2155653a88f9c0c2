package io.ringmq.pipeline;

import java.nio.file.Files;
import java.nio.file.Path;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * What the broker tells about itself, a part of {@link BrokerContext} (the {@code --sys-interval},
 * {@code --counters-dir}, {@code --metrics-port} and {@code --metrics-bind} flags): the {@code $SYS} tree (its
 * interval is live), the counters file {@code ringmq stat} reads, and the Prometheus endpoint.
 */
public final class ObservabilitySettings extends LiveSettings<ObservabilitySettings>
{
    /** {@link #metricsEndpoint(String, int)}: serve the metrics on a free port the system picks (tests). */
    public static final int METRICS_PORT_EPHEMERAL = -1;

    private long sysIntervalMs = 10_000;
    private Path countersDir = defaultCountersDir();
    // the Prometheus endpoint (/metrics, /health); port 0 is off
    private String metricsBindAddress = "127.0.0.1";
    private int metricsPort = 0;

    /**
     * Checks these settings.
     *
     * @throws IllegalArgumentException naming the flag whose value cannot work.
     */
    ObservabilitySettings conclude()
    {
        check(sysIntervalMs == 0 || sysIntervalMs >= 100, "--sys-interval must be 0 (off) or at least 100 ms");
        check(metricsPort >= METRICS_PORT_EPHEMERAL && metricsPort <= 65_535, "--metrics-port must be 0..65535");
        check(0 == metricsPort || SettingChecks.isAddress(metricsBindAddress), "--metrics-bind: unknown address " +
            metricsBindAddress);
        return this;
    }

    /**
     * @return how often the $SYS tree is published; 0 turns it off.
     */
    public long sysIntervalMs()
    {
        return sysIntervalMs;
    }

    public ObservabilitySettings sysIntervalMs(final long sysIntervalMs)
    {
        this.sysIntervalMs = sysIntervalMs;
        return this;
    }

    /**
     * @return /dev/shm/ringmq where /dev/shm is a writable directory (counters then never touch a disk), else
     * ringmq under java.io.tmpdir.
     */
    public static Path defaultCountersDir()
    {
        final Path shm = Path.of("/dev/shm");
        if (Files.isDirectory(shm) && Files.isWritable(shm))
        {
            return shm.resolve("ringmq");
        }
        return Path.of(System.getProperty("java.io.tmpdir"), "ringmq");
    }

    public Path countersDir()
    {
        return countersDir;
    }

    public ObservabilitySettings countersDir(final Path countersDir)
    {
        this.countersDir = null == countersDir ? defaultCountersDir() : countersDir;
        return this;
    }

    /**
     * @return the address the Prometheus endpoint listens on.
     */
    public String metricsBindAddress()
    {
        return metricsBindAddress;
    }

    /**
     * @return the port of the Prometheus endpoint ({@code /metrics}, {@code /health}): 0 when it is off,
     * {@link #METRICS_PORT_EPHEMERAL} for a free port the system picks.
     */
    public int metricsPort()
    {
        return metricsPort;
    }

    /**
     * @param bindAddress the address to serve {@code /metrics} and {@code /health} on (null: 127.0.0.1).
     * @param port        0 for off, {@link #METRICS_PORT_EPHEMERAL} for a free port.
     * @return this.
     */
    public ObservabilitySettings metricsEndpoint(final String bindAddress, final int port)
    {
        this.metricsBindAddress = null == bindAddress ? "127.0.0.1" : bindAddress;
        this.metricsPort = port;
        return this;
    }

    @Override
    public String toString()
    {
        return "sys-interval=" + sysIntervalMs + "ms counters-dir=" + countersDir +
            (0 == metricsPort ? "" : " metrics=" + metricsBindAddress + ":" + metricsPort);
    }
}
