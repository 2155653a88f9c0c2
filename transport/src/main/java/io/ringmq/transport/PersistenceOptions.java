package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.persistence.Durability;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Locale;

import static io.ringmq.transport.Main.DEFAULTS;

/**
 * The {@code ringmq} options of the store (a picocli mixin of {@link Main}): whether sessions and messages are kept
 * across restarts, where, how durably, and the store's memory.
 */
final class PersistenceOptions
{
    @Option(names = "--persistence", paramLabel = "KIND",
        description = "rocksdb: persistent sessions, their QoS 1/2 messages and retained messages survive a restart "
            + "or a crash, under --data-dir; memory: nothing is kept (Mosquitto's 'persistence true|false' works "
            + "too) (default: ${DEFAULT-VALUE}).", order = 640)
    String persistence = "rocksdb";

    @Option(names = {"--data-dir", "--persistence_location"}, paramLabel = "DIR",
        description = "Where the store lives; one broker per directory (default: ${DEFAULT-VALUE}).", order = 650)
    Path dataDir = Path.of("data");

    @Option(names = "--durability", paramLabel = "MODE",
        description = "sync: fsync every group commit (nothing acknowledged is lost, even by a power cut); "
            + "periodic: fsync every --fsync-interval (a power cut loses at most that window); none: the OS "
            + "writes back when it will. In every mode a crash of the broker process loses nothing acknowledged "
            + "(default: ${DEFAULT-VALUE}).", order = 660)
    String durability = "periodic";

    @Option(names = "--fsync-interval", paramLabel = "DURATION",
        description = "How often --durability periodic fsyncs (default: ${DEFAULT-VALUE}).", order = 670)
    String fsyncInterval = "10ms";

    @Option(names = "--strict-recovery",
        description = "Refuse to start when the store is damaged, instead of starting with what could be recovered.",
        order = 680)
    boolean strictRecovery;

    @Option(names = "--persistence-cache", paramLabel = "BYTES",
        description = "The store's block cache (default: ${DEFAULT-VALUE}).", order = 690)
    long persistenceCache = DEFAULTS.persistence().cacheBytes();

    @Option(names = "--persistence-write-buffers", paramLabel = "BYTES",
        description = "The store's memtables, all together (default: ${DEFAULT-VALUE}).", order = 700)
    long persistenceWriteBuffers = DEFAULTS.persistence().writeBufferBytes();

    /**
     * Copies these options into {@code context}, reading the kind, the durability mode and the fsync interval in
     * that order.
     */
    void applyTo(final BrokerContext context)
    {
        context.persistence().persistent(parsePersistence(persistence))
            .dataDir(dataDir)
            .durability(OptionValues.parseEnum(Durability.class, durability, "--durability"),
                OptionValues.parseLongDurationMs(fsyncInterval))
            .strictRecovery(strictRecovery)
            .memory(persistenceCache, persistenceWriteBuffers);
    }

    /**
     * @return true for rocksdb (or Mosquitto's {@code persistence true}), false for memory (or {@code false}).
     */
    static boolean parsePersistence(final String text)
    {
        switch (text.strip().toLowerCase(Locale.ROOT))
        {
            case "rocksdb":
            case "true":
                return true;
            case "memory":
            case "false":
                return false;
            default:
                throw new IllegalArgumentException("--persistence must be rocksdb or memory (or true/false): '" +
                    text + "'");
        }
    }
}
