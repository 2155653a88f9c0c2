package io.ringmq.loadtest;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Samples a process's CPU time and resident memory from /proc once a second: the broker's (to report its CPU
 * seconds, average and peak CPU %, and peak RSS) and the generator's own (so a reader sees when the generator
 * was the bottleneck).
 */
final class ProcSampler implements AutoCloseable
{
    private static final double TICKS_PER_SECOND = 100.0; // USER_HZ, 100 on Linux

    private final long pid;
    private final Thread thread;
    private final long startCpuTicks;
    private final long startNs;
    private volatile boolean running = true;
    private volatile long lastCpuTicks;
    private volatile long peakRssKb;
    private volatile double peakCpuPercent;

    ProcSampler(final long pid)
    {
        this.pid = pid;
        this.startCpuTicks = cpuTicks();
        this.lastCpuTicks = startCpuTicks;
        this.startNs = System.nanoTime();
        this.peakRssKb = rssKb();
        thread = new Thread(this::run, "proc-sampler-" + pid);
        thread.setDaemon(true);
        thread.start();
    }

    private void run()
    {
        long previousTicks = startCpuTicks;
        long previousNs = startNs;
        while (running)
        {
            try
            {
                Thread.sleep(1000);
            }
            catch (final InterruptedException ex)
            {
                return;
            }
            final long ticks = cpuTicks();
            final long now = System.nanoTime();
            if (ticks >= 0)
            {
                final double percent = (ticks - previousTicks) / TICKS_PER_SECOND * 1e11 / (now - previousNs);
                peakCpuPercent = Math.max(peakCpuPercent, percent);
                lastCpuTicks = ticks;
            }
            peakRssKb = Math.max(peakRssKb, rssKb());
            previousTicks = ticks;
            previousNs = now;
        }
    }

    boolean isAvailable()
    {
        return startCpuTicks >= 0;
    }

    double cpuSeconds()
    {
        final long ticks = cpuTicks();
        return ((ticks >= 0 ? ticks : lastCpuTicks) - startCpuTicks) / TICKS_PER_SECOND;
    }

    double averageCpuPercent()
    {
        return cpuSeconds() * 1e11 / Math.max(1, System.nanoTime() - startNs);
    }

    double peakCpuPercent()
    {
        return peakCpuPercent;
    }

    double peakRssMb()
    {
        return Math.max(peakRssKb, rssKb()) / 1024.0;
    }

    private long cpuTicks()
    {
        try
        {
            final String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            final String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime + stime
        }
        catch (final IOException | RuntimeException ex)
        {
            return -1;
        }
    }

    private long rssKb()
    {
        try
        {
            for (final String line : Files.readAllLines(Path.of("/proc/" + pid + "/status")))
            {
                if (line.startsWith("VmRSS:"))
                {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        }
        catch (final IOException | RuntimeException ignore)
        {
            // the process is gone or /proc is not there
        }
        return 0;
    }

    public void close()
    {
        running = false;
        thread.interrupt();
    }

    /**
     * Finds the process listening on a local TCP port through /proc/net/tcp{,6} and the owners' fd tables.
     *
     * @return the pid, or -1.
     */
    static long findListener(final int port)
    {
        final String hexPort = String.format(":%04X", port);
        String inode = null;
        for (final String table : List.of("/proc/net/tcp", "/proc/net/tcp6"))
        {
            try
            {
                for (final String line : Files.readAllLines(Path.of(table)))
                {
                    final String[] f = line.trim().split("\\s+");
                    if (f.length > 9 && f[1].endsWith(hexPort) && "0A".equals(f[3]))
                    {
                        inode = f[9];
                    }
                }
            }
            catch (final IOException ignore)
            {
                // no such table
            }
        }
        if (null == inode)
        {
            return -1;
        }
        final String target = "socket:[" + inode + "]";
        try (DirectoryStream<Path> processes = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*"))
        {
            for (final Path process : processes)
            {
                try (DirectoryStream<Path> fds = Files.newDirectoryStream(process.resolve("fd")))
                {
                    for (final Path fd : fds)
                    {
                        if (target.equals(Files.readSymbolicLink(fd).toString()))
                        {
                            return Long.parseLong(process.getFileName().toString());
                        }
                    }
                }
                catch (final IOException | SecurityException ignore)
                {
                    // not ours to look at
                }
            }
        }
        catch (final IOException ignore)
        {
            // no /proc
        }
        return -1;
    }
}
