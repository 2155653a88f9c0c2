package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code bin/ringmq}'s JIT flags, through {@code --dry-run} on a stand-in jar: C1 only with a 32m code cache below
 * 512m (C2's compiles of the connection path cost 21-27 MB of peak RSS there: docs/perf/2026-12-01-jit-at-256m.md),
 * its call counts scaled to a tenth for the connect path's packages (so the warm-up at start leaves that path compiled:
 * docs/perf/2026-12-01-connect-path-compiles.md), the JVM's tiered C1 + C2 with a 64m code cache from 512m, the same
 * scaling there with C2's thresholds raised thirtyfold (the minimum count tenfold) so that C2 comes in at three times
 * its counts for that code (docs/perf/2026-12-01-jit-counts.md), the PUBLISH path's mid-sized methods inlined below
 * 512m (docs/perf/2026-12-02-c1-inlining.md), and {@code RINGMQ_JAVA_OPTS} after them, so an operator can choose C2
 * at 256m.
 */
@Timeout(60)
class LauncherJitFlagsTest extends LauncherDryRunTest
{
    @Test
    @DisplayName("below 512m C1 only, on one compiler thread, with a 32m code cache; from 512m tiered C1 + C2 with 64m")
    void c1OnlyBelow512m() throws Exception
    {
        final String small = dryRun("", 0);
        assertThat(small).contains("-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=32m ", " -XX:CICompilerCount=1 ");
        assertThat(dryRun("", 0, "--memory-limit", "511m")).contains("-XX:TieredStopAtLevel=1 ", "-XX:CICompilerCount=1");
        final String large = dryRun("", 0, "--memory-limit", "512m");
        assertThat(large).doesNotContain("TieredStopAtLevel", "CICompilerCount")
            .contains("-XX:ReservedCodeCacheSize=64m ");
        assertThat(dryRun("", 0, "--memory-limit", "1g")).doesNotContain("TieredStopAtLevel");
        // tiered C1 + C2 refuses to start with one compiler thread: an operator who chooses the compilers gets none
        for (final String chosen : List.of("-XX:TieredStopAtLevel=4", "-XX:-TieredCompilation",
            "-XX:CompilationMode=high-only"))
        {
            assertThat(dryRun(chosen, 0)).as(chosen).doesNotContain("CICompilerCount");
        }
        assertParses(List.of("-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1", "-XX:NewSize=4m", "-Xms16m"));
    }

    @Test
    @DisplayName("one compiler thread and the 4 MiB young generation only when nothing read after them may undo them")
    void oneCompilerThreadAndNewSizeOnlyWhereTheyHold() throws Exception
    {
        // _JAVA_OPTIONS is read after the command line: tiered C1 + C2 there would refuse one compiler thread
        final String late = LauncherDryRun.run(List.of(), Map.of("RINGMQ_JAR", jar.toString(), "_JAVA_OPTIONS",
            "-XX:TieredStopAtLevel=4"), 0, "--persistence", "memory");
        assertThat(late).doesNotContain("CICompilerCount").contains("-XX:NewSize=4m");
        // an options file or @argfile may say anything: neither flag
        for (final String opaque : List.of("-XX:VMOptionsFile=/etc/ringmq/jvm.options", "@/etc/ringmq/jvm.args"))
        {
            assertThat(dryRun(opaque, 0)).as(opaque).doesNotContain("CICompilerCount", "NewSize");
        }
        // -Xms as large as -Xmx would pin the young generation at 4 MiB: an operator who sizes the heap sizes it
        for (final String sized : List.of("-Xms64m", "-Xmn8m", "-XX:InitialHeapSize=64m", "-XX:MaxNewSize=2m",
            "-XX:NewRatio=3"))
        {
            assertThat(dryRun(sized, 0)).as(sized).doesNotContain("NewSize=4m").contains("-XX:CICompilerCount=1");
        }
    }

