package io.ringmq.pipeline.retained;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.MessageSource;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RetainedStoreTest
{
    private final RetainedStore store = new RetainedStore();

    private void put(final String topic, final String payload)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 1);
    }

    private List<String> match(final String filter)
    {
        final List<String> found = new ArrayList<>();
        store.match(filter, (Message m) -> found.add(new String(m.topic(), StandardCharsets.UTF_8) + "=" +
            new String(m.payload(), StandardCharsets.UTF_8)));
        found.sort(String::compareTo);
        return found;
    }

    @Test
    @DisplayName("MQTT-3.3.1-5, MQTT-3.3.1-10: stored, replaced, cleared by an empty payload")
    void storeReplaceClear()
    {
        put("a/b", "1");
        put("a/b", "2");
        put("a/c", "3");
        assertThat(match("a/b")).containsExactly("a/b=2");
        put("a/b", "");
        assertThat(match("a/#")).containsExactly("a/c=3");
        assertThat(store.size()).isEqualTo(1);
        put("a/c", "");
        assertThat(store.size()).isZero();
        assertThat(store.payloadBytes()).isZero();
    }

    @Test
    void wildcardsWalkTheTrie()
    {
        put("a", "parent");
        put("a/b/c", "deep");
        put("a/x/c", "other");
        put("$SYS/uptime", "sys");
        assertThat(match("a/#")).containsExactly("a/b/c=deep", "a/x/c=other", "a=parent");
        assertThat(match("a/+/c")).containsExactly("a/b/c=deep", "a/x/c=other");
        assertThat(match("#")).containsExactly("a/b/c=deep", "a/x/c=other", "a=parent");
        assertThat(match("+/uptime")).isEmpty();
        assertThat(match("$SYS/#")).containsExactly("$SYS/uptime=sys");
    }

    @Test
    @DisplayName("the broker's own retained messages ($SYS) are not refused by the limits "
        + "and do not use up what clients may retain")
    void exemptMessagesDoNotCountAgainstTheLimits()
    {
        final RetainedStore limited = new RetainedStore(2, 1 << 20);
        final byte[] sys = "$SYS/broker/uptime".getBytes(StandardCharsets.UTF_8);
        final byte[] value = "5 seconds".getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < 5; i++)
        {
            final byte[] topic = ("$SYS/broker/x" + i).getBytes(StandardCharsets.UTF_8);
            assertThat(limited.put(new UnsafeBuffer(topic), 0, topic.length, new UnsafeBuffer(value), 0, value.length,
                0, true)).isEqualTo(RetainedStore.STORED);
        }
        assertThat(limited.put(new UnsafeBuffer(sys), 0, sys.length, new UnsafeBuffer(value), 0, value.length, 0,
            true)).isEqualTo(RetainedStore.STORED);
        assertThat(put(limited, "a", "1")).isEqualTo(RetainedStore.STORED);
        assertThat(put(limited, "b", "2")).isEqualTo(RetainedStore.STORED);
        assertThat(put(limited, "c", "3")).isEqualTo(RetainedStore.REFUSED_COUNT);
        assertThat(limited.size()).isEqualTo(8);
    }

    private static int put(final RetainedStore target, final String topic, final String payload)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        return target.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 1);
    }

    private static List<String> match(final RetainedStore target, final String filter)
    {
        final List<String> found = new ArrayList<>();
        target.match(filter, (Message m) -> found.add(new String(m.topic(), StandardCharsets.UTF_8) + "=" +
            new String(m.payload(), StandardCharsets.UTF_8)));
        found.sort(String::compareTo);
        return found;
    }

    @Test
    @DisplayName("MQTT-3.3.1-5, MQTT-3.3.1-10: put reports STORED, REPLACED and CLEARED")
    void putResults()
    {
        assertThat(put(store, "a/b", "1")).isEqualTo(RetainedStore.STORED);
        assertThat(put(store, "a/b", "22")).isEqualTo(RetainedStore.REPLACED);
        assertThat(store.size()).isEqualTo(1);
        assertThat(store.bytes()).isEqualTo(3 + 2);
        assertThat(store.payloadBytes()).isEqualTo(2);
        assertThat(put(store, "a/b", "")).isEqualTo(RetainedStore.CLEARED);
        assertThat(put(store, "never/there", "")).isEqualTo(RetainedStore.CLEARED);
        assertThat(store.size()).isZero();
        assertThat(store.bytes()).isZero();
        assertThat(match(store, "#")).isEmpty();
    }

    @Test
    void defaultLimits()
    {
        assertThat(store.maxCount()).isEqualTo(100_000);
        assertThat(store.maxBytes()).isEqualTo(256L * 1024 * 1024);
        assertThatThrownBy(() -> new RetainedStore(0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RetainedStore(1, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("a new topic past the count limit is refused; replacing and clearing still work at the limit")
    void countLimit()
    {
        final RetainedStore limited = new RetainedStore(2, 1_000);
        assertThat(put(limited, "a", "1")).isEqualTo(RetainedStore.STORED);
        assertThat(put(limited, "b", "2")).isEqualTo(RetainedStore.STORED);
        assertThat(put(limited, "c/d/e", "3")).isEqualTo(RetainedStore.REFUSED_COUNT);
        assertThat(limited.size()).isEqualTo(2);
        assertThat(limited.bytes()).isEqualTo(4);
        assertThat(match(limited, "#")).containsExactly("a=1", "b=2");

        assertThat(put(limited, "a", "11")).isEqualTo(RetainedStore.REPLACED);
        assertThat(put(limited, "a", "")).isEqualTo(RetainedStore.CLEARED);
        assertThat(put(limited, "c/d/e", "3")).isEqualTo(RetainedStore.STORED);
        assertThat(match(limited, "#")).containsExactly("b=2", "c/d/e=3");
        assertThat(limited.size()).isEqualTo(2);
    }

    @Test
    @DisplayName("topic plus payload bytes past the limit are refused and the old message kept; a replacement counts"
        + " the difference")
    void bytesLimit()
    {
        final RetainedStore limited = new RetainedStore(100, 10);
        assertThat(put(limited, "a", "123456789")).isEqualTo(RetainedStore.STORED);
        assertThat(limited.bytes()).isEqualTo(10);
        assertThat(put(limited, "b", "1")).isEqualTo(RetainedStore.REFUSED_BYTES);
        assertThat(put(limited, "a", "1234567890")).isEqualTo(RetainedStore.REFUSED_BYTES);
        assertThat(match(limited, "#")).containsExactly("a=123456789");
        assertThat(limited.bytes()).isEqualTo(10);

        // the same size in place of the old one fits exactly: only the difference counts
        assertThat(put(limited, "a", "987654321")).isEqualTo(RetainedStore.REPLACED);
        assertThat(put(limited, "a", "1234")).isEqualTo(RetainedStore.REPLACED);
        assertThat(limited.bytes()).isEqualTo(5);
        assertThat(limited.payloadBytes()).isEqualTo(4);
        assertThat(put(limited, "bb", "1234")).isEqualTo(RetainedStore.REFUSED_BYTES);
        assertThat(put(limited, "b", "1234")).isEqualTo(RetainedStore.STORED);
        assertThat(limited.bytes()).isEqualTo(10);
        assertThat(match(limited, "#")).containsExactly("a=1234", "b=1234");

        final RetainedStore tiny = new RetainedStore(10, 3);
        assertThat(put(tiny, "long/topic", "x")).isEqualTo(RetainedStore.REFUSED_BYTES);
        assertThat(tiny.size()).isZero();
        assertThat(match(tiny, "#")).isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.3.1-10: a cleared topic can be stored again, and clearing frees its count and bytes")
    void clearThenStore()
    {
        final RetainedStore limited = new RetainedStore(1, 6);
        assertThat(put(limited, "a/b/c", "1")).isEqualTo(RetainedStore.STORED);
        assertThat(put(limited, "a/b/c", "")).isEqualTo(RetainedStore.CLEARED);
        assertThat(limited.size()).isZero();
        assertThat(limited.bytes()).isZero();
        assertThat(match(limited, "a/#")).isEmpty();
        assertThat(put(limited, "a/b", "1234")).isEqualTo(RetainedStore.REFUSED_BYTES);
        assertThat(put(limited, "a/b", "123")).isEqualTo(RetainedStore.STORED);
        assertThat(put(limited, "a/b/c", "1")).isEqualTo(RetainedStore.REFUSED_COUNT);
        assertThat(match(limited, "a/#")).containsExactly("a/b=123");
    }

    @Test
    @DisplayName("MQTT-4.7.1-2, MQTT-4.7.2-1: '#' matches the parent; first-level wildcards skip '$' topics")
    void wildcardEdges()
    {
        put("a", "parent");
        put("a/", "empty-child");
        put("$SYS/x", "sys");
        put("b/$x", "inner-dollar");
        assertThat(match("a/#")).containsExactly("a/=empty-child", "a=parent");
        assertThat(match("a/+")).containsExactly("a/=empty-child");
        assertThat(match("+")).containsExactly("a=parent");
        assertThat(match("+/+")).containsExactly("a/=empty-child", "b/$x=inner-dollar");
        assertThat(match("#")).containsExactly("a/=empty-child", "a=parent", "b/$x=inner-dollar");
        assertThat(match("$SYS/+")).containsExactly("$SYS/x=sys");
    }

    private static int put(final RetainedStore store, final String topic, final String payload,
        final MessageSource source)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        return store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 1, false, null, 0, 0,
            Message.NEVER, source);
    }

    @Test
    @DisplayName("a message's source is kept with it and counts against the byte bound: a publisher with a huge user "
        + "name is refused at the bound, a replacement and a clear give the source's bytes back")
    void sourceCountsAgainstTheBytes()
    {
        final RetainedStore limited = new RetainedStore(100, 1_000);
        final MessageSource small = new MessageSource("al", "c1");
        assertThat(put(limited, "a", "1", small)).isEqualTo(RetainedStore.STORED);
        assertThat(limited.bytes()).isEqualTo(1 + 1 + 4);
        final List<MessageSource> sources = new ArrayList<>();
        limited.match("a", (Message m) -> sources.add(m.source()));
        assertThat(sources).containsExactly(small);

        final MessageSource huge = new MessageSource("u".repeat(991), "c2"); // 993 bytes of names
        assertThat(put(limited, "b", "1", huge)).isEqualTo(RetainedStore.REFUSED_BYTES);
        assertThat(put(limited, "a", "1", huge)).as("in place of the 6 bytes of a: 995 fits")
            .isEqualTo(RetainedStore.REPLACED);
        assertThat(limited.bytes()).isEqualTo(995);
        assertThat(put(limited, "a", "2", null)).isEqualTo(RetainedStore.REPLACED);
        assertThat(limited.bytes()).isEqualTo(2);
        assertThat(put(limited, "a", "", null)).isEqualTo(RetainedStore.CLEARED);
        assertThat(limited.bytes()).isZero();
    }
}
