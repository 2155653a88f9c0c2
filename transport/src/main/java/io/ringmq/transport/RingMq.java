package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.concurrent.errors.ErrorLogReader;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A ringmq broker running inside this JVM, for a program that embeds one or a test that needs one:
 * <pre>{@code
 * try (RingMq broker = RingMq.builder().start())          // 127.0.0.1, a free port
 * {
 *     MqttClient client = new MqttClient(broker.uri(), "c1", new MemoryPersistence());
 *     client.connect();
 *     ...
 * }                                                        // stops every thread, closes every connection
 * }</pre>
 * It is the same broker the {@code ringmq} command line runs ({@link Broker}), started from a {@link RingMqBuilder}
 * that takes the command line's options. {@link #close()} may be called any number of times, from any thread.
 */
public final class RingMq implements AutoCloseable
{
    private final Broker broker;
    private final BrokerContext context;
    private final Path temporaryCountersDir;
    private final String host;
    private boolean closed;

    RingMq(final Broker broker, final BrokerContext context, final Path temporaryCountersDir)
    {
        this.broker = broker;
        this.context = context;
        this.temporaryCountersDir = temporaryCountersDir;
        host = connectHost(context.bindAddress());
    }

    /**
     * @return a builder with the embedded defaults: 127.0.0.1, a free port, anonymous clients from loopback only,
     *         counters in a temporary directory.
     */
    public static RingMqBuilder builder()
    {
        return new RingMqBuilder();
    }

    /**
     * @return the port the broker listens on (the one picked when port 0 was asked for).
     */
    public int port()
    {
        return broker.port();
    }

    /**
     * @return the address a client on this machine connects to: the bind address, or 127.0.0.1 when the broker
     *         listens on every address.
     */
    public String host()
    {
        return host;
    }

    /**
     * @return the broker's address as MQTT clients take it, e.g. {@code tcp://127.0.0.1:40123}.
     */
    public String uri()
    {
        return "tcp://" + (host.indexOf(':') >= 0 ? '[' + host + ']' : host) + ':' + port();
    }

    /**
     * @return the broker's counters (indexes in {@link BrokerCounters}); readable after close.
     */
    public BrokerCounters counters()
    {
        return broker.counters();
    }

    /**
     * @return how many unexpected errors the broker counted ({@link BrokerCounters#UNEXPECTED_ERRORS}): a healthy
     *         broker has none, whatever its clients sent.
     */
    public long unexpectedErrors()
    {
        return broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS);
    }

    /**
     * @return each distinct unexpected error the broker recorded, with how often it was seen and its stack trace
     *         (empty when there was none); readable after close.
     */
    public List<String> errors()
    {
        final List<String> errors = new ArrayList<>();
        ErrorLogReader.read(broker.counters().file().errorLogBuffer(),
            (count, firstMs, lastMs, encoded) -> errors.add(count + " x " + encoded));
        return errors;
    }

    /**
     * @return the counters file {@code ringmq stat} reads, while the broker runs.
     */
    public Path countersFile()
    {
        return broker.countersFile();
    }

    /**
     * @return the number of sessions the broker holds (a racy read).
     */
    public int sessionCount()
    {
        return broker.sessionCount();
    }

    /**
     * @return the settings the broker runs with, checked.
     */
    public BrokerContext context()
    {
        return context;
    }

    /**
     * @return the broker itself, for what this class does not offer.
     */
    public Broker broker()
    {
        return broker;
    }

    /**
     * Runs one duty cycle of every agent on the calling thread, for a broker started with
     * {@link BrokerContext.Threading#INVOKER} threading.
     *
     * @return the work done (0 when every agent was idle).
     * @throws IllegalStateException in any other threading mode.
     */
    public int invoke()
    {
        return broker.invoke();
    }

    /**
     * @return whether {@link #close()} was called.
     */
    public synchronized boolean isClosed()
    {
        return closed;
    }

    /**
     * Stops the broker: stops accepting, closes every connection, stops every thread and removes the temporary
     * counters directory. Does nothing when already closed.
     */
    public void close()
    {
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
        }
        broker.close();
        deleteQuietly(temporaryCountersDir);
    }

    public String toString()
    {
        return "ringmq on " + uri() + (isClosed() ? " (closed)" : "");
    }

    static void deleteQuietly(final Path directory)
    {
        if (null != directory)
        {
            try
            {
                Files.deleteIfExists(directory);
            }
            catch (final IOException ignore)
            {
                // not empty or already gone: a temporary directory, left for the system to clean
            }
        }
    }

    private static String connectHost(final String bindAddress)
    {
        try
        {
            return InetAddress.getByName(bindAddress).isAnyLocalAddress() ? "127.0.0.1" : bindAddress;
        }
        catch (final UnknownHostException ex)
        {
            return bindAddress; // it was bound, so it resolved once: keep the name as given
        }
    }
}