    @Test
    @DisplayName("below 512m the connect path compiles at a tenth of C1's counts, and this JVM parses the commands")
    void connectPathCompilesEarlyBelow512m() throws Exception
    {
        final List<String> commands = compileCommands(dryRun("", 0));
        final List<String> inlines = inlines(commands);
        final List<String> expected = new ArrayList<>(List.of(
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=CompileThresholdScaling,io.ringmq.*::*,0.1",
            "-XX:CompileCommand=CompileThresholdScaling,org.agrona.*::*,0.1",
            "-XX:CompileCommand=CompileThresholdScaling,sun.nio.ch.*::*,0.1",
            "-XX:CompileCommand=inline,jdk.internal.util.Preconditions::checkFromIndexSize"));
        expected.addAll(inlines);
        assertThat(commands).containsExactlyElementsOf(expected);
        // an operator who chooses the compilers (C2 at 256m) or sets their counts gets no scaling (it would apply to
        // the operator's counts) and, from 512m, none of the launcher's C2 thresholds; the inlining below 512m stays
        // unless the compilers are chosen
        for (final String chosen : List.of("-XX:TieredStopAtLevel=4 -XX:ReservedCodeCacheSize=16m",
            "-XX:-TieredCompilation", "-XX:CompilationMode=high-only", "-XX:Tier4InvocationThreshold=5000",
            "-XX:Tier3InvocationThreshold=100", "-XX:CompileThreshold=100", "-XX:CompileThresholdScaling=0.5"))
        {
            final boolean compilersChosen = chosen.contains("Tiered") || chosen.contains("CompilationMode");
            final List<String> countsChosen = new ArrayList<>(List.of("-XX:CompileCommand=quiet",
                "-XX:CompileCommand=inline,jdk.internal.util.Preconditions::checkFromIndexSize"));
            countsChosen.addAll(inlines);
            assertThat(compileCommands(dryRun(chosen, 0))).as(chosen).containsExactlyElementsOf(compilersChosen ?
                List.of() : countsChosen);
            final String large = dryRun(chosen, 0, "--memory-limit", "1g");
            assertThat(compileCommands(large)).as(chosen).isEmpty();
            assertThat(tier4(large)).as(chosen).allMatch(chosen::contains);
        }
        assertThat(tier4(dryRun("", 0))).isEmpty();

        final List<String> flags = new ArrayList<>();
        flags.add("-XX:TieredStopAtLevel=1");
        flags.addAll(commands);
        assertParses(flags);
    }

    @Test
    @DisplayName("from 512m the same scaling, C2's thresholds thirtyfold, and this JVM parses them")
    void c2AtThreeTimesItsCountsFrom512m() throws Exception
    {
        final String command = dryRun("", 0, "--memory-limit", "1g");
        final List<String> commands = compileCommands(command);
        assertThat(commands).containsExactly(
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=CompileThresholdScaling,io.ringmq.*::*,0.1",
            "-XX:CompileCommand=CompileThresholdScaling,org.agrona.*::*,0.1",
            "-XX:CompileCommand=CompileThresholdScaling,sun.nio.ch.*::*,0.1");
        final List<String> thresholds = tier4(command);
        // the JVM's defaults 5,000 / 600 / 15,000 / 40,000: times 30, times 10 for the minimum (a tenth of it stays)
        assertThat(thresholds).containsExactly(
            "-XX:Tier4InvocationThreshold=150000",
            "-XX:Tier4MinInvocationThreshold=6000",
            "-XX:Tier4CompileThreshold=450000",
            "-XX:Tier4BackEdgeThreshold=1200000");
        assertThat(dryRun("", 0, "--memory-limit", "512m")).contains(String.join(" ", thresholds));
        final List<String> flags = new ArrayList<>(commands);
        flags.addAll(thresholds);
        assertParses(flags);
    }

    @Test
    @DisplayName("below 512m the PUBLISH path's methods are inlined: each named exists, with a body, its overload pinned")
    void publishPathInlinesNameRealMethods() throws Exception
    {
        final List<String> inlines = inlines(compileCommands(dryRun("", 0)));
        assertThat(inlines).hasSizeGreaterThanOrEqualTo(20).doesNotHaveDuplicates();
        for (final String inline : inlines)
        {
            // a method renamed without the list would be dropped silently (the commands are quiet)
            final String target = inline.substring("-XX:CompileCommand=inline,".length());
            final String className = target.substring(0, target.indexOf("::"));
            final String method = target.substring(target.indexOf("::") + 2);
            final int signature = method.indexOf('(');
            final String name = signature < 0 ? method : method.substring(0, signature);
            final Class<?> type = Class.forName(className, false, getClass().getClassLoader());
            final List<Method> matching = new ArrayList<>();
            for (final Method declared : type.getDeclaredMethods())
            {
                if (declared.getName().equals(name) && (signature < 0 ||
                    descriptor(declared).equals(method.substring(signature))))
                {
                    matching.add(declared);
                }
            }
            // a body to inline: an abstract or interface method would leave the call virtual and the command moot
            assertThat(matching).as(target).isNotEmpty()
                .allMatch(declared -> !Modifier.isAbstract(declared.getModifiers()));
            // an overloaded name carries its signature, so only the method meant is forced
            assertThat(signature >= 0 || Arrays.stream(type.getDeclaredMethods())
                .filter(declared -> declared.getName().equals(name)).count() == 1).as(target + " is overloaded").isTrue();
        }
        assertThat(compileCommands(dryRun("", 0, "--memory-limit", "1g"))).noneMatch(inlines::contains);
    }

