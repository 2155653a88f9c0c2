package io.ringmq.loadtest;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A report as one standalone HTML page, made from the Markdown the generator writes (so the two show the same
 * tables): headings, paragraphs with {@code `code`}, lists, fenced blocks, pipe tables, and images of the SVG plots,
 * which are embedded in the page. A little CSS, no script, nothing fetched from anywhere.
 */
final class HtmlReport
{
    private static final Pattern IMAGE = Pattern.compile("!\\[([^]]*)]\\(([^)]+)\\)");
    private static final Pattern CODE = Pattern.compile("`([^`]+)`");
    private static final String STYLE = """
        body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #222; }
        h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
        table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
        th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; } th { background: #f3f3f3; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        tbody tr:nth-child(even) { background: #fafafa; }
        code, pre { font-family: ui-monospace, monospace; background: #f5f5f5; }
        pre { padding: 0.8em; overflow-x: auto; }
        figure { display: inline-block; margin: 0.5em; } svg { max-width: 100%; height: auto; border: 1px solid #eee; }
        """;

    private HtmlReport()
    {
    }

    /**
     * Writes {@code name} (e.g. {@code report.html}) into {@code folder}, the page for {@code markdown}; images name
     * SVG files in that folder.
     */
    static Path write(final Path folder, final String name, final String title, final String markdown)
        throws IOException
    {
        final Path file = folder.resolve(name);
        Files.writeString(file, page(title, markdown, folder), StandardCharsets.UTF_8);
        return file;
    }

    static String page(final String title, final String markdown, final Path folder) throws IOException
    {
        final StringBuilder html = new StringBuilder();
        html.append("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
            .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
            .append("<title>").append(Svg.escape(title)).append("</title>\n<style>\n").append(STYLE)
            .append("</style>\n</head>\n<body>\n");
        final String[] lines = markdown.split("\n", -1);
        int i = 0;
        while (i < lines.length)
        {
            final String line = lines[i];
            if (line.isBlank())
            {
                i++;
            }
            else if (line.startsWith("```"))
            {
                html.append("<pre>");
                for (i++; i < lines.length && !lines[i].startsWith("```"); i++)
                {
                    html.append(Svg.escape(lines[i])).append('\n');
                }
                html.append("</pre>\n");
                i++;
            }
            else if (line.startsWith("|"))
            {
                final int start = i;
                while (i < lines.length && lines[i].startsWith("|"))
                {
                    i++;
                }
                table(html, lines, start, i);
            }
            else if (line.startsWith("- "))
            {
                html.append("<ul>\n");
                for (; i < lines.length && lines[i].startsWith("- "); i++)
                {
                    html.append("<li>").append(inline(lines[i].substring(2))).append("</li>\n");
                }
                html.append("</ul>\n");
            }
            else if (line.startsWith("#"))
            {
                final int level = Math.min(6, line.indexOf(' ') > 0 ? line.indexOf(' ') : 1);
                html.append("<h").append(level).append('>').append(inline(line.substring(level).strip()))
                    .append("</h").append(level).append(">\n");
                i++;
            }
            else if (IMAGE.matcher(line.strip()).matches())
            {
                for (; i < lines.length && IMAGE.matcher(lines[i].strip()).matches(); i++)
                {
                    final Matcher image = IMAGE.matcher(lines[i].strip());
                    image.matches();
                    figure(html, folder, image.group(1), image.group(2));
                }
            }
            else
            {
                final StringBuilder paragraph = new StringBuilder();
                for (; i < lines.length && !lines[i].isBlank() && !lines[i].startsWith("|") &&
                    !lines[i].startsWith("#") && !lines[i].startsWith("```") && !lines[i].startsWith("- "); i++)
                {
                    paragraph.append(paragraph.length() > 0 ? " " : "").append(lines[i].strip());
                }
                html.append("<p>").append(inline(paragraph.toString())).append("</p>\n");
            }
        }
        return html.append("</body>\n</html>\n").toString();
    }

    private static void table(final StringBuilder html, final String[] lines, final int start, final int end)
    {
        final String[] header = cells(lines[start]);
        final boolean aligned = end > start + 1 && lines[start + 1].matches("[|\\s:-]+");
        final boolean[] right = new boolean[header.length];
        if (aligned)
        {
            final String[] alignment = cells(lines[start + 1]);
            for (int c = 0; c < right.length && c < alignment.length; c++)
            {
                right[c] = alignment[c].endsWith(":") && !alignment[c].startsWith(":");
            }
        }
        html.append("<table>\n<thead><tr>");
        for (int c = 0; c < header.length; c++)
        {
            html.append(right[c] ? "<th class=\"num\">" : "<th>").append(inline(header[c])).append("</th>");
        }
        html.append("</tr></thead>\n<tbody>\n");
        for (int r = start + (aligned ? 2 : 1); r < end; r++)
        {
            final String[] row = cells(lines[r]);
            html.append("<tr>");
            for (int c = 0; c < row.length; c++)
            {
                html.append(c < right.length && right[c] ? "<td class=\"num\">" : "<td>").append(inline(row[c]))
                    .append("</td>");
            }
            html.append("</tr>\n");
        }
        html.append("</tbody>\n</table>\n");
    }

    private static String[] cells(final String row)
    {
        String inner = row.strip();
        inner = inner.substring(1, inner.endsWith("|") && inner.length() > 1 ? inner.length() - 1 : inner.length());
        final String[] cells = inner.split("\\|", -1);
        for (int i = 0; i < cells.length; i++)
        {
            cells[i] = cells[i].strip();
        }
        return cells;
    }

    /**
     * Embeds a plot: the SVG file's own markup (its namespace attribute dropped, which HTML does not need), or the
     * alternative text when the file is missing or not SVG.
     */
    private static void figure(final StringBuilder html, final Path folder, final String alt, final String file)
        throws IOException
    {
        final Path path = folder.resolve(file).normalize();
        if (!file.endsWith(".svg") || !path.startsWith(folder.normalize()) || !Files.isRegularFile(path))
        {
            html.append("<p>").append(Svg.escape(alt)).append("</p>\n");
            return;
        }
        final String svg = Files.readString(path, StandardCharsets.UTF_8)
            .replace(" xmlns=\"http://www.w3.org/2000/svg\"", "")
            .replaceFirst("<svg ", "<svg role=\"img\" aria-label=\"" + Svg.escape(alt).replace("\"", "&quot;") + "\" ");
        html.append("<figure>\n").append(svg.strip()).append("\n</figure>\n");
    }

    private static String inline(final String text)
    {
        return CODE.matcher(Svg.escape(text)).replaceAll("<code>$1</code>");
    }
}
