package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Password checking on a real broker: hashing only on the credential workers' threads in every threading mode,
 * other clients unaffected by a slow hash, the back-off over the network, a connection closed while its hash runs,
 * a full queue, and a reload while a hash is pending.
 */
class CredentialWorkersBrokerTest extends InProcessBrokerTest
{
    private static final String WORKER = "ringmq-auth-worker-";

    @TempDir
    Path directory;

    private final CountDownLatch release = new CountDownLatch(1);
    private final CountDownLatch entered = new CountDownLatch(1);

    @AfterEach
    void noObserver()
    {
        release.countDown();
        PasswordHash.hashObserver(null);
    }

    private Path passwords(final String... userPasswordPairs) throws Exception
    {
        final Path file = directory.resolve("passwd");
        for (int i = 0; i < userPasswordPairs.length; i += 2)
        {
            PasswordFile.write(file, userPasswordPairs[i], userPasswordPairs[i + 1], 1_000);
        }
        return file;
    }

    private BrokerContext context(final Path file)
    {
        return TestBrokers.v5Context().auth(a -> a.anonymous(Authenticator.AnonymousPolicy.LOOPBACK)
            .passwordFile(file));
    }

    /** Every hash waits for {@link #release}; the first one to start counts {@link #entered} down. */
    private void slowHashes(final boolean onlyTheFirst)
    {
        final AtomicBoolean first = new AtomicBoolean(true);
        PasswordHash.hashObserver(thread ->
        {
            final boolean isFirst = first.getAndSet(false);
            entered.countDown();
            if (isFirst || !onlyTheFirst)
            {
                try
                {
                    release.await(20, TimeUnit.SECONDS);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
            }
        });
    }

    private int connack(final String clientId, final String user, final String password) throws Exception
    {
        final RawClient client = closeLater(new RawClient(broker.port()));
        return client.handshake(RawClient.connect(clientId, user, password));
    }

    private static void await(final BooleanSupplier condition, final String what)
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime()).as(what).isLessThan(deadline);
            Thread.onSpinWait();
        }
    }

    private long count(final int counter)
    {
        return broker.counters().get(counter);
    }

    @ParameterizedTest
    @EnumSource(value = BrokerContext.Threading.class, names = {"SHARED", "SHARED_NETWORK", "DEDICATED"})
    @Timeout(60)
    @DisplayName("hashing runs only on ringmq-auth-worker threads; unknown user and wrong password both hash")
    void hashingOnlyOnWorkers(final BrokerContext.Threading threading) throws Exception
    {
        final List<String> threads = new CopyOnWriteArrayList<>();
        PasswordHash.hashObserver(thread -> threads.add(thread.getName()));
        launch(context(passwords("alice", "a-pw")).threads(t -> t.threading(threading)));

        assertThat(connack("good", "alice", "a-pw")).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        assertThat(connack("wrong", "alice", "nope")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(connack("unknown", "mallory", "nope")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(threads).as("good, wrong password, unknown user: three hashes").hasSize(3)
            .allMatch(name -> name.startsWith(WORKER), "a credential worker");
        assertThat(count(BrokerCounters.AUTH_HASHES)).isEqualTo(3);

        assertThat(connack("again", "alice", "a-pw")).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        assertThat(threads).as("the reconnect came from the keyed cache").hasSize(3);
        assertThat(count(BrokerCounters.AUTH_CACHE_HITS)).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    @DisplayName("a CONNECT waiting for a slow hash does not delay another client's publishes (shared mode)")
    void slowHashDoesNotDelayOthers() throws Exception
    {
        slowHashes(false);
        launch(context(passwords("alice", "a-pw")).threads(t -> t.threading(BrokerContext.Threading.SHARED)));
        final RawClient publisher = closeLater(new RawClient(broker.port()));
        assertThat(publisher.handshake(RawClient.connect("pub", true, 60))).isZero(); // anonymous: no hash

        final RawClient waiting = closeLater(new RawClient(broker.port()));
        waiting.send(RawClient.connect("slow", "alice", "a-pw"));
        assertThat(entered.await(10, TimeUnit.SECONDS)).as("its hash started").isTrue();
        final byte[] payload = "x".getBytes(StandardCharsets.UTF_8);
        long worstNs = 0;
        for (int i = 1; i <= 50; i++)
        {
            final long startNs = System.nanoTime();
            publisher.send(RawClient.publish("t", payload, 1, i));
            assertThat(publisher.readPacket(2_000)).isEqualTo(PacketType.PUBACK);
            worstNs = Math.max(worstNs, System.nanoTime() - startNs);
        }
        assertThat(TimeUnit.NANOSECONDS.toMillis(worstNs)).as("slowest PUBACK while a hash is stuck").isLessThan(1_000);
        assertThat(waiting.hasBytes()).as("no CONNACK before its verdict").isFalse();
        release.countDown();
        assertThat(waiting.readPacket(10_000)).isEqualTo(PacketType.CONNACK);
        assertThat(waiting.decoder().connack().reasonCode()).isZero();
    }

    @Test
    @Timeout(60)
    @DisplayName("back-off over the network: failures from 127.0.0.1 start it (loopback not exempt), success resets")
    void backoffOverTheNetwork() throws Exception
    {
        final BrokerContext context = context(passwords("alice", "a-pw"));
        context.auth().credentialSettings().maxFailures(3).backoff(60_000, 60_000);
        launch(context);
        assertThat(connack("w1", "alice", "x")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(connack("w2", "alice", "x")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(connack("ok1", "alice", "a-pw")).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        assertThat(connack("w3", "alice", "x")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(connack("w4", "alice", "x")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(connack("ok2", "alice", "a-pw")).as("the success reset the count").isEqualTo(0);
        for (int i = 0; i < 3; i++)
        {
            assertThat(connack("w" + (5 + i), "mallory", "x")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        }
        final long hashes = count(BrokerCounters.AUTH_HASHES);
        assertThat(connack("blocked", "alice", "a-pw")).as("backing off: refused even with the right password")
            .isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        assertThat(count(BrokerCounters.AUTH_HASHES)).as("without hashing").isEqualTo(hashes);
        assertThat(count(BrokerCounters.AUTH_RATE_LIMITED)).isEqualTo(1);
        assertThat(count(BrokerCounters.AUTH_BACKOFFS)).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    @DisplayName("back-off: a success as one's own user does not wipe failures guessing another's password")
    void ownSuccessDoesNotResetGuessesAtAnotherUser() throws Exception
    {
        final BrokerContext context = context(passwords("alice", "a-pw", "mallory", "m-pw"));
        context.auth().credentialSettings().maxFailures(3).backoff(60_000, 60_000);
        launch(context);
        int refusedWithoutHashing = 0;
        for (int round = 0; round < 4; round++)
        {
            // two guesses at alice's password, then a login with mallory's own: the count must go on
            for (int guess = 0; guess < 2; guess++)
            {
                refusedWithoutHashing +=
                    connack("g" + round + guess, "alice", "guess" + round + guess) == ReasonCode.V3_NOT_AUTHORIZED ? 1 : 0;
            }
            connack("m" + round, "mallory", "m-pw");
        }
        assertThat(count(BrokerCounters.AUTH_BACKOFFS)).as("8 wrong passwords, 3 allowed: backed off").isPositive();
        assertThat(refusedWithoutHashing).isPositive();
    }

    @Test
    @Timeout(60)
    @DisplayName("a connection closed while its hash runs: the verdict is dropped, nothing reaches the pipeline")
    void closedWhileHashing() throws Exception
    {
        slowHashes(false);
        launch(context(passwords("alice", "a-pw")));
        final RawClient leaving = new RawClient(broker.port());
        leaving.send(RawClient.connect("leaving", "alice", "a-pw"));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
        leaving.kill();
        await(() -> count(BrokerCounters.CONNECTIONS_CLOSED) == 1, "the broker closed it");
        release.countDown();
        await(() -> count(BrokerCounters.AUTH_HASHES) == 1, "its hash finished");
        PasswordHash.hashObserver(null);
        assertThat(connack("next", "alice", "a-pw")).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        assertThat(count(BrokerCounters.CLIENTS_CONNECTED)).as("only the next one").isLessThanOrEqualTo(1);
        assertThat(count(BrokerCounters.EVENTS_AUTH)).as("the pipeline saw only the next CONNECT").isEqualTo(1);
    }

    @Test
    @Timeout(60)
    @DisplayName("the credential queue full: a CONNECT is refused at once with server unavailable (3), counted")
    void queueFull() throws Exception
    {
        slowHashes(false);
        final BrokerContext context = context(passwords("alice", "a-pw"));
        context.auth().credentialSettings().threads(1).queueLength(1);
        launch(context);
        final RawClient first = closeLater(new RawClient(broker.port()));
        first.send(RawClient.connect("first", "alice", "a-pw"));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue(); // the one worker is busy
        final RawClient second = closeLater(new RawClient(broker.port()));
        second.send(RawClient.connect("second", "alice", "a-pw"));
        final RawClient third = closeLater(new RawClient(broker.port()));
        third.send(RawClient.connect("third", "alice", "a-pw"));
        await(() -> count(BrokerCounters.AUTH_QUEUE_FULL) == 1, "one found the queue full");
        release.countDown();
        final int[] codes = new int[2];
        int i = 0;
        for (final RawClient client : new RawClient[]{second, third})
        {
            assertThat(client.readPacket(10_000)).isEqualTo(PacketType.CONNACK);
            codes[i++] = client.decoder().connack().reasonCode();
        }
        assertThat(codes).containsExactlyInAnyOrder(ReasonCode.V3_CONNECTION_ACCEPTED,
            ReasonCode.V3_SERVER_UNAVAILABLE);
        assertThat(first.readPacket(10_000)).isEqualTo(PacketType.CONNACK);
    }

    @Test
    @Timeout(60)
    @DisplayName("reload while a hash is pending: its verdict is of the old file, refused with server unavailable")
    void reloadDuringPendingHash() throws Exception
    {
        slowHashes(true);
        final Path file = passwords("alice", "a-pw");
        final BrokerContext context = context(file);
        context.auth().credentialSettings().threads(2);
        launch(context);
        final RawClient alice = closeLater(new RawClient(broker.port()));
        alice.send(RawClient.connect("alice", "alice", "a-pw"));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        PasswordFile.write(file, "carol", "c-pw", 1_000);
        broker.reload();
        // carol is only in the new file: her acceptance shows the auth stage holds it (workers read its file)
        await(() ->
        {
            try
            {
                return connack("carol-" + System.nanoTime(), "carol", "c-pw") == ReasonCode.V3_CONNECTION_ACCEPTED;
            }
            catch (final Exception ex)
            {
                throw new IllegalStateException(ex);
            }
        }, "the reload was taken");
        release.countDown();
        assertThat(alice.readPacket(10_000)).isEqualTo(PacketType.CONNACK);
        assertThat(alice.decoder().connack().reasonCode()).isEqualTo(ReasonCode.V3_SERVER_UNAVAILABLE);
        assertThat(count(BrokerCounters.AUTH_STALE_VERDICTS)).isEqualTo(1);
        assertThat(connack("alice2", "alice", "a-pw")).as("asked again: fine").isEqualTo(0);
    }

    @Test
    @Timeout(60)
    @DisplayName("invoker mode (no threads): the password is checked inline on the stepping thread, documented")
    void invokerModeChecksInline() throws Exception
    {
        final List<String> threads = new CopyOnWriteArrayList<>();
        PasswordHash.hashObserver(thread -> threads.add(thread.getName()));
        launch(context(passwords("alice", "a-pw")).threads(t -> t.threading(BrokerContext.Threading.INVOKER)));
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", broker.port()))
        {
            socket.getOutputStream().write(RawClient.connect("alice", "alice", "a-pw"));
            final java.io.InputStream in = socket.getInputStream();
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (in.available() < 4 && System.nanoTime() < deadline)
            {
                broker.invoke();
            }
            final byte[] connack = in.readNBytes(4);
            assertThat(connack[0]).isEqualTo((byte)0x20);
            assertThat(connack[3]).as("accepted").isZero();
        }
        assertThat(threads).containsExactly(Thread.currentThread().getName());
    }

    @Test
    @Timeout(60)
    @DisplayName("hostile: bytes piled up behind a CONNECT whose hash runs are read only up to a small bound")
    void bytesBehindAHashingConnectAreBounded() throws Exception
    {
        slowHashes(false);
        launch(context(passwords("alice", "a-pw")));
        final RawClient flooder = closeLater(new RawClient(broker.port()));
        flooder.send(RawClient.connect("flooder", "alice", "a-pw"));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
        final byte[] publish = RawClient.publish("t", new byte[1_000], 0, 0);
        final byte[] burst = new byte[publish.length * 256];
        for (int i = 0; i < 256; i++)
        {
            System.arraycopy(publish, 0, burst, i * publish.length, publish.length);
        }
        flooder.send(burst); // 256 kB: the kernel's buffers take it whether the broker reads or not
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
        while (System.nanoTime() < deadline)
        {
            assertThat(count(BrokerCounters.BYTES_IN)).as("read behind the CONNECT").isLessThan(64 * 1024);
            Thread.onSpinWait();
        }
        release.countDown();
        assertThat(flooder.readPacket(10_000)).isEqualTo(PacketType.CONNACK);
        await(() -> count(BrokerCounters.BYTES_IN) >= burst.length, "the rest read once it was admitted");
    }

    @Test
    @Timeout(60)
    @DisplayName("hostile: bytes sent with the CONNECT in one segment, before its hash runs, are read only up to a " +
        "small bound too")
    void bytesSentWithAHashingConnectAreBounded() throws Exception
    {
        slowHashes(false);
        launch(context(passwords("alice", "a-pw")));
        final RawClient flooder = closeLater(new RawClient(broker.port()));
        final byte[] connect = RawClient.connect("flooder", "alice", "a-pw");
        final byte[] publish = RawClient.publish("t", new byte[1_000], 0, 0);
        final byte[] burst = new byte[connect.length + publish.length * 256];
        System.arraycopy(connect, 0, burst, 0, connect.length);
        for (int i = 0; i < 256; i++)
        {
            System.arraycopy(publish, 0, burst, connect.length + i * publish.length, publish.length);
        }
        flooder.send(burst); // the CONNECT and 256 kB behind it, before the broker read any of it
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
        while (System.nanoTime() < deadline)
        {
            assertThat(count(BrokerCounters.BYTES_IN)).as("read with and behind the CONNECT")
                .isLessThanOrEqualTo(2 * Connection.HASHING_BUFFER_LIMIT);
            Thread.onSpinWait();
        }
        release.countDown();
        assertThat(flooder.readPacket(10_000)).isEqualTo(PacketType.CONNACK);
        await(() -> count(BrokerCounters.BYTES_IN) >= burst.length, "the rest read once it was admitted");
    }

    @Test
    @Timeout(60)
    @DisplayName("behind a PROXY-protocol listener the back-off counts the client the header names, not the proxy")
    void backoffBehindAProxy() throws Exception
    {
        final BrokerContext context = context(passwords("alice", "a-pw"));
        context.auth().credentialSettings().maxFailures(2).backoff(60_000, 60_000);
        context.addListener(new io.ringmq.pipeline.ListenerSettings(0, "127.0.0.1")
            .proxyProtocol(io.ringmq.pipeline.ListenerSettings.ProxyProtocol.V1));
        launch(context);
        final int port = broker.ports()[1];
        final String guesser = "PROXY TCP4 203.0.113.20 127.0.0.1 51000 1883\r\n";
        assertThat(proxied(port, guesser, "x")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(proxied(port, guesser, "y")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(proxied(port, guesser, "a-pw")).as("203.0.113.20 backs off").isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        assertThat(proxied(port, "PROXY TCP4 203.0.113.21 127.0.0.1 51000 1883\r\n", "a-pw"))
            .as("another client behind the same proxy is not affected").isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        assertThat(connack("direct", "alice", "a-pw")).as("nor the proxy's own address").isZero();
    }

    private int proxied(final int port, final String header, final String password) throws Exception
    {
        final RawClient client = closeLater(new RawClient(port));
        final byte[] proxy = header.getBytes(StandardCharsets.US_ASCII);
        final byte[] connect = RawClient.connect("p" + System.nanoTime(), "alice", password);
        final byte[] both = new byte[proxy.length + connect.length];
        System.arraycopy(proxy, 0, both, 0, proxy.length);
        System.arraycopy(connect, 0, both, proxy.length, connect.length); // one segment, as a proxy sends it
        return client.handshake(both);
    }
}
