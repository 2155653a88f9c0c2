package io.ringmq.loadtest;

import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleFunction;

/**
 * One plot axis: its range, whether it is logarithmic, and its ticks with their labels in human units (see
 * {@link Units}). Tick and label values are in data units; a log axis maps them through log10 when it draws.
 *
 * @param min    the low end of the range, in data units (positive on a log axis).
 * @param max    the high end.
 * @param log    whether values are placed by their log10.
 * @param ticks  tick positions, in data units.
 * @param labels one label per tick.
 */
record Axis(double min, double max, boolean log, double[] ticks, String[] labels)
{
    /** Time steps, in seconds, that a time axis may tick at. */
    private static final double[] TIME_STEPS = {1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200};
    private static final int MAX_TICKS = 10;

    /**
     * @return where {@code value} falls on this axis, 0 at {@code min} and 1 at {@code max}.
     */
    double fraction(final double value)
    {
        if (log)
        {
            final double low = Math.log10(min);
            return (Math.log10(Math.max(value, min)) - low) / (Math.log10(max) - low);
        }
        return (value - min) / (max - min);
    }

    /**
     * A time axis from 0 to {@code maxSeconds} (at least 1 s), ticked every 1, 2, 5, 10, 15, 30 s, 1 min, ...:
     * the smallest step that gives at most 10 ticks, so a run of 5 s or more gets 5 to 10.
     */
    static Axis time(final double maxSeconds)
    {
        final double max = Math.max(1, maxSeconds);
        final double step = timeStep(max);
        return linear(0, max, step, Units::seconds);
    }

    /**
     * @return the tick step, in seconds, of a time axis from 0 to {@code maxSeconds}.
     */
    static double timeStep(final double maxSeconds)
    {
        for (final double step : TIME_STEPS)
        {
            if (Math.floor(maxSeconds / step + 1e-9) + 1 <= MAX_TICKS)
            {
                return step;
            }
        }
        final double hours = Math.ceil(maxSeconds / 3600 / (MAX_TICKS - 1));
        return hours * 3600;
    }

    /**
     * A rate axis from 0 to a round value at or above {@code maxPerSecond}, ticked every 1, 2 or 5 × 10^n so that
     * there are 4 to 6 intervals, labelled "200k/s", "1.5M/s".
     */
    static Axis rate(final double maxPerSecond)
    {
        final double top = Math.max(maxPerSecond, 1);
        final double step = niceStep(top / 5);
        final double max = Math.ceil(top / step - 1e-9) * step;
        return linear(0, max, step, Units::rate);
    }

    /**
     * A log latency axis (values in µs, 1 µs and up) over whole decades around {@code [minMicros, maxMicros]}, ticked at each
     * decade, and also at 2 and 5 times it when the range spans fewer than three decades: "100 µs", "1 ms", "10 ms".
     */
    static Axis latencyLog(final double minMicros, final double maxMicros)
    {
        final double low = Math.pow(10, Math.floor(Math.log10(Math.max(minMicros, 1))));
        double high = Math.pow(10, Math.ceil(Math.log10(Math.max(maxMicros, 1))));
        if (high <= low)
        {
            high = low * 10;
        }
        final boolean fine = high / low < 1_000 - 1e-6;
        final List<Double> ticks = new ArrayList<>();
        for (double decade = low; decade <= high * (1 + 1e-9); decade *= 10)
        {
            ticks.add(decade);
            if (fine && decade * 2 < high)
            {
                ticks.add(decade * 2);
                ticks.add(decade * 5);
            }
        }
        return of(low, high, true, ticks, Units::latency);
    }

    /**
     * @return 1, 2 or 5 × 10^n, the smallest at or above {@code rough}.
     */
    static double niceStep(final double rough)
    {
        final double decade = Math.pow(10, Math.floor(Math.log10(rough)));
        for (final double multiple : new double[]{1, 2, 5, 10})
        {
            if (decade * multiple >= rough * (1 - 1e-9))
            {
                return decade * multiple;
            }
        }
        return decade * 10;
    }

    private static Axis linear(final double min, final double max, final double step,
        final DoubleFunction<String> label)
    {
        final List<Double> ticks = new ArrayList<>();
        for (int i = 0; min + i * step <= max * (1 + 1e-9); i++)
        {
            ticks.add(min + i * step);
        }
        return of(min, max, false, ticks, label);
    }

    private static Axis of(final double min, final double max, final boolean log, final List<Double> ticks,
        final DoubleFunction<String> label)
    {
        final double[] positions = new double[ticks.size()];
        final String[] labels = new String[ticks.size()];
        for (int i = 0; i < positions.length; i++)
        {
            positions[i] = ticks.get(i);
            labels[i] = label.apply(positions[i]);
        }
        return new Axis(min, max, log, positions, labels);
    }
}
