package io.ringmq.transport;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The small shared pool that runs {@code SSLEngine} delegated tasks (key exchange, signatures, certificate checks)
 * for every TLS connection of a broker, so a handshake never blocks or monopolises an I/O agent: a fixed number of
 * named daemon threads ({@code ringmq-tls-N}) and a bounded queue. A task the full queue cannot take is refused
 * and counted (a handshake flood): the connection that asked is closed, nobody waits. One per broker, closed with
 * it.
 */
final class TlsTaskExecutor implements Executor, AutoCloseable
{
    /** The default thread count: a quarter of the cores, at least 1, at most 4 ({@code --tls-threads}). */
    static final int DEFAULT_THREADS = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 4));
    /** The default queue: handshakes waiting for a thread beyond this are refused. */
    static final int DEFAULT_QUEUE_CAPACITY = 4096;

    private final ThreadPoolExecutor pool;
    private final AtomicLong rejected = new AtomicLong();

    TlsTaskExecutor()
    {
        this(DEFAULT_THREADS, DEFAULT_QUEUE_CAPACITY);
    }

    /**
     * @param threads       the threads that run delegated tasks.
     * @param queueCapacity the tasks that may wait for a thread; more are refused.
     */
    TlsTaskExecutor(final int threads, final int queueCapacity)
    {
        final AtomicInteger seq = new AtomicInteger();
        pool = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(queueCapacity), (runnable) ->
            {
                final Thread thread = new Thread(runnable, "ringmq-tls-" + seq.getAndIncrement());
                thread.setDaemon(true);
                return thread;
            }, new ThreadPoolExecutor.AbortPolicy());
    }

    /**
     * @throws RejectedExecutionException when the queue is full or the executor is closed (counted).
     */
    public void execute(final Runnable task)
    {
        try
        {
            pool.execute(task);
        }
        catch (final RejectedExecutionException ex)
        {
            rejected.incrementAndGet();
            throw ex;
        }
    }

    /**
     * @return tasks refused so far (queue full, or closed).
     */
    long rejectedCount()
    {
        return rejected.get();
    }

    /**
     * @return tasks waiting for a thread now.
     */
    int queuedCount()
    {
        return pool.getQueue().size();
    }

    /**
     * Stops taking tasks and waits a little for those running (a handshake is a few milliseconds).
     */
    public void close()
    {
        pool.shutdownNow();
        try
        {
            pool.awaitTermination(1, TimeUnit.SECONDS);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }
}
