package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;

import java.io.IOException;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An I/O agent's {@link Acceptor}s, one per listener, registered on its selector and run on its thread: agent 0
 * accepts on every listener, the others have none. It owns the per-address counts they share, and takes the
 * listeners a reload adds (queued by the reloading thread) at the agent's next duty cycle, dropping those a reload
 * closed.
 */
final class Acceptors
{
    private final BrokerCounters counters;
    private final Selector selector;
    private final AtomicInteger connectionCount;
    private final MemoryBudget memoryBudget;
    private final AddressLimit addressLimit;
    private final ArrayList<Acceptor> acceptors = new ArrayList<>();
    /** Listeners a reload added, from the reloading thread (agent 0). */
    private final ManyToOneConcurrentLinkedQueue<Listener> addedListeners = new ManyToOneConcurrentLinkedQueue<>();
    /** The limits in force on this agent: a reload replaces them on this agent's thread. */
    private BrokerContext context;
    private IoAgent[] agents;
    private Wakeable[] agentWakes;

    Acceptors(final BrokerContext context, final BrokerCounters counters, final Selector selector,
        final AtomicInteger connectionCount, final MemoryBudget memoryBudget, final Listener[] listeners)
        throws IOException
    {
        this.context = context;
        this.counters = counters;
        this.selector = selector;
        this.connectionCount = connectionCount;
        this.memoryBudget = memoryBudget;
        this.addressLimit = new AddressLimit(context.maxConnectionsPerAddress(), context.limitLoopback());
        for (final Listener listener : listeners)
        {
            add(listener);
        }
    }

    /**
     * The agents an acceptor hands sockets to, and their wakes.
     */
    void wire(final IoAgent[] agents, final Wakeable[] agentWakes)
    {
        this.agents = agents;
        this.agentWakes = agentWakes;
        for (final Acceptor acceptor : acceptors)
        {
            acceptor.wire(agents, agentWakes);
        }
    }

    /**
     * Takes reloaded limits on this agent's thread: the per-address limit and what each acceptor admits by.
     */
    void limits(final BrokerContext next)
    {
        context = next;
        addressLimit.limits(next.maxConnectionsPerAddress(), next.limitLoopback());
        for (final Acceptor acceptor : acceptors)
        {
            acceptor.limits(next);
        }
    }

    private Acceptor add(final Listener listener) throws IOException
    {
        final Acceptor acceptor = new Acceptor(context, counters, listener, connectionCount, memoryBudget,
            addressLimit);
        acceptor.register(selector);
        acceptors.add(acceptor);
        return acceptor;
    }

    /**
     * Starts accepting on a listener a reload bound (any thread; agent 0 only).
     */
    void addListener(final Listener listener)
    {
        addedListeners.offer(listener);
    }

    /**
     * @return true when a reload added a listener not taken yet.
     */
    boolean hasAddedListeners()
    {
        return !addedListeners.isEmpty();
    }

    int drainAddedListeners()
    {
        int work = 0;
        Listener listener;
        while (null != (listener = addedListeners.poll()))
        {
            acceptors.removeIf(acceptor -> !acceptor.isOpen()); // the listeners a reload closed
            try
            {
                add(listener).wire(agents, agentWakes);
            }
            catch (final IOException ex)
            {
                listener.close(); // closed already by a reload that came after: nothing to accept on
            }
            work++;
        }
        return work;
    }
}
