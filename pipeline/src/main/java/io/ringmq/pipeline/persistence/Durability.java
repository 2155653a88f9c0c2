package io.ringmq.pipeline.persistence;

/**
 * When the persistence stage's group commits reach the disk ({@code --durability}). Every mode writes each batch to
 * the write-ahead log before the acknowledgements it carries leave, so a crash of the broker process (kill -9)
 * loses nothing acknowledged in any mode; the modes differ in what a crash of the machine (power, kernel) can lose.
 */
public enum Durability
{
    /** fsync with every group commit: nothing acknowledged is lost, even by the machine. */
    SYNC,
    /**
     * fsync every {@code --fsync-interval} (default 10 ms) on a thread of its own: a machine crash loses at most the
     * acknowledgements of that last interval.
     */
    PERIODIC,
    /** no fsync by the broker: a machine crash loses what the operating system had not yet written back. */
    NONE
}
