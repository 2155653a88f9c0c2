package io.ringmq.transport;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.pipeline.auth.ScramClient;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;

import static io.ringmq.transport.RawClient.scram;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a client that no one has authenticated yet may make the broker hold. Its CONNECT is held to
 * {@code --max-connect-size}; so are the AUTH packets of an enhanced authentication before the CONNACK (they were held
 * to {@code --max-packet-size}: a partial AUTH claiming a megabyte kept its buffer growing for the connect timeout).
 * The CONNECTs the auth stage keeps while their SCRAM exchanges go on hold at most a quarter of
 * {@code --max-session-memory} together (each could be 64 KiB, kept up to three connect timeouts: a thousand such
 * clients filled a 64 MiB heap); past it a CONNECT asking for an exchange is refused with 0x97.
 */
@Timeout(60)
class PreAdmissionMemoryTest
{
    /** The CONNECTs kept for exchanges under way may hold a quarter of it: 100,000 bytes. */
    private static final long SESSION_MEMORY = 400_000;
    private static final int PROPERTY_BYTES = 30_000;

    @TempDir
    Path directory;
    private RingMq broker;
    private final List<RawClient> clients = new ArrayList<>();

    @AfterEach
    void stop() throws Exception
    {
        for (final RawClient client : clients)
        {
            client.close();
        }
        if (null != broker)
        {
            broker.close();
        }
    }

