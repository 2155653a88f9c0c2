package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ReloadPlan;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.LiveLimits;
import io.ringmq.pipeline.Pipeline;
import io.ringmq.pipeline.auth.AclFile;
import io.ringmq.pipeline.auth.PasswordFile;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A running broker's live reload ({@link Broker#reload(BrokerContext)}): reads the password and ACL files again,
 * diffs the listeners a new configuration names against those the broker has (binding the new ones, closing the
 * dropped ones, keeping the same ones' sockets), and publishes the new live limits to their owners. It owns the
 * paths of the password and ACL files a reload reads again; the listeners stay the broker's, handed in and back.
 * <p>
 * Runs on the reloading thread (a SIGHUP's, from {@link Main#reloadOnSignal}, or a caller of {@link Broker#reload}),
 * one reload at a time and never overlapping the broker's close: the broker's monitor holds both. What it publishes
 * (listeners to the accepting I/O agent, limits to every owner) is taken on the owners' threads.
 */
final class LiveReload
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");

    /** How long a reload waits for every owner to take its limits (each does within a duty cycle, unless stuck). */
    static final long LIMITS_TAKEN_TIMEOUT_MS = 5_000;

    private final BrokerContext context;
    private final TlsTaskExecutor tlsTasks;
    private final Pipeline pipeline;
    private final IoAgent acceptingAgent;
    private final AgentThreads threads;
    /** The password and ACL files a reload reads again (a reload with a new configuration may name others). */
    private volatile Path passwordFile;
    private volatile Path aclFile;

    /**
     * @param context        the configuration the broker started with: its password and ACL files, its backlog.
     * @param acceptingAgent the I/O agent that accepts on every listener.
     */
    LiveReload(final BrokerContext context, final TlsTaskExecutor tlsTasks, final Pipeline pipeline,
        final IoAgent acceptingAgent, final AgentThreads threads)
    {
        this.context = context;
        this.tlsTasks = tlsTasks;
        this.pipeline = pipeline;
        this.acceptingAgent = acceptingAgent;
        this.threads = threads;
        this.passwordFile = context.auth().passwordFile();
        this.aclFile = context.auth().aclFile();
    }

    /**
     * Reloads as {@link Broker#reload(BrokerContext)} says.
     *
     * @param next      the configuration now, or null to read the same files again.
     * @param current   the listeners the broker has now.
     * @param listening takes the listeners the broker has after the reload, before the limits are published.
     * @return what was reloaded, one line.
     */
    String reload(final BrokerContext next, final Listener[] current, final Consumer<Listener[]> listening)
        throws IOException
    {
        final Path passwordPath = null == next ? passwordFile : next.auth().passwordFile();
        final Path aclPath = null == next ? aclFile : next.auth().aclFile();
        final List<ListenerSettings> added = new ArrayList<>();
        final List<Listener> kept = new ArrayList<>();
        final List<Listener> removed = new ArrayList<>();
        final List<ListenerSettings> retuned = new ArrayList<>(); // for kept.get(i): null, or its new settings
        if (null != next)
        {
            diff(current, next.listeners(), added, kept, retuned, removed);
        }
        else
        {
            kept.addAll(List.of(current)); // the same files again: every listener stays
            kept.forEach(listener -> retuned.add(null));
        }
        Listener[] bound = new Listener[0];
        final TlsContext[] renewed = new TlsContext[kept.size()];
        final SocketLayers[] relayered = new SocketLayers[kept.size()]; // kept sockets whose layers change
        try
        {
            refuseSwitching(passwordPath, passwordFile, "password file");
            refuseSwitching(aclPath, aclFile, "ACL file");
            // both read, and new listeners bound, before anything is taken: a bad one keeps the old configuration
            final PasswordFile file = null == passwordPath ? null : PasswordFile.load(passwordPath);
            final AclFile acl = null == aclPath ? null : AclFile.load(aclPath);
            for (int i = 0; i < renewed.length; i++)
            {
                final ListenerSettings retune = retuned.get(i);
                if (null != retune && !retune.sameSocket(kept.get(i).settings))
                {
                    relayered[i] = SocketLayers.of(retune, tlsTasks); // its files read: a bad one fails the reload
                }
                else
                {
                    renewed[i] = kept.get(i).layers.freshTls(); // certificates, keys, CRLs renewed at the same paths
                }
            }
            bound = Listener.bindAll(added, context.acceptBacklog(), tlsTasks);
            if (null != file)
            {
                pipeline.reloadPasswordFile(file);
            }
            if (null != acl)
            {
                pipeline.reloadAclFile(acl);
            }
            passwordFile = passwordPath;
            aclFile = aclPath;
        }
        catch (final IOException | IllegalArgumentException ex)
        {
            Listener.closeAll(bound);
            LOG.log(System.Logger.Level.WARNING, "reload failed, keeping the old configuration: " + ex.getMessage());
            throw ex;
        }
        int tlsRenewed = 0;
        final List<Listener> retunedNow = new ArrayList<>();
        for (int i = 0; i < renewed.length; i++)
        {
            if (null != renewed[i])
            {
                kept.get(i).layers.tls(renewed[i]);
                tlsRenewed++;
            }
            if (null != relayered[i])
            {
                kept.get(i).layers = relayered[i]; // the sockets it accepts from now on; those it holds keep theirs
            }
            if (null != retuned.get(i))
            {
                kept.get(i).settings = retuned.get(i); // its next accepts and CONNECTs; its socket stays
                retunedNow.add(kept.get(i));
            }
        }
        for (final Listener listener : removed)
        {
            listener.close(); // stops accepting; its connections stay
        }
        final List<Listener> now = new ArrayList<>(kept);
        for (final Listener listener : bound)
        {
            now.add(listener);
            acceptingAgent.addListener(listener);
        }
        threads.wake(0);
        listening.accept(now.toArray(new Listener[0]));
        final String limitsDone = null == next ? "" : reloadLimits(next);
        final String done = "reloaded" + (null == passwordPath ? "" : " " + passwordPath) +
            (null == aclPath ? "" : " " + aclPath) + (added.isEmpty() && removed.isEmpty() ? "" :
            "; listeners: " + (bound.length > 0 ? "+" + java.util.Arrays.toString(bound) : "") +
            (removed.isEmpty() ? "" : " -" + removed)) + (retunedNow.isEmpty() ? "" : "; listener settings: " +
            retunedNow) + (0 == tlsRenewed ? "" : "; TLS files read again for " +
            tlsRenewed + " listener(s)") + limitsDone;
        LOG.log(System.Logger.Level.INFO, "reload: " + done);
        return done;
    }

    /**
     * Publishes the live limits of {@code next} to every owner (I/O agents, stages), wakes them and waits until each
     * has taken them; logs the settings that changed but need a restart, which keep their old value.
     *
     * @return what changed, for the reload's line.
     */
    private String reloadLimits(final BrokerContext next)
    {
        final LiveLimits live = pipeline.limits();
        final BrokerContext running = live.current();
        final List<String> restart = new java.util.ArrayList<>(ReloadPlan.restartOnlyChanges(running, next));
        if (!context.bridges().toString().equals(next.bridges().toString()))
        {
            restart.add("connection (bridges)"); // a bridge runs as started, as in Mosquitto 2.0
        }
        if (!restart.isEmpty())
        {
            LOG.log(System.Logger.Level.WARNING, "needs a restart: " + String.join(", ", restart) +
                " (the old values stay until then)");
        }
        final List<String> changed = ReloadPlan.liveChanges(running, next);
        if (changed.isEmpty())
        {
            return "";
        }
        live.publish(ReloadPlan.liveContext(running, next));
        threads.wakeIoAgents();
        if (!threads.invoked() && !live.awaitTaken(LIMITS_TAKEN_TIMEOUT_MS))
        {
            LOG.log(System.Logger.Level.WARNING, "reload: not every agent has taken the new limits within " +
                LIMITS_TAKEN_TIMEOUT_MS + " ms; they take them at their next duty cycle");
        }
        return "; limits: " + String.join(", ", changed);
    }

    /**
     * Turning a password or ACL file on or off changes how every stage decides: it takes a restart.
     */
    private static void refuseSwitching(final Path next, final Path now, final String what)
    {
        if ((null == next) != (null == now))
        {
            throw new IllegalArgumentException("turning the " + what + " " + (null == next ? "off" : "on") +
                " takes a restart");
        }
    }

    /**
     * Sorts the listeners {@code wanted} against {@code current}: settings no current listener has ({@code added}),
     * current listeners with the same settings, or the same address with other settings ({@code kept}, with those
     * settings at the same index of {@code retuned}, else null), and the current ones nothing wants
     * ({@code removed}). Exact matches are found first, then the same sockets, then the same addresses.
     */
    private static void diff(final Listener[] current, final List<ListenerSettings> wanted,
        final List<ListenerSettings> added, final List<Listener> kept, final List<ListenerSettings> retuned,
        final List<Listener> removed)
    {
        final List<Listener> unmatched = new ArrayList<>(List.of(current));
        List<ListenerSettings> unplaced = wanted;
        for (final Match match : Match.values()) // the closest matches first
        {
            unplaced = place(match, unplaced, unmatched, kept, retuned);
        }
        added.addAll(unplaced);
        removed.addAll(unmatched);
    }

    /**
     * Gives each of {@code wanted} the first of {@code unmatched} that matches it (taken from there, added to
     * {@code kept}, with its new settings in {@code retuned} unless every setting matched).
     *
     * @return those for which none matched.
     */
    private static List<ListenerSettings> place(final Match match, final List<ListenerSettings> wanted,
        final List<Listener> unmatched, final List<Listener> kept, final List<ListenerSettings> retuned)
    {
        final List<ListenerSettings> unplaced = new ArrayList<>();
        for (final ListenerSettings settings : wanted)
        {
            final Listener found = find(unmatched, settings, match);
            if (null == found)
            {
                unplaced.add(settings);
            }
            else
            {
                unmatched.remove(found);
                kept.add(found);
                retuned.add(match == Match.SETTINGS ? null : settings);
            }
        }
        return unplaced;
    }

    /** How much of a current listener a wanted one must share to take it over. */
    private enum Match
    {
        /** Every setting. */
        SETTINGS,
        /** The socket and its layers. */
        SOCKET,
        /** The port and address. */
        ADDRESS
    }

    private static Listener find(final List<Listener> listeners, final ListenerSettings settings, final Match match)
    {
        for (final Listener listener : listeners)
        {
            final ListenerSettings now = listener.settings;
            if (match == Match.SETTINGS ? now.sameAs(settings) : match == Match.SOCKET ? now.sameSocket(settings) :
                now.sameAddress(settings))
            {
                return listener;
            }
        }
        return null;
    }
}
