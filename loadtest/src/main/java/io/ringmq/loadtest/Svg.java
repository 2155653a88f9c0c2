package io.ringmq.loadtest;

import java.util.List;
import java.util.Locale;

/**
 * Minimal SVG line charts for reports: one series per broker, axes with labelled ticks in human units (see
 * {@link Axis}), a legend. The drawing scales with its box ({@code viewBox}), so a page can show it at any width.
 */
final class Svg
{
    /** One line: a name and its points. */
    record Series(String name, double[] x, double[] y)
    {
    }

    private static final String[] COLOURS = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
    private static final int WIDTH = 720;
    private static final int HEIGHT = 400;
    private static final int LEFT = 70;
    private static final int RIGHT = 20;
    private static final int TOP = 40;
    private static final int BOTTOM = 50;

    private Svg()
    {
    }

    /**
     * @return the smallest and largest x ({@code y == false}) or y of every point, or {@code {0, 0}} when there are
     * none.
     */
    static double[] range(final List<Series> series, final boolean y)
    {
        double min = Double.MAX_VALUE;
        double max = -Double.MAX_VALUE;
        for (final Series s : series)
        {
            for (final double value : y ? s.y() : s.x())
            {
                min = Math.min(min, value);
                max = Math.max(max, value);
            }
        }
        return min > max ? new double[]{0, 0} : new double[]{min, max};
    }

    static String chart(final String title, final String xTitle, final String yTitle, final List<Series> series,
        final Axis xAxis, final Axis yAxis)
    {
        final StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" " +
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", WIDTH, HEIGHT, WIDTH, HEIGHT));
        sb.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>%n", LEFT, escape(title)));
        final int plotW = WIDTH - LEFT - RIGHT;
        final int plotH = HEIGHT - TOP - BOTTOM;
        sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" " +
            "stroke=\"#888\"/>%n", LEFT, TOP, plotW, plotH));
        for (int i = 0; i < yAxis.ticks().length; i++)
        {
            final double y = TOP + plotH - plotH * yAxis.fraction(yAxis.ticks()[i]);
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>" +
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT, y, LEFT + plotW, y, LEFT - 5, y + 4,
                escape(yAxis.labels()[i])));
        }
        for (int i = 0; i < xAxis.ticks().length; i++)
        {
            final double x = LEFT + plotW * xAxis.fraction(xAxis.ticks()[i]);
            sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\"/>" +
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", x, TOP + plotH, x, TOP + plotH + 4, x,
                TOP + plotH + 18, escape(xAxis.labels()[i])));
        }
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
            LEFT + plotW / 2, HEIGHT - 10, escape(xTitle)));
        sb.append(String.format(Locale.ROOT, "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" " +
            "text-anchor=\"middle\">%s</text>%n", TOP + plotH / 2, TOP + plotH / 2, escape(yTitle)));
        for (int s = 0; s < series.size(); s++)
        {
            final Series line = series.get(s);
            final String colour = COLOURS[s % COLOURS.length];
            final StringBuilder points = new StringBuilder();
            for (int i = 0; i < line.x().length; i++)
            {
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", LEFT + plotW * xAxis.fraction(line.x()[i]),
                    TOP + plotH - plotH * yAxis.fraction(line.y()[i])));
            }
            sb.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" " +
                "points=\"%s\"/>%n", colour, points.toString().trim()));
            sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>" +
                "<text x=\"%d\" y=\"%d\">%s</text>%n", LEFT + 10, TOP + 8 + s * 18, colour, LEFT + 28, TOP + 19 + s * 18,
                escape(line.name())));
        }
        return sb.append("</svg>\n").toString();
    }

    static String escape(final String text)
    {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
