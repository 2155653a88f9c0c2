package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * TLS meets a sleeping broker (--idle-strategy wake): the handshake's delegated tasks finish on the TLS pool, whose
 * readyAgain must wake the agent's sleep in every threading mode; a record larger than one read arrives while asleep.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SleepingBrokerTlsTest
{
    @ParameterizedTest(name = "{0} threading")
    @EnumSource(value = BrokerContext.Threading.class, names = {"SHARED", "SHARED_NETWORK", "DEDICATED"})
    @DisplayName("a TLS handshake and a large TLS PUBLISH that meet a sleeping broker are served in every mode")
    void tlsMeetsASleepingBroker(final BrokerContext.Threading threading) throws Exception
    {
        try (Broker broker = Broker.launch(TestBrokers.v5Context().threads(t -> t.threading(threading)
            .idleStrategy("wake")
            .ioThreads(2)).addListener(ListenersTest.tlsListener())))
        {
            final int tlsPort = broker.ports()[1];
            final MqttConnectOptions options = Paho.options(true);
            options.setSocketFactory(TlsSocketLayerTest.clientContext(null).getSocketFactory());
            TestBrokers.await("the broker asleep", broker::ioAgentsAsleep);
            try (Paho subscriber = Paho.connect("ssl://127.0.0.1:" + tlsPort, "tls-sleep-sub", options))
            {
                subscriber.client.subscribe("sleep/#", 1);
                TestBrokers.await("the broker asleep", broker::ioAgentsAsleep);
                try (Paho publisher = Paho.connect("ssl://127.0.0.1:" + tlsPort, "tls-sleep-pub", options))
                {
                    final String big = "x".repeat(100_000); // several TLS records
                    for (int i = 0; i < 3; i++)
                    {
                        TestBrokers.await("the broker asleep", broker::ioAgentsAsleep);
                        publisher.publish("sleep/" + i, big + i, 1, false);
                        final Paho.Received received = subscriber.next();
                        assertThat(received).as("delivered over TLS " + i).isNotNull();
                        assertThat(received.payload()).isEqualTo(big + i);
                    }
                }
            }
        }
    }
}
