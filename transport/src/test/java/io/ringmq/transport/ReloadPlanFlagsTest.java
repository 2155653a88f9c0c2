package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ReloadPlan;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every flag of {@code ringmq} has a known fate on reload: taken live, named as needing a restart
 * ({@link ReloadPlan}), or reloaded by the transport's own path (listeners, the password and ACL files, the log
 * level). A new flag that is in none of them fails here, instead of being silently ignored by a reload.
 */
class ReloadPlanFlagsTest
{
    /** Flags a reload handles outside {@link ReloadPlan}, or that are not settings of the running broker. */
    private static final Set<String> ELSEWHERE = Set.of(
        "listener", "bind", "port", // the listeners, diffed and rebound by LiveReload
        "password-file", "acl-file", // read again by LiveReload; turning one on or off is refused
        "log-level", "log-format", // SignalReloads: the level at once, the format as at start
        "config", "help", "version");

    private static BrokerContext parse(final String... args)
    {
        final Main main = new Main();
        new CommandLine(main).parseArgs(args);
        return main.context().conclude();
    }

    @Test
    @DisplayName("every command-line flag is live, restart-only, or reloaded by its own path")
    void everyFlagHasAFate()
    {
        final List<String> unplanned = new ArrayList<>();
        for (final CommandLine.Model.OptionSpec option : new CommandLine(new Main()).getCommandSpec().options())
        {
            boolean known = false;
            for (final String name : option.names()) // aliases such as Mosquitto's persistence_location too
            {
                final String flag = name.replaceFirst("^--?", "");
                final String planned = flag.startsWith("auth-") ? "auth settings" :
                    flag.startsWith("pass-") ? "pass" : flag;
                known |= ELSEWHERE.contains(flag) || ReloadPlan.flags().contains(planned);
            }
            if (!known)
            {
                unplanned.add(option.longestName());
            }
        }
        assertThat(unplanned).as("flags a reload would silently ignore").isEmpty();
    }

    @Test
    @DisplayName("a changed --warmup, --route-shards or --outbound-ring-bytes is named as needing a restart")
    void restartOnlyFlagsAreNamed()
    {
        final BrokerContext running = parse();
        final BrokerContext next = parse("--warmup", "7", "--route-shards", "2", "--outbound-ring-bytes",
            String.valueOf(64 * 1024 * 1024));
        assertThat(ReloadPlan.restartOnlyChanges(running, next)).containsExactlyInAnyOrder("warmup", "route-shards",
            "outbound-ring-bytes");
        assertThat(ReloadPlan.liveChanges(running, next)).isEmpty();
    }

    @Test
    @DisplayName("--max-retained-messages and --max-retained-bytes are taken live, each without the other")
    void retainedLimitsTakenLive()
    {
        final BrokerContext running = parse("--max-retained-messages", "10", "--max-retained-bytes", "4096");
        final BrokerContext next = parse("--max-retained-messages", "20", "--max-retained-bytes", "4096");
        final BrokerContext live = ReloadPlan.liveContext(running, next);
        assertThat(live.limits().maxRetainedMessages()).isEqualTo(20);
        assertThat(live.limits().retainedBytes()).isEqualTo(4096);
        assertThat(ReloadPlan.liveChanges(running, next)).containsExactly("max-retained-messages");
        final BrokerContext auto = parse("--max-retained-messages", "10");
        assertThat(ReloadPlan.liveContext(running, auto).limits().maxRetainedBytes()).as("as given: auto")
            .isEqualTo(BrokerContext.AUTO);
        assertThat(ReloadPlan.liveChanges(running, auto)).containsExactly("max-retained-bytes");
    }
}
