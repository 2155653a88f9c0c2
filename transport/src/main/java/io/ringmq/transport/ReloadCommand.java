package io.ringmq.transport;

import io.ringmq.pipeline.ObservabilitySettings;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.CountersFileReader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code ringmq reload}: asks a running broker to reload its password file without dropping clients, by sending it
 * SIGHUP (as {@code kill -HUP} would). The broker is found by its counters file, as {@code ringmq stat} finds it.
 */
@Command(name = "reload", mixinStandardHelpOptions = true,
    description = "Reload a running broker's configuration (SIGHUP): its config file, password and ACL files, "
        + "listeners and limits; clients whose entry was removed or changed are disconnected, the others stay. "
        + "Settings that need a restart are named in the broker's log.")
final class ReloadCommand implements Callable<Integer>
{
    @Option(names = "--pid", description = "The broker's process id (default: the only broker running); it must "
        + "have a counters file in --counters-dir.")
    Long pid;

    @Option(names = "--counters-dir", paramLabel = "DIR", description = "Where its counters file is "
        + "(default: as the broker's --counters-dir).")
    Path countersDir;

    public Integer call() throws Exception
    {
        final Path dir = null != countersDir ? countersDir : ObservabilitySettings.defaultCountersDir();
        final List<Long> ready = new ArrayList<>();
        final List<Long> unready = new ArrayList<>();
        for (final Path file : CountersFileReader.find(dir, pid))
        {
            try (CountersFileReader reader = CountersFileReader.open(file))
            {
                // alive (not a reused pid), and a command-line broker that handles SIGHUP (which would end any other
                // process, an embedded broker's host included)
                if (reader.isBrokerAlive())
                {
                    final List<Long> list =
                        reader.counters().getCounterValue(BrokerCounters.RELOAD_READY) == 1 ? ready : unready;
                    if (!list.contains(reader.pid()))
                    {
                        list.add(reader.pid());
                    }
                }
            }
            catch (final RuntimeException | java.io.IOException ex)
            {
                // a file being written or removed: not a broker to reload
            }
        }
        if (ready.isEmpty() && !unready.isEmpty())
        {
            System.err.println("ringmq reload: " + (unready.size() == 1 ? "the broker with pid " + unready.get(0) +
                " does" : "the brokers " + unready + " do") + " not take reloads (embedded, or started with SIGHUP " +
                "ignored, as under nohup, which the JVM keeps ignored: start it through bin/ringmq); nothing sent");
            return 1;
        }
        if (ready.size() != 1)
        {
            System.err.println("ringmq reload: " + (ready.isEmpty() ? "no running command-line broker" +
                (null == pid ? "" : " with pid " + pid) + " found in " + dir + "; nothing sent" :
                ready.size() + " brokers running (" + ready + "): say which with --pid"));
            return 1;
        }
        final long target = ready.get(0);
        final Process kill = new ProcessBuilder("kill", "-HUP", Long.toString(target)).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0)
        {
            System.err.println("ringmq reload: could not signal process " + target);
            return 1;
        }
        System.out.println("ringmq reload: sent SIGHUP to pid " + target + "; its log says what was reloaded");
        return 0;
    }
}
