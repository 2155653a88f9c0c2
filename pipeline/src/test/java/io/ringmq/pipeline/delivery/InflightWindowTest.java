package io.ringmq.pipeline.delivery;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The in-flight window's packet identifier index against a plain map, under every pattern of identifiers a
 * session produces: sequential, wrapping past 65,535, restored at random after a restart, and many that share a
 * home cell; and the earliest slot it keeps for {@link StalledClients} against the order of the adds.
 */
class InflightWindowTest
{
    @Test
    @DisplayName("find agrees with a map of the taken slots, add takes the lowest free slot and earliest names the " +
        "one added first of those taken, through 40 seeds × "
        + "5,000 random adds and removes: windows of 1 to 1,024 slots growing from 4, identifiers sequential, "
        + "wrapping, random and colliding")
    void findAgreesWithTheTakenSlots()
    {
        for (long seed = 1; seed <= 40; seed++)
        {
            final SplittableRandom random = new SplittableRandom(seed);
            final int maxSlots = 1 + random.nextInt(random.nextBoolean() ? 32 : 1_024);
            final InflightWindow window = new InflightWindow(Math.min(InflightWindow.INITIAL_SLOTS, maxSlots));
            final Map<Integer, Integer> taken = new HashMap<>();
            final List<Integer> ids = new ArrayList<>();
            final java.util.BitSet slots = new java.util.BitSet();
            int next = 1 + random.nextInt(65_535); // sequential identifiers wrap past 65,535 in most seeds
            for (int step = 0; step < 5_000; step++)
            {
                if (taken.size() < maxSlots && (taken.isEmpty() || random.nextInt(5) < 3))
                {
                    int packetId;
                    do
                    {
                        switch (random.nextInt(3))
                        {
                            case 0:
                                packetId = next;
                                next = next == 65_535 ? 1 : next + 1;
                                break;
                            case 1:
                                packetId = 1 + random.nextInt(65_535);
                                break;
                            default:
                                packetId = 7 + 64 * random.nextInt(1_000); // one home cell in any index up to 64
                        }
                    }
                    while (taken.containsKey(packetId));
                    final int slot = window.add(new SharedMessage(0), packetId, 1, DeliverySession.AWAIT_PUBACK, false,
                        null, 0, maxSlots);
                    assertThat(slot).as("seed %d step %d: the lowest free slot, as ever", seed, step)
                        .isEqualTo(slots.nextClearBit(0));
                    slots.set(slot);
                    taken.put(packetId, slot);
                    ids.add(packetId);
                }
                else
                {
                    final int packetId = ids.remove(random.nextInt(ids.size()));
                    final int slot = taken.remove(packetId);
                    window.remove(slot);
                    slots.clear(slot);
                    assertThat(window.find(packetId)).as("seed %d: %d after its removal", seed, packetId)
                        .isEqualTo(-1);
                }
                for (int i = 0; i < ids.size(); i += step % 50 == 0 ? 1 : 1 + random.nextInt(ids.size()))
                {
                    final int packetId = ids.get(i); // every one every 50 steps, a few in between
                    if (window.find(packetId) != taken.get(packetId))
                    {
                        assertThat(window.find(packetId)).as("seed %d step %d: packet id %d", seed, step, packetId)
                            .isEqualTo(taken.get(packetId));
                    }
                }
                final int absent = 1 + random.nextInt(65_535);
                assertThat(window.find(absent)).as("seed %d: %d", seed, absent)
                    .isEqualTo(taken.getOrDefault(absent, -1));
                assertThat(window.count()).isEqualTo(taken.size());
                if (random.nextBoolean()) // asked now and then: what it keeps of the earliest must hold between asks
                {
                    assertThat(window.earliest()).as("seed %d step %d: the slot first sent the earliest", seed, step)
                        .isEqualTo(ids.isEmpty() ? -1 : taken.get(ids.get(0)));
                }
            }
        }
    }
}
