package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.CloseHelper;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The accepting role for one {@link Listener}: owns its listening socket (registered on I/O agent 0's selector,
 * run on that agent's thread), admits or refuses each new socket, and hands admitted ones round-robin to the I/O
 * agents. A socket is closed at once, and counted, when the broker holds {@code --max-connections}, when the
 * listener holds its {@code max_connections}, when the memory in use is over {@code --memory-budget}, or when its
 * address holds {@code --max-connections-per-address}. Behind a PROXY-protocol listener the socket's peer is the
 * proxy: the per-address limit and the loopback rule wait for the client's address in the header.
 */
final class Acceptor
{
    /**
     * An admitted socket on its way to its agent, and what its close must give back: its connection takes what it
     * needs of it and drops it (an idle connection holds no more than it must: docs/perf/2026-12-05-idle-rss.md).
     */
    static final class Accepted
    {
        final SocketChannel channel;
        final Listener listener;
        /** The listener's layers when the socket was accepted: a reload may give the listener others. */
        final SocketLayers layers;
        final boolean loopback;
        /** Behind a PROXY-protocol listener: the client's address comes in the header. */
        final boolean proxied;
        /** The address counted against the per-address limit, or null when exempt (or not known yet). */
        final InetAddress limitedAddress;
        final AddressLimit addressLimit;

        Accepted(final SocketChannel channel, final Listener listener, final boolean loopback,
            final InetAddress limitedAddress, final AddressLimit addressLimit)
        {
            this(channel, listener, null == listener ? null : listener.layers, loopback, limitedAddress, addressLimit);
        }

        /**
         * @param layers the listener's layers as the acceptor read them once for this socket.
         */
        Accepted(final SocketChannel channel, final Listener listener, final SocketLayers layers,
            final boolean loopback, final InetAddress limitedAddress, final AddressLimit addressLimit)
        {
            this.channel = channel;
            this.listener = listener;
            this.layers = layers;
            this.proxied = null != layers && layers.proxied();
            this.loopback = loopback;
            this.limitedAddress = limitedAddress;
            this.addressLimit = addressLimit;
        }

        /**
         * Gives back what this socket holds against the limits, when it ends before it became a connection.
         */
        void release(final AtomicInteger connectionCount)
        {
            Acceptor.release(connectionCount, listener, addressLimit, limitedAddress);
        }
    }

    /**
     * Gives back what a socket holds against the limits; once, when it ends.
     *
     * @param limitedAddress the address it counts against the per-address limit; null: none.
     */
    static void release(final AtomicInteger connectionCount, final Listener listener, final AddressLimit addressLimit,
        final InetAddress limitedAddress)
    {
        connectionCount.decrementAndGet();
        if (null != listener)
        {
            listener.release();
        }
        if (null != limitedAddress)
        {
            addressLimit.release(limitedAddress);
        }
    }

    /** The limits in force; a reload replaces them on the owning agent's thread. */
    private BrokerContext context;
    private final BrokerCounters counters;
    private final Listener listener;
    private final ServerSocketChannel server;
    private final AtomicInteger connectionCount;
    private final MemoryBudget memoryBudget;
    private final AddressLimit addressLimit;
    private IoAgent[] agents;
    private Wakeable[] agentWakes;
    private int nextAgent;

    /**
     * @param addressLimit the per-address counts, shared by every listener's acceptor.
     */
    Acceptor(final BrokerContext context, final BrokerCounters counters, final Listener listener,
        final AtomicInteger connectionCount, final MemoryBudget memoryBudget, final AddressLimit addressLimit)
    {
        this.context = context;
        this.counters = counters;
        this.listener = listener;
        this.server = listener.server;
        this.connectionCount = connectionCount;
        this.memoryBudget = memoryBudget;
        this.addressLimit = addressLimit;
    }

    void register(final Selector selector) throws IOException
    {
        server.register(selector, SelectionKey.OP_ACCEPT, this);
    }

    void wire(final IoAgent[] agents, final Wakeable[] agentWakes)
    {
        this.agents = agents;
        this.agentWakes = agentWakes;
    }

    /**
     * @return whether its listening socket is still open (a reload may have closed it).
     */
    boolean isOpen()
    {
        return server.isOpen();
    }

    AddressLimit addressLimit()
    {
        return addressLimit;
    }

    /**
     * Takes every pending socket. A listening socket closed under it (the broker closing, a reload) takes none: its key
     * was ready when the selector looked, the socket closed on another thread since.
     *
     * @return how many were taken (admitted or refused).
     */
    int accept() throws IOException
    {
        int accepted = 0;
        SocketChannel channel;
        while (null != (channel = takeNext()))
        {
            accepted++;
            final Accepted admitted = admit(channel);
            if (null == admitted)
            {
                CloseHelper.quietClose(channel);
                continue;
            }
            handOff(admitted);
        }
        return accepted;
    }

    /**
     * @return the next pending socket, or null when none is pending or the listening socket is closed.
     */
    private SocketChannel takeNext() throws IOException
    {
        try
        {
            return server.accept();
        }
        catch (final java.nio.channels.ClosedChannelException ex)
        {
            return null; // closed by another thread after the selector found it ready (AsynchronousCloseException too)
        }
    }

    /**
     * @return the admitted socket, counted against every limit, or null (counted as refused).
     */
    private Accepted admit(final SocketChannel channel)
    {
        if (!listener.admits(channel))
        {
            return null; // not one of the warm-up's own sockets on its listener
        }
        if (connectionCount.incrementAndGet() > context.limits().maxConnections())
        {
            connectionCount.decrementAndGet();
            counters.increment(BrokerCounters.CONNECTIONS_REFUSED_LIMIT);
            return null;
        }
        if (memoryBudget.isOver())
        {
            connectionCount.decrementAndGet();
            counters.increment(BrokerCounters.CONNECTIONS_REFUSED_MEMORY);
            return null;
        }
        if (!listener.tryAcquire())
        {
            connectionCount.decrementAndGet();
            counters.increment(BrokerCounters.CONNECTIONS_REFUSED_LIMIT);
            return null;
        }
        final SocketLayers layers = listener.layers; // read once: a reload may give the listener others
        final boolean proxied = layers.proxied();
        final InetAddress address = remoteAddress(channel);
        final boolean limited = !proxied && addressLimit.applies(address); // behind a proxy: the header's address
        if (limited && !addressLimit.tryAcquire(address))
        {
            connectionCount.decrementAndGet();
            listener.release();
            counters.increment(BrokerCounters.CONNECTIONS_REFUSED_PER_ADDRESS);
            return null;
        }
        final boolean loopback = !proxied && null != address && address.isLoopbackAddress();
        return new Accepted(channel, listener, layers, loopback, limited ? address : null, addressLimit);
    }

    private void handOff(final Accepted admitted)
    {
        final int target = nextAgent++ % agents.length;
        for (int i = 0; i < agents.length; i++) // the next agent, or the first after it with room in its queue
        {
            final int agent = (target + i) % agents.length;
            if (agents[agent].offer(admitted))
            {
                counters.increment(BrokerCounters.CONNECTIONS_ACCEPTED);
                agentWakes[agent].wake();
                return;
            }
        }
        admitted.release(connectionCount);
        counters.increment(BrokerCounters.CONNECTIONS_REFUSED_LIMIT);
        CloseHelper.quietClose(admitted.channel);
    }

    private static InetAddress remoteAddress(final SocketChannel channel)
    {
        try
        {
            final SocketAddress remote = channel.getRemoteAddress();
            return remote instanceof InetSocketAddress ? ((InetSocketAddress)remote).getAddress() : null;
        }
        catch (final IOException ex)
        {
            return null;
        }
    }

    /**
     * @param next the limits from now on (a reload; the owning agent's thread).
     */
    void limits(final BrokerContext next)
    {
        this.context = next;
    }
}
