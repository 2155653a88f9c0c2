package io.ringmq.pipeline.status;

/**
 * Where a stage reports, for each PUBLISH it has finished with, the nanoseconds since its I/O agent read it. One
 * sink per stage step, called only on that step's thread; it must not allocate or block.
 */
@FunctionalInterface
public interface LatencySink
{
    /**
     * @param ns nanoseconds from the I/O agent's duty cycle that read the packet to the end of this stage's work.
     */
    void record(long ns);
}
