package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A reload with the configuration read again: listeners added and removed while the broker runs, connections of a
 * removed listener kept, and a configuration that cannot be used (a TLS file missing, a port in use) changing
 * nothing.
 */
@Timeout(60)
class ReloadListenersTest
{
    private Broker broker;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    private static BrokerContext context(final ListenerSettings... extra)
    {
        final BrokerContext context = TestBrokers.v5Context().persistence(p -> p.persistent(false));
        for (final ListenerSettings listener : extra)
        {
            context.addListener(listener);
        }
        return context.conclude();
    }

    private static boolean accepts(final int port)
    {
        try (Socket socket = new Socket("127.0.0.1", port))
        {
            return true;
        }
        catch (final IOException ex)
        {
            return false;
        }
    }

    @Test
    @DisplayName("a listener added by a reload accepts; one removed stops accepting, its connections stay")
    void addAndRemove() throws Exception
    {
        broker = Broker.launch(context());
        final int first = broker.port();
        final int free = TestBrokers.freePort();
        final ListenerSettings added = new ListenerSettings(free, "127.0.0.1");
        assertThat(broker.reload(context(added))).contains("listeners: +[mqtt://127.0.0.1:" + free + "]");
        assertThat(broker.ports()).containsExactly(first, free);
        final Paho throughAdded = Paho.connect(free, "through-added");
        closeables.add(throughAdded);
        throughAdded.client.subscribe("r", 1);

        // the same listener again: kept as it is (same socket, nothing bound anew)
        assertThat(broker.reload(context(new ListenerSettings(free, "127.0.0.1")))).doesNotContain("listeners");

        assertThat(broker.reload(context())).contains("listeners:  -[mqtt://127.0.0.1:" + free + "]");
        assertThat(broker.ports()).containsExactly(first);
        final long deadline = System.currentTimeMillis() + 10_000; // the accepting agent lets the socket go
        while (accepts(free))
        {
            assertThat(System.currentTimeMillis()).as("the removed listener still accepts").isLessThan(deadline);
            Thread.sleep(20);
        }
        try (Paho publisher = Paho.connect(first, "publisher"))
        {
            publisher.publish("r", "still here", 1, false);
            assertThat(throughAdded.next().payload()).as("a connection of the removed listener stays").isEqualTo(
                "still here");
        }
    }

    @Test
    @DisplayName("a reload that cannot be used changes nothing: a TLS file missing, a port in use")
    void badReloadChangesNothing() throws Exception
    {
        final int free = TestBrokers.freePort();
        broker = Broker.launch(context(new ListenerSettings(free, "127.0.0.1")));
        final int first = broker.port();
        final ListenerSettings missing = new ListenerSettings(0, "127.0.0.1").certFile(java.nio.file.Path.of(
            "/no/such/cert.pem")).keyFile(java.nio.file.Path.of("/no/such/key.pem"));
        assertThatThrownBy(() -> broker.reload(context(missing))).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("/no/such/cert.pem");
        assertThat(broker.ports()).containsExactly(first, free);
        assertThat(accepts(free)).as("the old listener still accepts").isTrue();
        try (ServerSocket taken = new ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1")))
        {
            assertThatThrownBy(() -> broker.reload(context(new ListenerSettings(taken.getLocalPort(), "127.0.0.1"))))
                .isInstanceOf(IOException.class).hasMessageContaining("cannot listen on");
        }
        assertThat(broker.ports()).containsExactly(first, free);
        assertThat(accepts(free)).isTrue();
        try (Paho client = Paho.connect(free, "after"))
        {
            assertThat(client.client.isConnected()).isTrue();
        }
    }

    @Test
    @DisplayName("a reload that changes what a listener admits (max_connections, allow_anonymous) on the same port "
        + "keeps its socket and applies to its next connections; the connections it holds count against a limit "
        + "set now (before: the reload failed, the port in use by the listener itself)")
    void changedAdmissionKeepsTheSocket() throws Exception
    {
        final int port = TestBrokers.freePort();
        broker = Broker.launch(context(new ListenerSettings(port, "127.0.0.1")));
        final int[] before = broker.ports();
        closeables.add(Paho.connect(port, "first"));
        closeables.add(Paho.connect(port, "second"));
        final String line = broker.reload(context(new ListenerSettings(port, "127.0.0.1").maxConnections(3)));
        assertThat(line).contains("listener settings: [mqtt://127.0.0.1:" + port + "]").doesNotContain("listeners:");
        assertThat(broker.ports()).containsExactly(before);
        closeables.add(Paho.connect(port, "third"));
        assertThatThrownBy(() -> Paho.connect(port, "fourth")).as("over the limit the reload set").isInstanceOf(
            Exception.class);

        broker.reload(context(new ListenerSettings(port, "127.0.0.1").maxConnections(10)
            .anonymous(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.NONE)));
        assertThatThrownBy(() -> Paho.connect(port, "anonymous")).as("allow_anonymous false now").isInstanceOf(
            Exception.class);
        assertThat(broker.ports()).containsExactly(before);
    }

    @Test
    @DisplayName("a reload that changes a listener's protocol on the same port (mqtt to websockets and back) keeps its "
        + "socket and gives its next connections the new layers; a connection made before keeps its own (before: the "
        + "reload failed, the port in use by the listener itself); a TLS file missing in such a reload changes nothing")
    void changedLayersKeepTheSocket() throws Exception
    {
        final int port = TestBrokers.freePort();
        broker = Broker.launch(context(new ListenerSettings(port, "127.0.0.1")));
        final int[] before = broker.ports();
        final Paho plain = Paho.connect(port, "plain");
        closeables.add(plain);
        plain.client.subscribe("layers/#", 1);

        final ListenerSettings webSockets = new ListenerSettings(port, "127.0.0.1")
            .protocol(ListenerSettings.Protocol.WEBSOCKETS);
        assertThat(broker.reload(context(webSockets))).contains("listener settings: [ws://127.0.0.1:" + port + "]")
            .doesNotContain("listeners:");
        assertThat(broker.ports()).containsExactly(before);
        final Paho overWebSocket = Paho.connect("ws://127.0.0.1:" + port, "web", Paho.options(true));
        closeables.add(overWebSocket);
        overWebSocket.publish("layers/ws", "over ws", 1, false);
        assertThat(plain.next().payload()).as("the plain connection made before still works").isEqualTo("over ws");
        assertThatThrownBy(() -> Paho.connect(port, "plain-after")).as("plain MQTT on a WebSocket listener")
            .isInstanceOf(Exception.class);

        final ListenerSettings missing = new ListenerSettings(port, "127.0.0.1").certFile(java.nio.file.Path.of(
            "/no/such/cert.pem")).keyFile(java.nio.file.Path.of("/no/such/key.pem"));
        assertThatThrownBy(() -> broker.reload(context(missing))).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("/no/such/cert.pem");
        closeables.add(Paho.connect("ws://127.0.0.1:" + port, "web-still", Paho.options(true)));

        assertThat(broker.reload(context(new ListenerSettings(port, "127.0.0.1"))))
            .contains("listener settings: [mqtt://127.0.0.1:" + port + "]");
        closeables.add(Paho.connect(port, "plain-again"));
        overWebSocket.publish("layers/ws", "still over ws", 1, false);
        assertThat(plain.next().payload()).isEqualTo("still over ws");
        assertThat(broker.ports()).containsExactly(before);
    }
}
