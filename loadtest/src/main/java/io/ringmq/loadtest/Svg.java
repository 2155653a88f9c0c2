package io.ringmq.loadtest;

import java.util.List;
import java.util.Locale;

/**
 * Minimal SVG line charts for reports: one series per broker, axes with a few labelled ticks, a legend.
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
     * @param logY   plot log10 of y (values must be positive).
     * @param xTicks tick positions on the x axis, with {@code xLabels} beside them.
     */
    static String chart(final String title, final String xTitle, final String yTitle, final List<Series> series,
        final boolean logY, final double[] xTicks, final String[] xLabels)
    {
        double minX = Double.MAX_VALUE;
        double maxX = -Double.MAX_VALUE;
        double minY = Double.MAX_VALUE;
        double maxY = -Double.MAX_VALUE;
        for (final Series s : series)
        {
            for (int i = 0; i < s.x().length; i++)
            {
                final double y = logY ? Math.log10(Math.max(s.y()[i], 1e-3)) : s.y()[i];
                minX = Math.min(minX, s.x()[i]);
                maxX = Math.max(maxX, s.x()[i]);
                minY = Math.min(minY, y);
                maxY = Math.max(maxY, y);
            }
        }
        if (minX > maxX)
        {
            minX = 0;
            maxX = 1;
            minY = 0;
            maxY = 1;
        }
        if (!logY)
        {
            minY = Math.min(0, minY);
        }
        else
        {
            minY = Math.floor(minY);
            maxY = Math.ceil(maxY);
        }
        if (maxY <= minY)
        {
            maxY = minY + 1;
        }
        if (maxX <= minX)
        {
            maxX = minX + 1;
        }
        final StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" " +
            "font-family=\"sans-serif\" font-size=\"12\">%n", WIDTH, HEIGHT));
        sb.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>%n", LEFT, escape(title)));
        final int plotW = WIDTH - LEFT - RIGHT;
        final int plotH = HEIGHT - TOP - BOTTOM;
        sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" " +
            "stroke=\"#888\"/>%n", LEFT, TOP, plotW, plotH));
        for (int i = 0; i <= 4; i++)
        {
            final double value = minY + (maxY - minY) * i / 4;
            final double y = TOP + plotH - plotH * i / 4.0;
            final String label = logY ? format(Math.pow(10, value)) : format(value);
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>" +
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT, y, LEFT + plotW, y, LEFT - 5, y + 4,
                label));
        }
        final double[] ticks = null != xTicks ? xTicks : new double[]{minX, (minX + maxX) / 2, maxX};
        for (int i = 0; i < ticks.length; i++)
        {
            final double x = LEFT + plotW * (ticks[i] - minX) / (maxX - minX);
            final String label = null != xLabels ? xLabels[i] : format(ticks[i]);
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", x,
                TOP + plotH + 18, escape(label)));
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
                final double yValue = logY ? Math.log10(Math.max(line.y()[i], 1e-3)) : line.y()[i];
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", LEFT + plotW * (line.x()[i] - minX) / (maxX - minX),
                    TOP + plotH - plotH * (yValue - minY) / (maxY - minY)));
            }
            sb.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" " +
                "points=\"%s\"/>%n", colour, points.toString().trim()));
            sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>" +
                "<text x=\"%d\" y=\"%d\">%s</text>%n", LEFT + 10, TOP + 8 + s * 18, colour, LEFT + 28, TOP + 19 + s * 18,
                escape(line.name())));
        }
        return sb.append("</svg>\n").toString();
    }

    private static String format(final double value)
    {
        if (Math.abs(value) >= 1e6)
        {
            return String.format(Locale.ROOT, "%.1fM", value / 1e6);
        }
        if (Math.abs(value) >= 1e3)
        {
            return String.format(Locale.ROOT, "%.1fk", value / 1e3);
        }
        return Math.abs(value) >= 10 || value == 0 ? String.format(Locale.ROOT, "%.0f", value) :
            String.format(Locale.ROOT, "%.2f", value);
    }

    private static String escape(final String text)
    {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
