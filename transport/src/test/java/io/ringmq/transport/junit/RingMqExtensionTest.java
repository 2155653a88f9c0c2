package io.ringmq.transport.junit;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.transport.RingMq;
import org.eclipse.paho.client.mqttv3.MqttClient;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.MqttException;
import org.eclipse.paho.client.mqttv3.MqttMessage;
import org.eclipse.paho.client.mqttv3.persist.MemoryPersistence;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/**
 * {@link RingMqExtension}: a broker injected into tests and reached with Paho, a fresh one per test or one per
 * class, closed afterwards, and a test failed when its broker counted an unexpected error.
 * <p>
 * The static nested classes are fixtures this test runs through the JUnit launcher, to see their outcome (a failure
 * included); they are {@code @Disabled} so that nothing else runs them.
 */
@ExtendWith(RingMqExtension.class)
@Timeout(60)
class RingMqExtensionTest
{
    private RingMq fromBeforeEach;

    @BeforeEach
    void setUp(final RingMq broker)
    {
        fromBeforeEach = broker;
    }

    @Test
    @DisplayName("the broker is injected, running, and the same in @BeforeEach; a Paho round trip goes through it")
    void injectsABroker(final RingMq broker) throws Exception
    {
        assertThat(broker).isSameAs(fromBeforeEach);
        assertThat(broker.isClosed()).isFalse();
        assertThat(broker.uri()).isEqualTo("tcp://127.0.0.1:" + broker.port());
        roundTrip(broker, null);
    }

    @Test
    @DisplayName("two tests of a class each get a fresh broker, closed after the test")
    void freshBrokerPerTest()
    {
        final TestExecutionSummary summary = run(PerTest.class);
        assertPassed(summary, 2);
        assertThat(PerTest.SEEN).hasSize(2);
        assertThat(PerTest.SEEN.get(0)).isNotSameAs(PerTest.SEEN.get(1));
        assertThat(PerTest.SEEN).allMatch(RingMq::isClosed);
    }

    @Test
    @DisplayName("perClass(): one broker, with the builder's options, for every test of the class, closed after it")
    void oneBrokerPerClass()
    {
        final TestExecutionSummary summary = run(PerClass.class);
        assertPassed(summary, 2);
        assertThat(PerClass.SEEN).hasSize(2);
        assertThat(PerClass.SEEN.get(0)).isSameAs(PerClass.SEEN.get(1));
        assertThat(PerClass.SEEN.get(0).isClosed()).isTrue();
    }

    @Test
    @DisplayName("a test whose broker counted an unexpected error fails, saying so; allowingUnexpectedErrors() passes")
    void unexpectedErrorsFailTheTest()
    {
        final TestExecutionSummary summary = run(UnexpectedError.class);
        assertThat(summary.getTestsSucceededCount()).isEqualTo(1); // the clean test
        assertThat(summary.getTestsFailedCount()).isEqualTo(1);
        final Throwable failure = summary.getFailures().get(0).getException();
        assertThat(failure).isInstanceOf(AssertionError.class)
            .hasMessageContaining("counted 1 unexpected error(s) during this test");
        assertThat(UnexpectedError.SEEN).allMatch(RingMq::isClosed);

        assertPassed(run(UnexpectedErrorAllowed.class), 1);
    }

    @Test
    @DisplayName("perClass() on an instance field is a configuration error, not a silent broker per test")
    void perClassNeedsAStaticField()
    {
        final TestExecutionSummary summary = run(PerClassOnInstanceField.class);
        assertThat(summary.getTestsFailedCount()).isEqualTo(1);
        assertThat(summary.getFailures().get(0).getException()).hasMessageContaining("register it on a static field");
    }

    static void roundTrip(final RingMq broker, final MqttConnectOptions options) throws Exception
    {
        final MqttConnectOptions connect = null == options ? new MqttConnectOptions() : options;
        connect.setMqttVersion(MqttConnectOptions.MQTT_VERSION_3_1_1);
        final BlockingQueue<String> received = new ArrayBlockingQueue<>(1);
        final MqttClient client = new MqttClient(broker.uri(), "round-trip", new MemoryPersistence());
        try
        {
            client.connect(connect);
            client.subscribe("extension/#", 1, (topic, message) ->
                received.add(topic + " " + new String(message.getPayload(), StandardCharsets.UTF_8)));
            client.publish("extension/ping", new MqttMessage("pong".getBytes(StandardCharsets.UTF_8)));
            assertThat(received.poll(10, TimeUnit.SECONDS)).isEqualTo("extension/ping pong");
            client.disconnect();
        }
        finally
        {
            client.close();
        }
    }

