package io.ringmq.pipeline;

import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs a test body on a thread with a small stack (256 KiB), so that code recursing once per topic level fails
 * with a {@link StackOverflowError} on a deep topic while an iterative walk passes.
 */
public final class SmallStack
{
    /** The stack size of the thread, in bytes. */
    public static final long STACK_LENGTH = 256 * 1024;

    private SmallStack()
    {
    }

    /**
     * A test body that may throw.
     */
    @FunctionalInterface
    public interface Body
    {
        /**
         * @throws Exception to fail the test.
         */
        void run() throws Exception;
    }

    /**
     * Runs the body on a small-stack thread, waits for it and rethrows whatever it threw, a
     * {@link StackOverflowError} included.
     */
    public static void run(final Body body) throws Exception
    {
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread thread = new Thread(null, () ->
        {
            try
            {
                body.run();
            }
            catch (final Throwable t)
            {
                failure.set(t);
            }
        }, "small-stack", STACK_LENGTH);
        thread.start();
        thread.join();
        final Throwable t = failure.get();
        if (t instanceof Exception)
        {
            throw (Exception)t;
        }
        if (t instanceof Error)
        {
            throw (Error)t;
        }
    }
}
