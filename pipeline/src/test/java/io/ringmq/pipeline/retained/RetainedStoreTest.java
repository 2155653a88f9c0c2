package io.ringmq.pipeline.retained;

import io.ringmq.pipeline.Message;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

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
}
