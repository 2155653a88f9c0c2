package io.ringmq.loadtest;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import org.HdrHistogram.Recorder;
import org.HdrHistogram.SingleWriterRecorder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What one delivery's interval record costs the load generator when its driver threads share one {@link Recorder}
 * (as before) and when each driver has its own {@link SingleWriterRecorder} ({@link DeliveryRecorder} now). Run it
 * with as many threads as the generator's drivers ({@code -t N}): one thread shows no difference, the contention
 * shows from two threads on two cores.
 *
 * <pre>
 * mvn -q -Pbenchmarks -pl loadtest -am test-compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt \
 *     -Dmdep.includeScope=test
 * java -cp "loadtest/target/test-classes:loadtest/target/classes:$(cat loadtest/target/cp.txt)" \
 *     org.openjdk.jmh.Main IntervalRecorder -t 2
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class IntervalRecorderBenchmark
{
    /** One recorder that every benchmark thread writes. */
    @State(Scope.Benchmark)
    public static class Shared
    {
        final Recorder recorder = new Recorder(3);
    }

    /** A recorder per benchmark thread. */
    @State(Scope.Thread)
    public static class Own
    {
        final SingleWriterRecorder recorder = new SingleWriterRecorder(3);
    }

    @Benchmark
    public void sharedRecorder(final Shared shared)
    {
        shared.recorder.recordValue(latency());
    }

    @Benchmark
    public void recorderPerThread(final Own own)
    {
        own.recorder.recordValue(latency());
    }

    private static long latency()
    {
        return 50_000 + ThreadLocalRandom.current().nextInt(1_000_000); // 50 µs to 1 ms, in ns
    }
}
