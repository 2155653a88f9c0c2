package io.ringmq.transport;

import net.openhft.affinity.Affinity;
import org.agrona.concurrent.Agent;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code --pin io=2-9,auth=10,route=11,deliver=12-15,pipeline=3}: which cores each agent's thread is bound to.
 * Binding is real ({@code sched_setaffinity} through OpenHFT's affinity library) and is reported at start with
 * the affinity the thread then has.
 */
final class CorePinning
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");
    private final Map<String, List<Integer>> cores = new HashMap<>();

    CorePinning(final String spec)
    {
        if (null == spec || spec.isBlank())
        {
            return;
        }
        for (final String part : spec.split(","))
        {
            final String[] keyValue = part.split("=", 2);
            if (keyValue.length != 2)
            {
                throw new IllegalArgumentException("--pin: expected role=cores, got '" + part + "'");
            }
            final String role = keyValue[0].strip();
            if (!List.of("io", "auth", "route", "persist", "deliver", "pipeline").contains(role))
            {
                throw new IllegalArgumentException("--pin: unknown role '" + role +
                    "' (io, auth, route, persist, deliver, pipeline)");
            }
            cores.computeIfAbsent(role, r -> new ArrayList<>()).addAll(parseCores(keyValue[1].strip()));
        }
    }

    private static List<Integer> parseCores(final String text)
    {
        final List<Integer> list = new ArrayList<>();
        final int available = Runtime.getRuntime().availableProcessors();
        try
        {
            final String[] range = text.split("-", 2);
            final int from = Integer.parseInt(range[0]);
            final int to = range.length == 2 ? Integer.parseInt(range[1]) : from;
            for (int core = from; core <= to; core++)
            {
                if (core < 0)
                {
                    throw new IllegalArgumentException("--pin: negative core " + core);
                }
                list.add(core);
            }
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException("--pin: cannot read cores '" + text + "'");
        }
        if (list.isEmpty())
        {
            throw new IllegalArgumentException("--pin: empty core range '" + text + "'");
        }
        if (list.get(list.size() - 1) >= available)
        {
            LOG.log(System.Logger.Level.WARNING, "--pin names core " + list.get(list.size() - 1) + " but only " +
                available + " are available to this JVM");
        }
        return list;
    }

    /**
     * @return the role that pins {@code shared} threading's one thread, which runs the I/O agent and the stages:
     * {@code pipeline} when the spec names it, else {@code io}.
     */
    String sharedThreadRole()
    {
        return cores.containsKey("pipeline") ? "pipeline" : "io";
    }

    /**
     * @param role    io, auth, route, deliver or pipeline.
     * @param ordinal which agent of that role (I/O agents are numbered).
     * @return the agent, bound to its core when it starts if the role is pinned.
     */
    Agent pin(final String role, final int ordinal, final Agent agent)
    {
        final List<Integer> list = cores.get(role);
        if (null == list)
        {
            return agent;
        }
        final int core = list.get(ordinal % list.size());
        if (ordinal == list.size())
        {
            // once per role: more agents than cores named for it, so some share a core (harmful with busy-spin)
            LOG.log(System.Logger.Level.WARNING, "--pin " + role + " names " + list.size() + " core(s) for more " +
                role + " agents: " + agent.roleName() + " and later ones share them");
        }
        return new Agent()
        {
            public void onStart()
            {
                // a pin that fails costs placement, never the agent: an exception out of onStart would stop the
                // agent's thread before its first duty cycle, leaving a broker that accepts and never answers
                try
                {
                    Affinity.setAffinity(core);
                    final BitSet now = Affinity.getAffinity();
                    LOG.log(pinned(core, now) ? System.Logger.Level.INFO : System.Logger.Level.WARNING,
                        pinReport(agent.roleName(), core, now));
                }
                catch (final RuntimeException | LinkageError ex)
                {
                    // sched_setaffinity refuses a core outside the process's cpuset (EINVAL), or the native part
                    // fails to link
                    LOG.log(System.Logger.Level.WARNING, "could not pin " + agent.roleName() + " to core " + core +
                        " (" + ex + "): it runs wherever the scheduler puts it");
                }
                agent.onStart();
            }

            public int doWork() throws Exception
            {
                return agent.doWork();
            }

            public void onClose()
            {
                agent.onClose();
            }

            public String roleName()
            {
                return agent.roleName();
            }
        };
    }

    /**
     * @return whether the thread's affinity is the one core asked for (OpenHFT's library leaves it unchanged, and
     * answers an empty set, when it cannot load its native part).
     */
    static boolean pinned(final int core, final BitSet affinity)
    {
        return affinity.cardinality() == 1 && affinity.get(core);
    }

    /**
     * @return the start-up line for one pinned agent: where it now runs, or that it could not be pinned.
     */
    static String pinReport(final String agent, final int core, final BitSet affinity)
    {
        return pinned(core, affinity) ? "pinned " + agent + " to core " + core + "; thread affinity now " + affinity :
            "could not pin " + agent + " to core " + core + " (thread affinity " + affinity +
            "): it runs wherever the scheduler puts it; see the affinity library's warning above";
    }
}
