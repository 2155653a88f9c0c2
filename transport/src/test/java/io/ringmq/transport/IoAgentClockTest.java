package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The clock an I/O agent judges its connections' time by.
 */
class IoAgentClockTest
{
    @Test
    @DisplayName("hostile: an I/O agent's connect timeouts, keep-alives [MQTT-3.1.2-24], close lingers, memory samples "
        + "and $SYS rounds run on the monotonic clock: on the wall clock a step back (NTP, a resumed VM) stopped them "
        + "all until it caught up, and a step forward expired every keep-alive at once")
    void agentTimeIsMonotonic()
    {
        final long beforeMs = System.nanoTime() / 1_000_000;
        final long agentMs = IoAgent.CLOCK.time();
        final long afterMs = System.nanoTime() / 1_000_000;
        assertThat(agentMs).isBetween(beforeMs, afterMs);
    }
}
