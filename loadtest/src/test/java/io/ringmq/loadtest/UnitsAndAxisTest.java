package io.ringmq.loadtest;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Plot labels in human units, and the ticks each kind of axis gets.
 */
class UnitsAndAxisTest
{
    @Test
    void latencyLabelsChangeUnitAtEachThousand()
    {
        assertThat(Units.latency(0)).isEqualTo("0 µs");
        assertThat(Units.latency(1)).isEqualTo("1 µs");
        assertThat(Units.latency(500)).isEqualTo("500 µs");
        assertThat(Units.latency(999)).isEqualTo("999 µs");
        assertThat(Units.latency(1_000)).isEqualTo("1 ms");
        assertThat(Units.latency(1_500)).isEqualTo("1.5 ms");
        assertThat(Units.latency(20_000)).isEqualTo("20 ms");
        assertThat(Units.latency(31_623)).isEqualTo("31.6 ms");
        assertThat(Units.latency(999_999)).as("rounds to 1,000 ms, so reads in seconds").isEqualTo("1 s");
        assertThat(Units.latency(1_800_000)).isEqualTo("1.8 s");
        assertThat(Units.latency(45_000_000)).isEqualTo("45 s");
        assertThat(Units.latency(90_000_000)).isEqualTo("90 s");
        assertThat(Units.latency(0.5)).isEqualTo("0.5 µs");
    }

    @Test
    void rateLabelsUseKAndM()
    {
        assertThat(Units.rate(0)).isEqualTo("0/s");
        assertThat(Units.rate(950)).isEqualTo("950/s");
        assertThat(Units.rate(1_000)).isEqualTo("1k/s");
        assertThat(Units.rate(200_000)).isEqualTo("200k/s");
        assertThat(Units.rate(1_500_000)).isEqualTo("1.5M/s");
        assertThat(Units.rate(12_345_678)).isEqualTo("12.3M/s");
    }

    @Test
    void timeLabelsAreSecondsThenMinutes()
    {
        assertThat(Units.seconds(0)).isEqualTo("0 s");
        assertThat(Units.seconds(5)).isEqualTo("5 s");
        assertThat(Units.seconds(90)).isEqualTo("90 s");
        assertThat(Units.seconds(2.5)).isEqualTo("2.5 s");
        assertThat(Units.seconds(600)).isEqualTo("10 min");
    }

    @Test
    void timeAxisTicksEveryFewSecondsWithFiveToTenTicks()
    {
        assertThat(Axis.timeStep(4)).isEqualTo(1);
        assertThat(Axis.timeStep(10)).isEqualTo(2);
        assertThat(Axis.timeStep(9)).isEqualTo(1);
        assertThat(Axis.timeStep(30)).isEqualTo(5);
        assertThat(Axis.timeStep(60)).isEqualTo(10);
        assertThat(Axis.timeStep(90)).isEqualTo(10);
        assertThat(Axis.timeStep(120)).isEqualTo(15);
        assertThat(Axis.timeStep(600)).isEqualTo(120);
        for (double seconds = 5; seconds <= 7_200; seconds *= 1.1)
        {
            final int ticks = Axis.time(seconds).ticks().length;
            assertThat(ticks).as("ticks for %.1f s", seconds).isBetween(4, 10);
        }
        final Axis axis = Axis.time(10.3);
        assertThat(axis.labels()).containsExactly("0 s", "2 s", "4 s", "6 s", "8 s", "10 s");
        assertThat(axis.min()).isZero();
        assertThat(axis.max()).isEqualTo(10.3);
        assertThat(Axis.time(90).labels()).startsWith("0 s", "10 s").endsWith("90 s");
    }

    @Test
    void rateAxisEndsOnARoundValueAboveTheData()
    {
        final Axis axis = Axis.rate(1_430_000);
        assertThat(axis.max()).isEqualTo(1_500_000);
        assertThat(axis.labels()).containsExactly("0/s", "500k/s", "1M/s", "1.5M/s");
        assertThat(Axis.rate(200_000).labels()).containsExactly("0/s", "50k/s", "100k/s", "150k/s", "200k/s");
        assertThat(Axis.rate(0).ticks().length).isGreaterThanOrEqualTo(2);
    }

    @Test
    void latencyAxisTicksAtDecadesInHumanUnits()
    {
        final Axis wide = Axis.latencyLog(40, 1_800_000);
        assertThat(wide.log()).isTrue();
        assertThat(wide.min()).isEqualTo(10);
        assertThat(wide.max()).isEqualTo(10_000_000);
        assertThat(wide.labels()).containsExactly("10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s");
        final Axis narrow = Axis.latencyLog(150, 900);
        assertThat(narrow.labels()).containsExactly("100 µs", "200 µs", "500 µs", "1 ms");
        assertThat(narrow.fraction(100)).isZero();
        assertThat(narrow.fraction(1_000)).isEqualTo(1.0);
    }
}
