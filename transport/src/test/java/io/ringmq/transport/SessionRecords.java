package io.ringmq.transport;

import io.ringmq.persistence.RocksDbSettings;
import io.ringmq.persistence.RocksDbStore;
import io.ringmq.pipeline.persistence.Records;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Session and retained records of a stopped broker's data directory rewritten as a build before wrote them.
 */
final class SessionRecords
{
    private SessionRecords()
    {
    }

    /**
     * Cuts every session record back to its layout before the owner (user and ACL client id) was stored: it ends
     * with its will.
     */
    static void dropOwners(final Path dataDir)
    {
        if (rewrite(dataDir, (key, keyLength) -> keyLength == Records.KIND_KEY_LENGTH &&
            key.getByte(0) == Records.SESSIONS && Records.kindOf(key) == Records.SESSION, SessionRecords::willEnd) == 0)
        {
            throw new AssertionError("no session record in " + dataDir);
        }
    }

    /**
     * Puts every record {@code chosen} picks back with only its first {@code kept} bytes.
     *
     * @return how many it rewrote.
     */
    private static int rewrite(final Path dataDir, final java.util.function.BiPredicate<DirectBuffer, Integer> chosen,
        final java.util.function.ToIntFunction<DirectBuffer> kept)
    {
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dataDir)))
        {
            final List<byte[][]> cut = new ArrayList<>();
            store.scan((key, keyLength, value, valueLength) ->
            {
                if (chosen.test(key, keyLength))
                {
                    final byte[] k = new byte[keyLength];
                    key.getBytes(0, k);
                    final byte[] v = new byte[kept.applyAsInt(value)];
                    value.getBytes(0, v);
                    cut.add(new byte[][] {k, v});
                }
            });
            final StoreWriter writer = store.writer(false);
            for (final byte[][] record : cut)
            {
                writer.put(new UnsafeBuffer(record[0]), 0, record[0].length, new UnsafeBuffer(record[1]), 0,
                    record[1].length);
            }
            writer.commit();
            return cut.size();
        }
    }

    /**
     * Cuts every retained record back to its layout before its source was stored: it ends with its message.
     *
     * @return how many were cut.
     */
    static int dropRetainedSources(final Path dataDir)
    {
        return rewrite(dataDir, (key, keyLength) -> key.getByte(0) == Records.RETAINED,
            value -> 9 + Records.messageLength(value, 9));
    }

    private static int willEnd(final DirectBuffer value)
    {
        final int at = Records.afterString(value, 1);
        return value.getByte(at) == 1 ? at + 15 + Records.messageLength(value, at + 15) : at + 1;
    }
}
