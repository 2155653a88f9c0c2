package io.ringmq.pipeline;

import io.ringmq.pipeline.subscription.SharedGroup;
import org.agrona.collections.IntArrayList;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The group keys a routing entry carries for its shared subscription targets (the persistence stage stores each with
 * its message, so that after a restart the message is tied again to its group), and the bound they share with the
 * targets in an entry sized for 16 bytes per session.
 */
class RouteOutputGroupKeysTest
{
    private static RouteOutput written(final RouteOutput.Writer writer, final IngressEvent event)
    {
        final MessageLog log = new MessageLog(1 << 16);
        final int length = writer.length(0);
        final long end = log.claim(length);
        writer.write(log.buffer(), log.indexOf(end, length), new IntArrayList(), 0, event);
        event.routeLogEnd = end;
        event.routeLogLength = length;
        return new RouteOutput().wrap(log, event);
    }

    @Test
    @DisplayName("4.8.2: each target from a shared group reads back its own group's key, in target order, among "
        + "targets of no group and a retained message")
    void keysReadBackInTargetOrder()
    {
        final long a = SharedGroup.key("a", "t/#");
        final long b = SharedGroup.key("b", "t/+");
        final RouteOutput.Writer writer = new RouteOutput.Writer();
        writer.reset();
        writer.addTarget(1, 1, false, 0, 0);
        writer.addTarget(2, 1, false, 0, 0, 7, a);
        writer.addTarget(2, 1, false, 0, 0, 9, b);
        writer.addTarget(3, 0, false, 0, 0);
        writer.addTarget(4, 1, false, 0, 0, 7, a);
        writer.addRetained(new Message("r/1".getBytes(), new byte[5], 1, true, new byte[0], Message.NEVER), 1, 1 << 16);
        final IngressEvent event = new IngressEvent(64);
        final RouteOutput route = written(writer, event);
        assertThat(event.targetCount).isEqualTo(5);
        assertThat(new int[]{route.targetGroup(0), route.targetGroup(1), route.targetGroup(2), route.targetGroup(3),
            route.targetGroup(4)}).containsExactly(0, 7, 9, 0, 7);
        assertThat(new long[]{route.targetGroupKey(0), route.targetGroupKey(1), route.targetGroupKey(2)})
            .containsExactly(a, b, a);
        assertThat(a).as("two groups, two keys").isNotEqualTo(b);
        assertThat(route.copyOrdinal(2)).as("the session's second stored copy").isEqualTo(1);
    }

    @Test
    @DisplayName("a shared target's key counts against the entry's bound: maxTargets × 16 bytes of targets and keys")
    void keysShareTheTargetBound()
    {
        final RouteOutput.Writer writer = new RouteOutput.Writer();
        writer.reset();
        writer.maxTargets(4); // 64 bytes
        assertThat(writer.addTarget(1, 1, false, 0, 0, 5, 55L)).isTrue(); // 24
        assertThat(writer.addTarget(2, 1, false, 0, 0, 5, 55L)).isTrue(); // 48
        assertThat(writer.addTarget(3, 1, false, 0, 0, 5, 55L)).as("72 bytes: past the bound").isFalse();
        assertThat(writer.addTarget(3, 1, false, 0, 0)).as("64 bytes: a plain target still fits").isTrue();
        assertThat(writer.addTarget(4, 1, false, 0, 0)).isFalse();
        assertThat(writer.targetCount()).isEqualTo(3);
        assertThat(writer.length(0)).isEqualTo(3 * RouteOutput.TARGET_LENGTH + 2 * 8);
    }
}
