package io.ringmq.loadtest;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.transport.RingMq;
import io.ringmq.transport.junit.RingMqExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a person watching a run sees: the progress line on standard error for runs over 3 s (and none with
 * {@code -quiet}), and the standalone HTML reports, {@code summary.html} of one run and {@code report.html} of a
 * matrix, against an in-process ringmq (the matrix against a ringmq process started from this test's classpath).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ProgressAndHtmlTest
{
    private static final Pattern PROGRESS = Pattern.compile(
        "\\d+ s / 4 s: published [\\d,]+ msg/s, delivered [\\d,]+/s, p99 ([\\d.]+ (µs|ms|s)|–), lost [\\d,]+");
    private static final Pattern EXTERNAL = Pattern.compile("(?i)(https?:|//[a-z0-9]|src\\s*=|href\\s*=|@import|url\\()");

    /** One in-process broker for the class, closed after it; a test fails if it counted an unexpected error. */
    @RegisterExtension
    static final RingMqExtension BROKER =
        new RingMqExtension(() -> RingMq.builder().threading(BrokerContext.Threading.SHARED)).perClass();

    private static RingMq broker;

    @BeforeEach
    void broker(final RingMq running)
    {
        broker = running;
    }

    /**
     * @return standard output and standard error of one run, apart.
     */
    private static String[] run(final String... args)
    {
        final PrintStream out = System.out;
        final PrintStream err = System.err;
        final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
        try
        {
            assertThat(LoadTest.run(args)).as(() -> stdout.toString(StandardCharsets.UTF_8) +
                stderr.toString(StandardCharsets.UTF_8)).isZero();
        }
        finally
        {
            System.setOut(out);
            System.setErr(err);
        }
        return new String[]{stdout.toString(StandardCharsets.UTF_8), stderr.toString(StandardCharsets.UTF_8)};
    }

    /**
     * @return the progress lines, whether each came on its own line or overwrote the one before (a terminal).
     */
    private static List<String> progressLines(final String stderr)
    {
        return Arrays.stream(stderr.split("[\r\n]+")).map(String::strip).filter(line -> PROGRESS.matcher(line).find())
            .toList();
    }

    @Test
    @DisplayName("a 4 s run prints a progress line each second on stderr, and writes a standalone summary.html")
    void progressLineAndSummaryHtml(@TempDir final Path out) throws IOException
    {
        final String[] output = run("-addr", "127.0.0.1:" + broker.port(), "-mode", "pubsub", "-subs", "2", "-pubs",
            "2", "-qos", "0", "-rate", "100", "-duration", "4s", "-out", out.toString());
        final List<String> lines = progressLines(output[1]);
        assertThat(lines).as(output[1]).hasSizeBetween(3, 6);
        assertThat(lines.get(lines.size() - 1)).as("loss so far on a clean loopback run").endsWith("lost 0");
        assertThat(output[0]).as("progress stays off stdout, which carries the summary and its JSON")
            .doesNotContain(" s / 4 s:").contains("\"mode\":\"pubsub\"");

        final Path html = out.resolve("summary.html");
        assertThat(html).exists();
        assertThat(out.resolve("summary.md")).exists();
        final String page = Files.readString(html, StandardCharsets.UTF_8);
        assertStandalone(page);
        assertTablesMatch(page, Files.readString(out.resolve("summary.md"), StandardCharsets.UTF_8), 1);
        assertThat(page).contains("<svg").contains("p99 latency per second").contains("deliveries per second")
            .contains("latency by percentile").contains("published");
    }

    @Test
    @DisplayName("-quiet: no progress line, even on a long run")
    void quietRun()
    {
        final String[] output = run("-addr", "127.0.0.1:" + broker.port(), "-mode", "pubsub", "-subs", "1", "-pubs",
            "1", "-rate", "50", "-duration", "4s", "-quiet");
        assertThat(progressLines(output[1])).isEmpty();
        assertThat(output[1]).doesNotContain(" s / 4 s");
        assertThat(output[0]).contains("\"mode\":\"pubsub\"");
    }

    @Test
    @DisplayName("a run of 3 s or less has no progress line")
    void shortRunIsQuiet()
    {
        final String[] output = run("-addr", "127.0.0.1:" + broker.port(), "-mode", "pub", "-pubs", "1", "-rate", "50",
            "-duration", "1s");
        assertThat(output[1]).doesNotContain(" s / ");
    }

    @Test
    @DisplayName("a matrix writes report.html beside report.md: the same tables, the plots embedded, nothing external")
    void matrixReportHtml(@TempDir final Path folder) throws IOException
    {
        final String java = ProcessHandle.current().info().command().orElse("java");
        final String classpath = System.getProperty("java.class.path");
        assertThat(classpath).doesNotContainAnyWhitespaces();
        final Path matrix = folder.resolve("matrix.json");
        Files.writeString(matrix, """
            {"name": "html-check", "brokers": ["ringmq-a", "ringmq-b"],
             "commands": {"ringmq-a": "JAVA --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp CP io.ringmq.transport.Main --bind 127.0.0.1 --port {port}",
                          "ringmq-b": "JAVA --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp CP io.ringmq.transport.Main --bind 127.0.0.1 --port {port}"},
             "scenarios": [
               {"name": "pubsub-2x2", "title": "fan-out <2 × 2>", "args": "-mode pubsub -subs 2 -pubs 2 -rate 100 -duration 1s"},
               {"name": "conn-20", "args": "-mode conn -levels 20 -hold 100ms -dial-concurrency 20"}
             ]}
            """.replace("JAVA", java.replace("\\", "/")).replace("CP", classpath.replace(File.separatorChar, '/')));
        final String[] output = run("matrix", matrix.toString(), "--out", folder.resolve("results").toString(),
            "--quiet");
        assertThat(progressLines(output[1])).isEmpty();
        final Path report;
        try (Stream<Path> files = Files.walk(folder.resolve("results")))
        {
            report = files.filter(path -> path.getFileName().toString().equals("report.html")).findFirst().orElseThrow();
        }
        final String markdown = Files.readString(report.resolveSibling("report.md"), StandardCharsets.UTF_8);
        assertThat(markdown).as(() -> output[0] + logs(folder.resolve("results"))).contains("| ringmq-a |").contains("| ringmq-b |").doesNotContain("failed:");
        final String page = Files.readString(report, StandardCharsets.UTF_8);
        assertStandalone(page);
        assertThat(page).contains("<h1>html-check</h1>").contains("<h2>pubsub-2x2</h2>").contains("<h2>conn-20</h2>")
            .contains("fan-out &lt;2 × 2&gt;");
        assertTablesMatch(page, markdown, 4); // two brokers in each of two scenarios
        assertThat(page.split("<svg", -1).length - 1).as("the three plots of the pubsub scenario").isEqualTo(3);
    }

    private static String logs(final Path folder)
    {
        try (Stream<Path> files = Files.walk(folder))
        {
            final StringBuilder logs = new StringBuilder();
            for (final Path log : files.filter(path -> path.toString().endsWith(".log")).toList())
            {
                logs.append("\n--- ").append(log).append('\n').append(Files.readString(log));
            }
            return logs.toString();
        }
        catch (final IOException ex)
        {
            return ex.toString();
        }
    }

    private static void assertStandalone(final String page)
    {
        assertThat(page).startsWith("<!doctype html>").contains("<style>").endsWith("</html>\n")
            .doesNotContain("<script").doesNotContain("<img").contains("<svg");
        assertThat(EXTERNAL.matcher(page).find()).as("an external reference: %s", EXTERNAL.matcher(page).results()
            .map(m -> page.substring(Math.max(0, m.start() - 40), Math.min(page.length(), m.end() + 40))).toList())
            .isFalse();
        assertThat(count(page, "<table>")).isEqualTo(count(page, "</table>"));
        assertThat(count(page, "<svg")).isEqualTo(count(page, "</svg>"));
    }

    /**
     * Every body row of every Markdown table is a row of the page, cell by cell.
     */
    private static void assertTablesMatch(final String page, final String markdown, final int expectedRows)
    {
        int rows = 0;
        final String[] lines = markdown.split("\n");
        for (int l = 0; l < lines.length; l++)
        {
            final String line = lines[l];
            if (!line.startsWith("| ") || (l + 1 < lines.length && lines[l + 1].startsWith("|---")))
            {
                continue; // not a table, or its header
            }
            final String[] cells = line.substring(1, line.length() - 1).split("\\|");
            final StringBuilder row = new StringBuilder("<tr>");
            for (int i = 0; i < cells.length; i++)
            {
                final String cell = cells[i].strip();
                row.append(i == 0 ? "<td>" : "<td class=\"num\">").append(cell).append("</td>");
            }
            assertThat(page).contains(row.append("</tr>").toString());
            rows++;
        }
        assertThat(rows).isEqualTo(expectedRows);
    }

    private static int count(final String text, final String part)
    {
        return text.split(Pattern.quote(part), -1).length - 1;
    }
}
