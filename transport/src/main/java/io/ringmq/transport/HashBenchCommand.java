package io.ringmq.transport;

import io.ringmq.pipeline.auth.PasswordHash;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code ringmq passwd-bench}: what one password check costs on this machine at several PBKDF2-SHA512 iteration
 * counts, on one core and on several worker threads at once, against the connect storm a password file must
 * survive with an empty cache (5,000 CONNECTs/s, each with a user name and password). The figures behind
 * {@link PasswordHash#DEFAULT_ITERATIONS} (README, "Passwords").
 */
@Command(name = "passwd-bench", mixinStandardHelpOptions = true,
    description = "Measure password checks per second at several PBKDF2 iteration counts (bounded run).")
final class HashBenchCommand implements Callable<Integer>
{
    @Option(names = "--iterations", split = ",", paramLabel = "N,N,...",
        description = "Iteration counts to measure (default: ${DEFAULT-VALUE}).")
    int[] iterations = {101, 1_000, 2_000, 5_000, 10_000, 20_000};

    @Option(names = "--seconds", description = "Seconds per measurement window (default: ${DEFAULT-VALUE}).")
    double seconds = 0.5;

    @Option(names = "--windows", description = "Windows per row; the best is printed (default: ${DEFAULT-VALUE}).")
    int windows = 5;

    @Option(names = "--threads", description = "Worker threads for the parallel row (default: cores).")
    Integer threads;

    @Option(names = "--storm", description = "CONNECTs per second to size against (default: ${DEFAULT-VALUE}).")
    int storm = 5_000;

    public Integer call() throws Exception
    {
        final int parallel = null == threads ? Runtime.getRuntime().availableProcessors() : threads;
        final byte[] wrong = "not-the-password".getBytes(StandardCharsets.UTF_8);
        System.out.printf("%10s %14s %14s %18s %16s%n", "iterations", "ms per check", "checks/s 1 core",
            "checks/s " + parallel + " thr", "cores for " + storm + "/s");
        for (final int count : iterations)
        {
            final PasswordHash hash = PasswordHash.create("correct horse battery staple", count);
            hash.matches(wrong); // warm
            double single = 0;
            double many = 0;
            for (int window = 0; window < windows; window++) // best window: the least disturbed by other load
            {
                single = Math.max(single, rate(hash, wrong, 1));
                many = Math.max(many, rate(hash, wrong, parallel));
            }
            System.out.printf("%10d %14.3f %14.0f %18.0f %16.1f%n", count, 1_000.0 / single, single, many,
                storm / single);
        }
        return 0;
    }

    private double rate(final PasswordHash hash, final byte[] password, final int threadCount)
        throws InterruptedException
    {
        final long endNs = System.nanoTime() + (long)(seconds * 1e9);
        final AtomicLong checks = new AtomicLong();
        final Thread[] workers = new Thread[threadCount];
        final long startNs = System.nanoTime();
        for (int i = 0; i < threadCount; i++)
        {
            workers[i] = new Thread(() ->
            {
                long done = 0;
                while (System.nanoTime() < endNs)
                {
                    hash.matches(password);
                    done++;
                }
                checks.addAndGet(done);
            }, "passwd-bench-" + i);
            workers[i].start();
        }
        for (final Thread worker : workers)
        {
            worker.join();
        }
        return checks.get() * 1e9 / (System.nanoTime() - startNs);
    }
}
