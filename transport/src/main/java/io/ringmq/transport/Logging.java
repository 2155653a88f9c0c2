package io.ringmq.transport;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.Locale;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The command line's logging: the broker logs through {@link System.Logger} (lifecycle, configuration, limits hit,
 * errors once per distinct cause; nothing on the hot path), which this routes to one console handler at
 * {@code --log-level}, as plain lines or, with {@code --log-format json}, one JSON object per line.
 */
final class Logging
{
    private Logging()
    {
    }

    /**
     * @param level  error, warn, info or debug.
     * @param format text or json.
     */
    static void configure(final String level, final String format)
    {
        final Level julLevel = level(level);
        final Formatter formatter = switch (format.toLowerCase(Locale.ROOT))
        {
            case "text" -> new TextFormatter();
            case "json" -> new JsonFormatter();
            default -> throw new IllegalArgumentException("--log-format must be text or json: '" + format + "'");
        };
        final Logger root = Logger.getLogger("");
        for (final Handler handler : root.getHandlers())
        {
            root.removeHandler(handler);
        }
        final ConsoleHandler console = new ConsoleHandler();
        console.setLevel(julLevel);
        console.setFormatter(formatter);
        root.addHandler(console);
        root.setLevel(julLevel);
    }

    /**
     * Sets the level of the root logger and its handlers (a reload); the format stays as at start.
     */
    static void reconfigureLevel(final String level)
    {
        final Level julLevel = level(level);
        final Logger root = Logger.getLogger("");
        for (final Handler handler : root.getHandlers())
        {
            handler.setLevel(julLevel);
        }
        root.setLevel(julLevel);
    }

    static Level level(final String level)
    {
        return switch (level.toLowerCase(Locale.ROOT))
        {
            case "error" -> Level.SEVERE;
            case "warn", "warning" -> Level.WARNING;
            case "info" -> Level.INFO;
            case "debug" -> Level.FINE;
            default -> throw new IllegalArgumentException("--log-level must be error, warn, info or debug: '" +
                level + "'");
        };
    }

    private static String name(final Level level)
    {
        if (level.intValue() >= Level.SEVERE.intValue())
        {
            return "ERROR";
        }
        if (level.intValue() >= Level.WARNING.intValue())
        {
            return "WARN";
        }
        return level.intValue() >= Level.INFO.intValue() ? "INFO" : "DEBUG";
    }

    private static String thrown(final LogRecord record)
    {
        if (null == record.getThrown())
        {
            return null;
        }
        final StringWriter trace = new StringWriter();
        record.getThrown().printStackTrace(new PrintWriter(trace));
        return trace.toString();
    }

    /**
     * {@code 2026-11-30T08:00:00Z INFO io.ringmq message}, and a stack trace below when there is one.
     */
    static final class TextFormatter extends Formatter
    {
        public String format(final LogRecord record)
        {
            final String trace = thrown(record);
            return Instant.ofEpochMilli(record.getMillis()) + " " + name(record.getLevel()) + " " +
                record.getLoggerName() + " " + formatMessage(record) + System.lineSeparator() +
                (null == trace ? "" : trace);
        }
    }

    /**
     * One JSON object per line: time, level, logger, message, and thrown when there is one.
     */
    static final class JsonFormatter extends Formatter
    {
        public String format(final LogRecord record)
        {
            final StringBuilder json = new StringBuilder(160).append("{\"time\":\"")
                .append(Instant.ofEpochMilli(record.getMillis())).append("\",\"level\":\"")
                .append(name(record.getLevel())).append("\",\"logger\":");
            quote(json, record.getLoggerName()).append(",\"message\":");
            quote(json, formatMessage(record));
            final String trace = thrown(record);
            if (null != trace)
            {
                quote(json.append(",\"thrown\":"), trace);
            }
            return json.append('}').append(System.lineSeparator()).toString();
        }

        static StringBuilder quote(final StringBuilder json, final String text)
        {
            json.append('"');
            final String value = null == text ? "" : text;
            for (int i = 0; i < value.length(); i++)
            {
                final char c = value.charAt(i);
                switch (c)
                {
                    case '"' -> json.append("\\\"");
                    case '\\' -> json.append("\\\\");
                    case '\n' -> json.append("\\n");
                    case '\r' -> json.append("\\r");
                    case '\t' -> json.append("\\t");
                    default ->
                    {
                        if (c < 0x20)
                        {
                            json.append(String.format("\\u%04x", (int)c));
                        }
                        else
                        {
                            json.append(c);
                        }
                    }
                }
            }
            return json.append('"');
        }
    }
}