    @Test
    @DisplayName("RINGMQ_JAVA_OPTS come after the launcher's JIT flags, just before -jar, so they win")
    void javaOptsWin() throws Exception
    {
        final String command = dryRun("-XX:TieredStopAtLevel=4 -XX:ReservedCodeCacheSize=16m", 0);
        assertThat(command).contains("-XX:TieredStopAtLevel=4 -XX:ReservedCodeCacheSize=16m -jar ");
        assertThat(command.indexOf("-XX:TieredStopAtLevel=1")).isLessThan(command.indexOf("-XX:TieredStopAtLevel=4"));
        final String large = dryRun("-XX:+UseStringDeduplication", 0, "--memory-limit", "1g");
        assertThat(large).contains("-XX:Tier4BackEdgeThreshold=1200000 ")
            .contains("-XX:+UseStringDeduplication -jar ");
        assertThat(large.indexOf("Tier4BackEdgeThreshold")).isLessThan(large.indexOf("UseStringDeduplication"));
    }

    @Test
    @DisplayName("a --memory-limit that is not a size, empty, negative or overflowing is refused, nothing started")
    void malformedLimitRefused() throws Exception
    {
        for (final String limit : List.of("lots", "", "-256m", "256q", "9999999999999g", "256m;id"))
        {
            assertThat(dryRun("", 2, "--memory-limit", limit)).as(limit)
                .contains("--memory-limit")
                .doesNotContain("-jar");
        }
        assertThat(dryRun("", 2, "--memory-limit")).contains("needs a SIZE");
    }

    /**
     * JDK 17 reports a command it cannot parse (a line "CompileCommand: An error occurred during parsing" and one
     * "Error: ...") and goes on without it: this JVM, given the flags as the launcher passes them, must report
     * nothing and start.
     */
    private static void assertParses(final List<String> flags) throws Exception
    {
        final List<String> java = new ArrayList<>();
        java.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        java.addAll(flags);
        java.add("-version");
        final ProcessBuilder builder = new ProcessBuilder(java).redirectErrorStream(true);
        builder.environment().keySet().removeAll(List.of("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"));
        final Process process = builder.start();
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(output).isZero();
        assertThat(output.lines()).as(output)
            .noneMatch(line -> line.startsWith("CompileCommand:") || line.startsWith("Error:"))
            .anyMatch(line -> line.contains("version"));
    }

    /**
     * @return the JVM's descriptor of a method, e.g. {@code (JI)I}.
     */
    private static String descriptor(final Method method)
    {
        final StringBuilder descriptor = new StringBuilder("(");
        for (final Class<?> parameter : method.getParameterTypes())
        {
            descriptor.append(descriptor(parameter));
        }
        return descriptor.append(')').append(descriptor(method.getReturnType())).toString();
    }

    private static String descriptor(final Class<?> type)
    {
        if (type.isArray())
        {
            return type.getName().replace('.', '/');
        }
        if (type.isPrimitive())
        {
            return Map.of(int.class, "I", long.class, "J", boolean.class, "Z", byte.class, "B", short.class, "S",
                char.class, "C", float.class, "F", double.class, "D", void.class, "V").get(type);
        }
        return "L" + type.getName().replace('.', '/') + ";";
    }

    /**
     * @return the launcher's inline commands for the PUBLISH path (all but the bounds check's), in its order.
     */
    private static List<String> inlines(final List<String> commands)
    {
        final List<String> inlines = new ArrayList<>();
        for (final String command : commands)
        {
            if (command.startsWith("-XX:CompileCommand=inline,") && !command.contains("Preconditions"))
            {
                inlines.add(command);
            }
        }
        return inlines;
    }

    /**
     * @return the {@code -XX:Tier4...} arguments of a dry run's command.
     */
    private static List<String> tier4(final String command)
    {
        final List<String> flags = new ArrayList<>();
        for (final String argument : command.trim().split("\\s+"))
        {
            if (argument.startsWith("-XX:Tier4"))
            {
                flags.add(argument);
            }
        }
        return flags;
    }

    /**
     * @return the {@code -XX:CompileCommand} arguments of a dry run's command, unquoted (it prints them as the shell
     *         would read them).
     */
    private static List<String> compileCommands(final String command)
    {
        final List<String> commands = new ArrayList<>();
        for (final String argument : command.trim().split("\\s+"))
        {
            if (argument.startsWith("-XX:CompileCommand="))
            {
                commands.add(argument.replace("\\", ""));
            }
        }
        return commands;
    }
}
