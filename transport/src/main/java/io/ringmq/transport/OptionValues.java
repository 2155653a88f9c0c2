package io.ringmq.transport;

import java.util.Locale;

/**
 * Reads the command line's option values that are more than a number or a path: durations and enum names, each
 * failure an {@link IllegalArgumentException} whose message is the one line the user sees.
 */
final class OptionValues
{
    private OptionValues()
    {
    }

    /**
     * @return a duration as the options write it (10000 -> 10s, 500 -> 500ms): how a default reads in the help.
     */
    static String durationText(final long ms)
    {
        return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
    }

    /**
     * Reads a duration: a number with ms or s; a bare number is seconds.
     */
    static int parseDurationMs(final String text)
    {
        final String value = text.strip().toLowerCase(Locale.ROOT);
        try
        {
            if (value.endsWith("ms"))
            {
                return Integer.parseInt(value.substring(0, value.length() - 2));
            }
            if (value.endsWith("s"))
            {
                return Math.multiplyExact(Integer.parseInt(value.substring(0, value.length() - 1)), 1000);
            }
            return Math.multiplyExact(Integer.parseInt(value), 1000);
        }
        catch (final NumberFormatException | ArithmeticException ex)
        {
            throw new IllegalArgumentException("cannot read duration '" + text + "' (e.g. 10s or 500ms)");
        }
    }

    /**
     * Reads a duration that may be long: a number with ms, s, m (minutes), h, d or w; a bare number is seconds.
     */
    static long parseLongDurationMs(final String text)
    {
        final String value = text.strip().toLowerCase(Locale.ROOT);
        final String[] units = {"ms", "s", "m", "h", "d", "w"};
        final long[] scale = {1, 1_000, 60_000, 3_600_000, 86_400_000, 604_800_000};
        try
        {
            for (int i = 0; i < units.length; i++)
            {
                if (value.endsWith(units[i]))
                {
                    final long number = Long.parseLong(value.substring(0, value.length() - units[i].length()));
                    return Math.multiplyExact(number, scale[i]);
                }
            }
            return Math.multiplyExact(Long.parseLong(value), 1_000L);
        }
        catch (final NumberFormatException | ArithmeticException ex)
        {
            throw new IllegalArgumentException("cannot read duration '" + text + "' (e.g. 30s, 2h, 7d or 1w)");
        }
    }

    /**
     * Reads an enum constant by its name in lower case, {@code -} for {@code _}; a failure names the option and
     * lists the constants.
     */
    static <E extends Enum<E>> E parseEnum(final Class<E> type, final String text, final String option)
    {
        try
        {
            return Enum.valueOf(type, text.strip().toUpperCase(Locale.ROOT).replace('-', '_'));
        }
        catch (final IllegalArgumentException ex)
        {
            final StringBuilder names = new StringBuilder();
            for (final E constant : type.getEnumConstants())
            {
                names.append(names.length() > 0 ? ", " : "").append(constant.name().toLowerCase(Locale.ROOT)
                    .replace('_', '-'));
            }
            throw new IllegalArgumentException(option + " must be one of " + names + ": '" + text + "'");
        }
    }
}
