package io.ringmq.pipeline;

/**
 * Who owns a single-writer structure: the first thread that touches it. Owners call {@code assert
 * owner.isCurrent()} on every entry point (checked with {@code -ea}, as in tests; free otherwise), as the
 * Disruptor's single-producer sequencer does, so a second writer fails loudly instead of racing quietly.
 * {@link #release()} hands the structure on, e.g. when an agent moves from a set-up thread to its own.
 */
public final class OwnerThread
{
    private final String what;
    private Thread owner;

    /**
     * @param what the structure, for the assertion message.
     */
    public OwnerThread(final String what)
    {
        this.what = what;
    }

    /**
     * @return true when the calling thread owns the structure (claiming it if nobody does yet).
     * @throws AssertionError naming both threads when another thread owns it.
     */
    public boolean isCurrent()
    {
        final Thread current = Thread.currentThread();
        if (null == owner)
        {
            owner = current;
            return true;
        }
        if (owner != current)
        {
            throw new AssertionError(what + " is owned by " + owner.getName() + ", touched by " + current.getName());
        }
        return true;
    }

    /**
     * Lets the next thread that touches the structure own it.
     */
    public void release()
    {
        owner = null;
    }
}