    private void start(final UnaryOperator<io.ringmq.pipeline.BrokerContext> settings) throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", PasswordHash.createScram("wonderland", 4096));
        broker = RingMq.builder().passwordFile(file).anonymous(Authenticator.AnonymousPolicy.NONE)
            .context(context -> settings.apply(context.observability(o -> o.sysIntervalMs(0)))).start();
    }

    private RawClient client() throws Exception
    {
        final RawClient client = new RawClient(broker.port()).v5();
        clients.add(client);
        return client;
    }

    /**
     * @return a SCRAM client-first CONNECT with a user property of {@code propertyBytes} bytes.
     */
    private static byte[] scramConnect(final String clientId, final int propertyBytes)
    {
        final ScramClient scram = new ScramClient("alice", "wonderland", "fyko+d2lbbFgONRv9qkxdawL");
        final MqttProperties properties = scram(scram.first());
        if (propertyBytes > 0)
        {
            final char[] value = new char[propertyBytes];
            Arrays.fill(value, 'x');
            properties.addUserProperty("padding", new String(value));
        }
        return RawClient.connect5(clientId, 60, properties);
    }

    @Test
    @DisplayName("before its CONNACK, an AUTH longer than --max-connect-size closes the connection, counted as too " +
        "large, with no CONNACK or DISCONNECT [MQTT-3.2.0-1]")
    void anAuthBeforeTheConnackIsHeldToMaxConnectSize() throws Exception
    {
        start(context -> context.maxConnectSize(8_192));
        final RawClient client = client();
        client.send(scramConnect("claims", 0));
        assertThat(client.readPacket(5_000)).as("server-first in an AUTH").isEqualTo(PacketType.AUTH);
        final long tooLarge = broker.counters().get(BrokerCounters.PACKET_TOO_LARGE);
        // an AUTH 0x18 whose remaining length claims 100,000 bytes, well within --max-packet-size; nothing follows
        client.send(new byte[]{(byte)(PacketType.AUTH << 4), (byte)0xA0, (byte)0x8D, 0x06, 0x18});
        assertThat(client.readPacketOrClosed(5_000)).as("closed at once, nothing sent").isEqualTo(-1);
        assertThat(broker.counters().get(BrokerCounters.PACKET_TOO_LARGE)).isEqualTo(tooLarge + 1);
    }

    @Test
    @DisplayName("the CONNECTs kept for SCRAM exchanges under way hold at most a quarter of --max-session-memory: " +
        "past it CONNACK 0x97 without an exchange, counted; an exchange that ends gives its room back")
    void connectsKeptForExchangesHoldAQuarterOfSessionMemory() throws Exception
    {
        start(context -> context.memory(m -> m.maxSessionMemory(SESSION_MEMORY)));
        final int fit = (int)(SESSION_MEMORY / 4 / (PROPERTY_BYTES + 100 + 256));
        final List<RawClient> exchanging = new ArrayList<>();
        for (int i = 0; i < fit; i++)
        {
            final RawClient client = client();
            client.send(scramConnect("kept-" + i, PROPERTY_BYTES));
            assertThat(client.readPacket(5_000)).as("exchange %d under way", i).isEqualTo(PacketType.AUTH);
            exchanging.add(client);
        }
        final long refused = broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED);
        final RawClient past = client();
        past.send(scramConnect("past", PROPERTY_BYTES));
        assertThat(past.readPacket(5_000)).as("no exchange past the bound").isEqualTo(PacketType.CONNACK);
        assertThat(past.decoder().connack().reasonCode()).isEqualTo(ReasonCode.QUOTA_EXCEEDED);
        assertThat(broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED)).isEqualTo(refused + 1);
        assertThat(broker.counters().get(BrokerCounters.AUTH_FAILURES)).as("no credentials were judged").isZero();

        exchanging.get(0).close(); // its exchange ends with its connection: its CONNECT is let go
        final long deadline = System.nanoTime() + 10_000_000_000L;
        int answer = -1;
        for (int attempt = 0; System.nanoTime() < deadline && answer != PacketType.AUTH; attempt++)
        {
            final RawClient again = client();
            again.send(scramConnect("again-" + attempt, PROPERTY_BYTES));
            answer = again.readPacket(5_000);
        }
        assertThat(answer).as("room again once an exchange ended").isEqualTo(PacketType.AUTH);
    }

    @Test
    @DisplayName("with the exchanges' bound reached, a CONNECT with a user name and password is not held by it")
    void passwordConnectsAreNotHeldByTheExchangesBound() throws Exception
    {
        start(context -> context.memory(m -> m.maxSessionMemory(SESSION_MEMORY)));
        final int fit = (int)(SESSION_MEMORY / 4 / (PROPERTY_BYTES + 100 + 256));
        for (int i = 0; i < fit; i++)
        {
            final RawClient client = client();
            client.send(scramConnect("kept-" + i, PROPERTY_BYTES));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.AUTH);
        }
        final io.ringmq.protocol.ConnectEncoder encoder = new io.ringmq.protocol.ConnectEncoder().reset()
            .version(io.ringmq.protocol.MqttVersion.V5).cleanStart(true).keepAlive(60).properties(new MqttProperties());
        encoder.clientId().wrap("plain");
        encoder.userName().wrap("alice");
        encoder.password().wrap("wonderland");
        final RawClient password = client();
        password.send(RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0)));
        assertThat(password.readPacket(10_000)).isEqualTo(PacketType.CONNACK);
        assertThat(password.decoder().connack().reasonCode()).as("a password CONNECT keeps nothing there").isZero();
    }

    @Test
    @DisplayName("the exchanges of one address hold at most a sixteenth of the kept CONNECTs' bound: past it that " +
        "address gets CONNACK 0x97, counted, while a client from another address (behind a PROXY listener) and one " +
        "from loopback (exempt without --limit-loopback) still start exchanges; once its exchanges end, it may again")
    void oneAddressHoldsASixteenthOfTheKeptConnects() throws Exception
    {
        final long sessionMemory = 1_600_000; // the bound: 400,000 bytes; one address's share: 25,000
        final int padding = 4_000;
        start(context ->
        {
            context.addListener(new io.ringmq.pipeline.ListenerSettings(0, "127.0.0.1")
                .proxyProtocol(io.ringmq.pipeline.ListenerSettings.ProxyProtocol.V1));
            return context.memory(m -> m.maxSessionMemory(sessionMemory));
        });
        final int proxied = broker.broker().ports()[1];
        final int fit = (int)(sessionMemory / 4 / 16 / (padding + 100 + 256));
        final List<RawClient> first = new ArrayList<>();
        for (int i = 0; i < fit; i++)
        {
            final RawClient client = proxiedClient(proxied, "203.0.113.1");
            client.send(scramConnect("first-" + i, padding));
            assertThat(client.readPacket(5_000)).as("exchange %d under way", i).isEqualTo(PacketType.AUTH);
            first.add(client);
        }
        final long refused = broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED);
        final RawClient past = proxiedClient(proxied, "203.0.113.1");
        past.send(scramConnect("past", padding));
        assertThat(past.readPacket(5_000)).as("no exchange past the address's share").isEqualTo(PacketType.CONNACK);
        assertThat(past.decoder().connack().reasonCode()).isEqualTo(ReasonCode.QUOTA_EXCEEDED);
        assertThat(broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED)).isEqualTo(refused + 1);

        final RawClient other = proxiedClient(proxied, "203.0.113.2");
        other.send(scramConnect("other", padding));
        assertThat(other.readPacket(5_000)).as("another address starts its exchange").isEqualTo(PacketType.AUTH);
        final RawClient local = client();
        local.send(scramConnect("local", padding));
        assertThat(local.readPacket(5_000)).as("loopback is exempt").isEqualTo(PacketType.AUTH);

        for (final RawClient client : first)
        {
            client.close(); // their exchanges end with their connections: the address's share comes back
        }
        final long deadline = System.nanoTime() + 10_000_000_000L;
        int answer = -1;
        for (int attempt = 0; System.nanoTime() < deadline && answer != PacketType.AUTH; attempt++)
        {
            final RawClient again = proxiedClient(proxied, "203.0.113.1");
            again.send(scramConnect("again-" + attempt, padding));
            answer = again.readPacket(5_000);
        }
        assertThat(answer).as("the address starts exchanges again once its own ended").isEqualTo(PacketType.AUTH);
    }

    /**
     * @return a client of the PROXY listener on {@code port} whose header names {@code address}.
     */
    private RawClient proxiedClient(final int port, final String address) throws Exception
    {
        final RawClient proxied = new RawClient(port).v5();
        clients.add(proxied);
        proxied.send(("PROXY TCP4 " + address + " 127.0.0.1 51000 1883\r\n")
            .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        return proxied;
    }
}