    private static TestExecutionSummary run(final Class<?> fixture)
    {
        final LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
            .selectors(selectClass(fixture))
            .configurationParameter("junit.jupiter.conditions.deactivate", "org.junit.*DisabledCondition")
            .build();
        final SummaryGeneratingListener listener = new SummaryGeneratingListener();
        LauncherFactory.create().execute(request, listener);
        return listener.getSummary();
    }

    private static void assertPassed(final TestExecutionSummary summary, final int tests)
    {
        final StringWriter failures = new StringWriter();
        summary.printFailuresTo(new PrintWriter(failures), 20);
        assertThat(summary.getTestsSucceededCount()).as(failures.toString()).isEqualTo(tests);
        assertThat(summary.getTotalFailureCount()).as(failures.toString()).isZero();
    }

    /** Two tests, a broker each. */
    @Disabled("a fixture of RingMqExtensionTest")
    @ExtendWith(RingMqExtension.class)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class PerTest
    {
        static final List<RingMq> SEEN = new CopyOnWriteArrayList<>();

        @Test
        @Order(1)
        void first(final RingMq broker) throws Exception
        {
            SEEN.add(broker);
            roundTrip(broker, null);
            assertThat(broker.counters().get(BrokerCounters.PUBLISH_IN)).isEqualTo(1);
        }

        @Test
        @Order(2)
        void second(final RingMq broker) throws Exception
        {
            SEEN.add(broker);
            assertThat(SEEN.get(0).isClosed()).isTrue();
            assertThat(broker.isClosed()).isFalse();
            assertThat(broker.counters().get(BrokerCounters.PUBLISH_IN)).isZero(); // fresh state
            roundTrip(broker, null);
        }
    }

    /** Two tests, one broker with credentials. */
    @Disabled("a fixture of RingMqExtensionTest")
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class PerClass
    {
        @RegisterExtension
        static final RingMqExtension BROKER = new RingMqExtension(() -> RingMq.builder()
            .user("u", "p").anonymous(Authenticator.AnonymousPolicy.NONE)).perClass();

        static final List<RingMq> SEEN = new CopyOnWriteArrayList<>();

        @Test
        @Order(1)
        void first(final RingMq broker) throws Exception
        {
            SEEN.add(broker);
            assertThatThrownBy(() -> roundTrip(broker, null)).isInstanceOf(MqttException.class);
            final MqttConnectOptions options = new MqttConnectOptions();
            options.setUserName("u");
            options.setPassword("p".toCharArray());
            roundTrip(broker, options);
        }

        @Test
        @Order(2)
        void second(final RingMq broker)
        {
            SEEN.add(broker);
            assertThat(broker.isClosed()).isFalse();
            assertThat(broker.counters().get(BrokerCounters.PUBLISH_IN)).isEqualTo(1); // the first test's
        }
    }

    /** A test that makes its broker count an unexpected error, and one that does not. */
    @Disabled("a fixture of RingMqExtensionTest")
    @ExtendWith(RingMqExtension.class)
    static class UnexpectedError
    {
        static final List<RingMq> SEEN = new CopyOnWriteArrayList<>();

        @Test
        void countsAnError(final RingMq broker)
        {
            SEEN.add(broker);
            broker.counters().increment(BrokerCounters.UNEXPECTED_ERRORS);
        }

        @Test
        void clean(final RingMq broker)
        {
            SEEN.add(broker);
        }
    }

    /** The same error, allowed. */
    @Disabled("a fixture of RingMqExtensionTest")
    static class UnexpectedErrorAllowed
    {
        @RegisterExtension
        final RingMqExtension broker = new RingMqExtension().allowingUnexpectedErrors();

        @Test
        void countsAnError(final RingMq broker)
        {
            broker.counters().increment(BrokerCounters.UNEXPECTED_ERRORS);
        }
    }

    /** perClass() where JUnit calls no class-level callback. */
    @Disabled("a fixture of RingMqExtensionTest")
    static class PerClassOnInstanceField
    {
        @RegisterExtension
        final RingMqExtension broker = new RingMqExtension().perClass();

        @Test
        void test(final RingMq broker)
        {
            assertThat(broker).isNotNull();
        }
    }
}
