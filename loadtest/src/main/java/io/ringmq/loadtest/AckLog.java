package io.ringmq.loadtest;

import org.agrona.collections.LongHashSet;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;

/**
 * The crash-loss experiment's record of acknowledged messages: a text file, append-only, that every publish phase
 * (one per kill round) extends, so that it outlives the broker it measures.
 * <pre>
 * # crash-loss: acknowledged QoS 1 messages, "round sequence" per line   written by prepare (truncates)
 * # round 1 2026-12-01T10:00:00                                          written by each publish phase
 * 1 0                                                                    one line per PUBACK
 * 1 1
 * # round 2 2026-12-01T10:00:04
 * 2 0
 * </pre>
 * A message is named by its round (the publisher id in the payload's stamp) and its sequence within the round, so
 * the rounds never reuse a name, even for a message sent but not acknowledged before a kill. A line that does not
 * read (a write cut short) is counted, not fatal.
 */
final class AckLog implements AutoCloseable
{
    static final String ROUND_HEADER = "# round ";

    /**
     * What an acknowledged-messages file holds.
     *
     * @param acknowledged every message acknowledged, as {@link #key}.
     * @param lastRound the highest round started in the file, 0 when none.
     * @param malformedCount lines that did not read.
     */
    record Contents(LongHashSet acknowledged, int lastRound, long malformedCount)
    {
    }

    private final BufferedWriter writer;

    private AckLog(final BufferedWriter writer)
    {
        this.writer = writer;
    }

    /**
     * @return a message's name: its round in the high 32 bits, its sequence in the low.
     */
    static long key(final int round, final int sequence)
    {
        return ((long)round << 32) | (sequence & 0xFFFF_FFFFL);
    }

    static int roundOf(final long key)
    {
        return (int)(key >>> 32);
    }

    static int sequenceOf(final long key)
    {
        return (int)key;
    }

    /**
     * Starts a new experiment: {@code file} is created or emptied, with a header line.
     */
    static void create(final Path file, final String description) throws IOException
    {
        if (null != file.toAbsolutePath().getParent())
        {
            Files.createDirectories(file.toAbsolutePath().getParent());
        }
        Files.writeString(file, "# crash-loss: acknowledged QoS 1 messages, \"round sequence\" per line; " +
            description + "\n", StandardCharsets.UTF_8);
    }

    /**
     * Opens {@code file} to append one round, after its header line.
     */
    static AckLog appendRound(final Path file, final int round) throws IOException
    {
        final AckLog log = new AckLog(Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
            StandardOpenOption.APPEND));
        log.writer.write(ROUND_HEADER + round + " " +
            LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME) + "\n");
        log.writer.flush();
        return log;
    }

    void acknowledged(final int round, final int sequence) throws IOException
    {
        writer.write(Integer.toString(round));
        writer.write(' ');
        writer.write(Integer.toString(sequence));
        writer.write('\n');
    }

    void flush() throws IOException
    {
        writer.flush();
    }

    public void close() throws IOException
    {
        writer.close();
    }

    static Contents read(final Path file) throws IOException
    {
        return parse(Files.exists(file) ? Files.readAllLines(file, StandardCharsets.UTF_8) : List.of());
    }

    static Contents parse(final List<String> lines)
    {
        final LongHashSet acknowledged = new LongHashSet();
        int lastRound = 0;
        long malformed = 0;
        for (final String raw : lines)
        {
            final String line = raw.strip();
            if (line.isEmpty())
            {
                continue;
            }
            if (line.startsWith(ROUND_HEADER))
            {
                final String rest = line.substring(ROUND_HEADER.length()).strip();
                final int space = rest.indexOf(' ');
                try
                {
                    lastRound = Math.max(lastRound, Integer.parseInt(space < 0 ? rest : rest.substring(0, space)));
                }
                catch (final NumberFormatException ex)
                {
                    malformed++;
                }
                continue;
            }
            if (line.startsWith("#"))
            {
                continue;
            }
            final int space = line.indexOf(' ');
            try
            {
                if (space < 0)
                {
                    throw new NumberFormatException(line);
                }
                final int round = Integer.parseInt(line.substring(0, space));
                final int sequence = Integer.parseInt(line.substring(space + 1).strip());
                if (round < 1 || sequence < 0)
                {
                    throw new NumberFormatException(line);
                }
                acknowledged.add(key(round, sequence));
                lastRound = Math.max(lastRound, round);
            }
            catch (final NumberFormatException ex)
            {
                malformed++;
            }
        }
        return new Contents(acknowledged, lastRound, malformed);
    }
}
