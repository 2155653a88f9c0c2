package io.ringmq.pipeline.persistence;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link LazyStore}: bookkeeping alone opens nothing; the first other record opens the store once and commits the
 * bookkeeping with it; a failed opening fails that write only; nothing opens after close.
 */
class LazyStoreTest
{
    private final MemoryStore real = MemoryStore.retaining();
    private final AtomicInteger opens = new AtomicInteger();
    private final LazyStore store = new LazyStore(() ->
    {
        opens.incrementAndGet();
        return real;
    }, "test store");
    private final UnsafeBuffer key = new UnsafeBuffer(new byte[32]);
    private final UnsafeBuffer value = new UnsafeBuffer(new byte[8]);

    @Test
    void bookkeepingAloneOpensNothingAndIsDroppedAtClose()
    {
        final StoreWriter writer = store.writer(true);
        startEpoch(writer, 1);
        writer.put(key, 0, Records.aliveKey(key), value, 0, 8);
        writer.commit();
        store.writer(true).put(key, 0, Records.stopKey(key), value, 0, 8);
        store.close();

        assertThat(opens).hasValue(0);
        assertThat(store.isOpened()).isFalse();
        assertThat(real.size()).isZero();
        assertThat(store.scan((k, kl, v, vl) -> { })).isNotNull();
        assertThat(store.describe()).contains("test store").contains("created at the first record");
    }

    @Test
    void theFirstRecordOpensOnceAndCarriesTheBookkeepingInItsBatch()
    {
        final StoreWriter recovery = store.writer(true);
        final StoreWriter stage = store.writer(true);
        final StoreWriter shard = store.writer(false); // made before the opening, bound after it
        startEpoch(recovery, 7);
        stage.put(key, 0, Records.aliveKey(key), value, 0, 8);
        stage.commit();
        assertThat(opens).hasValue(0);

        stage.put(key, 0, Records.aliveKey(key), value, 0, 8); // uncommitted bookkeeping, then a session record
        stage.put(key, 0, Records.sessionKey(key, 42, Records.SESSION), value, 0, 4);
        assertThat(opens).hasValue(1);
        assertThat(real.size()).as("nothing committed before the batch is").isZero();
        stage.commit();
        assertThat(keys()).containsExactly("00 61", "00 65", "01 00 00 00 00 00 00 00 2a 01");

        shard.deleteOnce(key, 0, Records.sessionKey(key, 42, Records.SESSION));
        shard.commit();
        stage.put(key, 0, Records.aliveKey(key), value, 0, 8);
        stage.commit();
        assertThat(opens).hasValue(1);
        assertThat(keys()).containsExactly("00 61", "00 65");
        assertThat(store.writer(true)).as("a writer made after the opening is the store's own")
            .isNotInstanceOf(recovery.getClass());
    }

    @Test
    void aWriterWithOnlyBookkeepingCommitsToTheStoreOnceItIsOpen()
    {
        final StoreWriter late = store.writer(true);
        late.put(key, 0, Records.stopKey(key), value, 0, 8); // Pipeline.stopped() after the stage opened it
        final StoreWriter stage = store.writer(true);
        stage.put(key, 0, Records.sessionKey(key, 1, Records.SESSION), value, 0, 4);
        stage.commit();
        late.commit();
        assertThat(keys()).containsExactly("00 73", "01 00 00 00 00 00 00 00 01 01");
    }

    @Test
    void aRangeDeleteBeforeTheOpeningDeletesPendingBookkeepingOnly()
    {
        final StoreWriter writer = store.writer(true);
        writer.put(key, 0, Records.aliveKey(key), value, 0, 8);
        writer.put(key, 0, Records.epochKey(key), value, 0, 8);
        writer.commit();
        final UnsafeBuffer to = new UnsafeBuffer(new byte[2]);
        to.putByte(0, Records.META);
        to.putByte(1, (byte)'b');
        writer.deleteRange(key, 0, Records.aliveKey(key), to, 0, 2); // [00 61, 00 62): the alive record
        writer.commit();
        assertThat(opens).hasValue(0);
        writer.put(key, 0, Records.sessionKey(key, 1, Records.SESSION), value, 0, 4);
        writer.commit();
        assertThat(keys()).containsExactly("00 65", "01 00 00 00 00 00 00 00 01 01");
    }

    @Test
    void aFailedOpeningFailsThatWriteAndTheNextWriteOpens()
    {
        final AtomicInteger attempts = new AtomicInteger();
        final LazyStore failingOnce = new LazyStore(() ->
        {
            if (attempts.incrementAndGet() == 1)
            {
                throw new StoreException("disk full");
            }
            return real;
        }, "flaky");
        final StoreWriter writer = failingOnce.writer(true);
        assertThatThrownBy(() -> writer.put(key, 0, Records.sessionKey(key, 1, Records.SESSION), value, 0, 4))
            .isInstanceOf(StoreException.class).hasMessageContaining("disk full");
        assertThat(failingOnce.isOpened()).isFalse();
        writer.put(key, 0, Records.sessionKey(key, 1, Records.SESSION), value, 0, 4);
        writer.commit();
        assertThat(failingOnce.isOpened()).isTrue();
        assertThat(keys()).containsExactly("01 00 00 00 00 00 00 00 01 01");
    }

    @Test
    void nothingOpensAfterClose()
    {
        final StoreWriter writer = store.writer(true);
        store.close();
        assertThatThrownBy(() -> writer.put(key, 0, Records.sessionKey(key, 1, Records.SESSION), value, 0, 4))
            .isInstanceOf(StoreException.class).hasMessageContaining("closed");
        assertThat(opens).hasValue(0);
    }

    /**
     * What recovery writes at every start: the new epoch, and no clean stop.
     */
    private void startEpoch(final StoreWriter writer, final long epoch)
    {
        value.putLong(0, epoch);
        writer.put(key, 0, Records.epochKey(key), value, 0, 8);
        writer.delete(key, 0, Records.stopKey(key));
        writer.commit();
    }

    private List<String> keys()
    {
        final List<String> keys = new ArrayList<>();
        real.scan((k, keyLength, v, valueLength) ->
        {
            final StringBuilder hex = new StringBuilder();
            for (int i = 0; i < keyLength; i++)
            {
                hex.append(i == 0 ? "" : " ").append(String.format("%02x", k.getByte(i) & 0xFF));
            }
            keys.add(hex.toString());
        });
        return keys;
    }
}
