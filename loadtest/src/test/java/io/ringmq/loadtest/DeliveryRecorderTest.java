package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.nio.channels.SocketChannel;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class DeliveryRecorderTest
{
    @Test
    void eachDriverKeepsItsOwnIntervalAndTheRunAddsThemUp() throws Exception
    {
        final Settings settings = new Settings();
        final DeliveryRecorder first = new DeliveryRecorder(settings, null);
        final DeliveryRecorder second = new DeliveryRecorder(settings, null);
        try (SocketChannel channel = SocketChannel.open())
        {
            final Client client = new Client(0, false, channel, settings);
            final long now = StampClock.nowNs();
            for (int i = 0; i < 3; i++)
            {
                first.onMessage(client, 0, i, now);
            }
            second.onMessage(client, 1, 0, now);

            final Histogram interval = new Histogram(3);
            first.takeInterval(interval);
            second.takeInterval(interval);
            assertThat(interval.getTotalCount()).isEqualTo(4);
            assertThat(first.latency.getTotalCount()).isEqualTo(3); // the run's whole histogram keeps them

            first.onMessage(client, 0, 3, now);
            final Histogram next = new Histogram(3);
            first.takeInterval(next);
            second.takeInterval(next);
            assertThat(next.getTotalCount()).as("a taken interval starts afresh").isEqualTo(1);
        }
    }

    @Test
    void anIntervalIsTakenWhileItsDriverRecords() throws Exception
    {
        final Settings settings = new Settings();
        final DeliveryRecorder recorder = new DeliveryRecorder(settings, null);
        final int deliveries = 200_000;
        final CountDownLatch done = new CountDownLatch(1);
        try (SocketChannel channel = SocketChannel.open())
        {
            final Client client = new Client(0, false, channel, settings);
            final Thread driver = new Thread(() ->
            {
                for (int i = 0; i < deliveries; i++)
                {
                    recorder.onMessage(client, 0, i, StampClock.nowNs());
                }
                done.countDown();
            });
            driver.start();
            final Histogram taken = new Histogram(3);
            while (!done.await(1, TimeUnit.MILLISECONDS))
            {
                recorder.takeInterval(taken);
            }
            recorder.takeInterval(taken);
            driver.join();

            assertThat(taken.getTotalCount()).as("no delivery lost or counted twice between takes")
                .isEqualTo(deliveries);
        }
    }
}
