package io.ringmq.pipeline;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The stages' map by connection id with the last value found remembered: it must never answer with a value the
 * connection no longer has (a PUBLISH routed for a session that ended, or judged by rules it no longer has).
 */
class ByConnectionTest
{
    @Test
    @DisplayName("a removed or replaced connection is never answered from what was remembered")
    void neverStale()
    {
        final ByConnection<String> map = new ByConnection<>();
        map.put(7, "a");
        assertThat(map.get(7)).isEqualTo("a");
        assertThat(map.get(7)).isEqualTo("a"); // remembered
        assertThat(map.put(7, "b")).isEqualTo("a");
        assertThat(map.get(7)).isEqualTo("b");
        assertThat(map.remove(7)).isEqualTo("b");
        assertThat(map.get(7)).isNull();
        assertThat(map.size()).isZero();
    }

    @Test
    @DisplayName("connection 0 (the id a fresh map remembers nothing for) is looked up, not answered null")
    void connectionZero()
    {
        final ByConnection<String> map = new ByConnection<>();
        assertThat(map.get(0)).isNull();
        map.put(0, "zero");
        assertThat(map.get(0)).isEqualTo("zero");
        map.remove(0);
        assertThat(map.get(0)).isNull();
    }

    @Test
    @DisplayName("random puts, removes and runs of lookups answer exactly what a HashMap does (30 seeds)")
    void matchesAModel()
    {
        for (long seed = 1; seed <= 30; seed++)
        {
            final SplittableRandom random = new SplittableRandom(seed);
            final ByConnection<Integer> map = new ByConnection<>();
            final Map<Long, Integer> model = new HashMap<>();
            for (int step = 0; step < 20_000; step++)
            {
                final long id = random.nextInt(16);
                switch (random.nextInt(6))
                {
                    case 0 -> assertThat(map.put(id, step)).isEqualTo(model.put(id, step));
                    case 1 -> assertThat(map.remove(id)).isEqualTo(model.remove(id));
                    default ->
                    {
                        for (int run = random.nextInt(4); run >= 0; run--)
                        {
                            assertThat(map.get(id)).as("seed %d step %d id %d", seed, step, id)
                                .isEqualTo(model.get(id));
                        }
                    }
                }
            }
            assertThat(map.size()).isEqualTo(model.size());
            final List<Integer> values = new ArrayList<>();
            map.forEachValue(values::add);
            assertThat(values).containsExactlyInAnyOrderElementsOf(model.values());
        }
    }
}
