package io.ringmq.loadtest;

import java.math.BigDecimal;
import java.math.MathContext;

/**
 * Human units for plots, the progress line and reports: latencies as "500 µs", "1.5 ms", "45 s"; rates as
 * "200k/s", "1.5M/s"; times as "0 s", "90 s", "10 min". At most three significant digits, trailing zeros dropped.
 */
final class Units
{
    private Units()
    {
    }

    /**
     * @param micros a latency in microseconds.
     * @return it in µs below 1 ms, in ms below 1 s, else in s: 999 → "999 µs", 1,000 → "1 ms", 1,500 → "1.5 ms".
     */
    static String latency(final double micros)
    {
        final double rounded = significant(micros);
        if (Math.abs(rounded) < 1_000)
        {
            return plain(rounded) + " µs";
        }
        if (Math.abs(rounded) < 1_000_000)
        {
            return plain(rounded / 1_000) + " ms";
        }
        return plain(rounded / 1_000_000) + " s";
    }

    /**
     * @return a per-second rate: 950 → "950/s", 200,000 → "200k/s", 1,500,000 → "1.5M/s".
     */
    static String rate(final double perSecond)
    {
        final double rounded = significant(perSecond);
        if (Math.abs(rounded) < 1_000)
        {
            return plain(rounded) + "/s";
        }
        if (Math.abs(rounded) < 1_000_000)
        {
            return plain(rounded / 1_000) + "k/s";
        }
        return plain(rounded / 1_000_000) + "M/s";
    }

    /**
     * @return a time in seconds, in minutes when it is a whole number of them from 2 minutes up: "0 s", "90 s",
     * "10 min".
     */
    static String seconds(final double seconds)
    {
        if (seconds >= 120 && seconds % 60 == 0)
        {
            return plain(seconds / 60) + " min";
        }
        return plain(significant(seconds)) + " s";
    }

    /**
     * @return {@code value} rounded to three significant digits (so 999.6 becomes 1,000 before a unit is chosen).
     */
    private static double significant(final double value)
    {
        if (value == 0 || !Double.isFinite(value))
        {
            return value == 0 ? 0 : value;
        }
        return new BigDecimal(value).round(new MathContext(3)).doubleValue();
    }

    private static String plain(final double value)
    {
        if (value == Math.rint(value) && Math.abs(value) < 1e15)
        {
            return Long.toString((long)value);
        }
        return new BigDecimal(value).round(new MathContext(3)).stripTrailingZeros().toPlainString();
    }
}
