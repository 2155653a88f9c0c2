package io.ringmq.transport;

import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.transport.CrashPublisher.Message;
import io.ringmq.transport.CrashSubscriber.Acks;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Crash recovery with durable persistence: a broker in a process of its own ({@link ForkedBroker}) on a loopback
 * port is killed with SIGKILL at random points, {@value #DEFAULT_ROUNDS} times in a row, and started again on the
 * same {@code --data-dir} each time.
 * <pre>
 *   set-up     persistent subscribers S1 (3.1.1), S2, S3 (5.0) subscribe, go offline
 *   round r    restart on the same data dir ──► [one subscriber online, leaving acks unsent]
 *              ──► publisher(s), paced, 10 unacknowledged at most ──► SIGKILL 50..400 ms later
 *   the end    restart ──► (QoS 2: the publisher resends what it owes) ──► subscribers drain ──► checks
 * </pre>
 * What the publisher saw acknowledged (PUBACK, PUBREC) must reach every subscriber still subscribed; QoS 1 may
 * repeat a message only as MQTT allows (a re-delivery), QoS 2 never; S3 unsubscribes half-way and gets nothing
 * published after its UNSUBACK. In the QoS 1 run a second publisher sets, replaces and clears retained messages
 * through the same kills. Session expiry is put through a kill too; last, the data directory itself is damaged
 * ({@link DataDirectoryDamage}): the broker starts and says what it lost, or with {@code --strict-recovery} refuses
 * to start.
 * <p>
 * {@code -Dcrash.seed} (default 1) chooses the kill points and the retained operations, {@code -Dcrash.rounds} the
 * number of kills, {@code -Dcrash.persistence} the store: {@code rocksdb}; {@code memory}, or {@code off} for no
 * persistence option at all, check the harness itself, which must then fail exactly on what was lost;
 * {@code -Dcrash.durability=sync|periodic|none} (every mode must survive a process crash). {@code -Dcrash.kill=false}
 * runs the QoS scenarios with no kill and no restart (rounds end when the publishers are done, and a subscriber
 * that was online drops its connection): any broker must pass them, which checks the checks.
 */
class CrashRecoveryTest
{
    static final long SEED = Long.getLong("crash.seed", 1);
    static final String PERSISTENCE = System.getProperty("crash.persistence", "rocksdb");
    static final String RECOVERED = "ringmq recovered";
    private static final int DEFAULT_ROUNDS = 20;
    private static final int ROUNDS = Integer.getInteger("crash.rounds", DEFAULT_ROUNDS);
    private static final String DURABILITY = System.getProperty("crash.durability", "sync");
    /** false: the same runs with no kill and no restart, which any broker must pass (a check of the checks). */
    private static final boolean KILL = !"false".equals(System.getProperty("crash.kill"));
    private static final int WINDOW = 10;
    /** New messages per publisher per round at most; at the pace, 400 ms' worth. */
    private static final int PER_ROUND = 200;
    private static final long PACE_NS = TimeUnit.MILLISECONDS.toNanos(2);
    /** Retained messages stored before a data directory is damaged. */
    private static final int STORED = 600;

    @TempDir
    Path directory;

    private final List<String> rounds = new ArrayList<>();
    private final List<String> recovered = new ArrayList<>();
    private ForkedBroker broker;
    private Random killPoints;

    @AfterEach
    void stop() throws InterruptedException
    {
        if (null != broker)
        {
            broker.close();
        }
    }

    /**
     * The broker's options: persistence on {@code dataDir} (unless {@code -Dcrash.persistence=off}), no $SYS, and
     * queues long enough that no message is dropped for a full queue.
     */
    static String[] options(final Path dataDir, final String... extra)
    {
        final List<String> options = new ArrayList<>(List.of("--sys-interval", "0", "--max-queued", "100000"));
        if (!"off".equals(PERSISTENCE))
        {
            options.addAll(List.of("--persistence", PERSISTENCE, "--data-dir", dataDir.toString(),
                "--durability", DURABILITY));
        }
        options.addAll(List.of(extra));
        return options.toArray(String[]::new);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    @DisplayName("QoS 1 and retained, broker SIGKILLed 20 times: every PUBACKed message reaches each persistent " +
        "subscriber after the restarts [MQTT-4.3.2-2], repeated only as a re-delivery [MQTT-3.3.1-1, MQTT-4.4.0-1], " +
        "none after UNSUBACK [MQTT-3.10.4-2]; a new subscriber gets each topic's last PUBACKed retained value " +
        "[MQTT-3.3.1-5, MQTT-3.3.1-6], nothing for a cleared one [MQTT-3.3.1-10]")
    void qos1AndRetainedAcrossKills() throws Exception
    {
        acrossKills(1);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    @DisplayName("QoS 2, broker SIGKILLed 20 times, the publisher resending what it owes on each reconnect " +
        "[MQTT-4.4.0-1]: every PUBRECed message reaches each persistent subscriber exactly once [MQTT-4.3.3-2], " +
        "none after UNSUBACK [MQTT-3.10.4-2]")
    void qos2AcrossKills() throws Exception
    {
        acrossKills(2);
    }

    /**
     * The QoS 1 run also sets, replaces and clears retained messages (QoS 1, six topics, one operation in six a
     * clear) with a second publisher through the same kills: one set of broker starts for both.
     */
    private void acrossKills(final int qos) throws Exception
    {
        killPoints = new Random(SEED * 31 + qos);
        final Random retainedOperations = new Random(SEED * 31 + 3); // used only by the retained publisher's thread
        final String filter = "crash/q" + qos + "/#";
        broker = ForkedBroker.start(directory, options(directory.resolve("data")));
        final List<CrashSubscriber> subscribers = List.of(
            new CrashSubscriber("crash-q" + qos + "-s1", MqttVersion.V3_1_1),
            new CrashSubscriber("crash-q" + qos + "-s2", MqttVersion.V5),
            new CrashSubscriber("crash-q" + qos + "-s3", MqttVersion.V5));
        for (final CrashSubscriber subscriber : subscribers)
        {
            subscriber.connect(broker.port(), false);
            assertThat(subscriber.subscribe(filter, qos)).as("%s granted QoS", subscriber.clientId()).isEqualTo(qos);
            subscriber.disconnect();
        }
        final CrashSubscriber unsubscriber = subscribers.get(2);
        final List<CrashPublisher> publishers = new ArrayList<>(List.of(new CrashPublisher("crash-q" + qos + "-pub",
            qos == 1 ? MqttVersion.V3_1_1 : MqttVersion.V5, qos, WINDOW,
            CrashPublisher.numbered("crash/q" + qos + "/"))));
        if (qos == 1)
        {
            publishers.add(new CrashPublisher("crash-ret-pub", MqttVersion.V3_1_1, 1, WINDOW,
                n -> new Message("crash/ret/" + retainedOperations.nextInt(6),
                    retainedOperations.nextInt(6) == 0 ? "" : "v" + n, true)));
        }
        final CrashPublisher publisher = publishers.get(0);

        long unsubscribedFrom = -1;
        for (int round = 0; round < ROUNDS; round++)
        {
            if (round > 0)
            {
                restart();
            }
            final List<CrashSubscriber> online = new ArrayList<>();
            if (round == ROUNDS / 2)
            {
                unsubscriber.connect(broker.port(), false);
                unsubscriber.unsubscribe(filter);
                unsubscribedFrom = publisher.nextNumber(); // this round's publisher has not started yet
                unsubscriber.startReading(Acks.ALL);
                online.add(unsubscriber);
            }
            else if (round % 5 == 2 || round % 5 == 4)
            {
                final CrashSubscriber cutOff = subscribers.get(round % 5 == 2 ? 0 : 1);
                cutOff.connect(broker.port(), false);
                cutOff.startReading(Acks.SOME); // leaves messages in flight at the broker when it is killed
                online.add(cutOff);
            }
            crashRound(round, publishers, online);
        }

        restart();
        if (qos == 2)
        {
            publisher.run(broker.port(), 0, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(10), null);
        }
        for (final CrashSubscriber subscriber : subscribers)
        {
            subscriber.connect(broker.port(), false);
            subscriber.startReading(Acks.ALL);
        }
        final CrashSubscriber retained = new CrashSubscriber("crash-ret-check", MqttVersion.V3_1_1);
        if (qos == 1)
        {
            retained.connect(broker.port(), true);
            retained.subscribe("crash/ret/#", 1);
            retained.startReading(Acks.ALL);
        }
        final TreeSet<Long> accepted = publisher.accepted();
        subscribers.get(0).awaitDeliveries(accepted, 300, 2_000, 30_000);
        subscribers.get(1).awaitDeliveries(accepted, 300, 2_000, 30_000);
        unsubscriber.awaitDeliveries(Set.of(), 500, 500, 5_000);
        for (final CrashSubscriber subscriber : subscribers)
        {
            subscriber.disconnect();
        }
        if (qos == 1)
        {
            retained.disconnect();
        }

        final String run = run();
        final SoftAssertions softly = new SoftAssertions();
        softly.assertThat(recovered).as("%s: a '%s' line at each restart", run, RECOVERED)
            .allMatch(line -> line.contains(RECOVERED));
        CrashChecks.deliveries(softly, run, qos, publisher, subscribers, unsubscriber, unsubscribedFrom);
        if (qos == 1)
        {
            CrashChecks.retained(softly, run, publishers.get(1), retained.deliveries());
        }
        softly.assertAll();
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    @DisplayName("MQTT 5.0 session expiry across a SIGKILL, the broker's downtime counted: sessions of 2 s (expired " +
        "while down) and 4 s (expired after the restart) are gone, one of 3,600 s is present [MQTT-3.1.2-23]")
    void sessionExpiryAcrossKill() throws Exception
    {
        broker = ForkedBroker.start(directory, options(directory.resolve("data")));
        final String[] clients = {"crash-exp-2s", "crash-exp-4s", "crash-exp-1h"};
        final int[] expiryS = {2, 4, 3600};
        final long[] disconnectedNs = new long[clients.length];
        for (int i = 0; i < clients.length; i++)
        {
            try (RawClient client = new RawClient(broker.port()).v5())
            {
                assertThat(client.handshake(CrashSubscriber.connect(clients[i], MqttVersion.V5, true, expiryS[i])))
                    .isZero();
                client.send(RawClient.subscribe5(1, "crash/exp/" + i, 1));
                assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
                client.send(new byte[]{(byte)0xE0, 0x00});
                disconnectedNs[i] = System.nanoTime();
                assertThat(client.closedWithin(5_000)).as("the broker closes after DISCONNECT").isTrue();
            }
        }
        broker.kill();
        untilAfter(disconnectedNs[0], 2_500); // deliberate downtime: the 2 s session expires while the broker is down
        restart();
        final boolean longPresent = sessionPresent(clients[2], 3600);
        final boolean shortPresent = sessionPresent(clients[0], 2);
        untilAfter(disconnectedNs[1], 4_500);
        final boolean middlePresent = sessionPresent(clients[1], 4);

        final String run = run();
        final SoftAssertions softly = new SoftAssertions();
        softly.assertThat(recovered).as("%s: a '%s' line at the restart", run, RECOVERED)
            .allMatch(line -> line.contains(RECOVERED));
        softly.assertThat(longPresent).as("%s: the 3,600 s session survives the kill (session present 1)", run)
            .isTrue();
        softly.assertThat(shortPresent).as("%s: the 2 s session, 2.5 s after its DISCONNECT, the broker down " +
            "most of it: gone (session present 0)", run).isFalse();
        softly.assertThat(middlePresent).as("%s: the 4 s session, 4.5 s after its DISCONNECT: gone", run).isFalse();
        softly.assertAll();
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    @DisplayName("the newest write-ahead log cut to half its length: the broker starts, its 'ringmq recovered' line " +
        "says what was LOST and it serves what survived; with --strict-recovery it refuses to start, and says why; " +
        "undamaged, --strict-recovery starts")
    void truncatedWriteAheadLog() throws Exception
    {
        final Path data = persistentState();
        final Path log = DataDirectoryDamage.newest(data, ".log").orElseThrow(() -> new AssertionError(
            "no non-empty *.log (write-ahead log) in the data directory: " + listing(data)));
        final String name = data.relativize(log).toString();

        final ForkedBroker.Launch intact = ForkedBroker.launch(directory,
            options(DataDirectoryDamage.copy(data, directory.resolve("intact-data")), "--strict-recovery"));
        assertThat(intact.broker()).as("--strict-recovery starts on an undamaged data directory (after a SIGKILL " +
            "with everything acknowledged); its output:%n%s", intact.output()).isNotNull();
        broker = intact.broker();
        broker.close();

        damagedStarts(data, "write-ahead log " + name + " cut to half its length",
            DataDirectoryDamage.truncateHalf(name), 1);
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    @DisplayName("256 bytes of the largest table file (*.sst) inverted: the broker starts and its 'ringmq recovered' " +
        "line says what was LOST; with --strict-recovery it refuses to start, and says why")
    void garbledTableFile() throws Exception
    {
        final Path data = persistentState();
        final Optional<Path> table = DataDirectoryDamage.largest(data, ".sst");
        Assumptions.assumeTrue(table.isPresent(), () -> "no *.sst table file after a clean stop, a restart and " +
            "600 retained messages, so nothing to garble: " + listing(data));
        final String name = data.relativize(table.get()).toString();
        damagedStarts(data, "table file " + name + " garbled", DataDirectoryDamage.garble(name), 0);
    }

    /**
     * Stores persistent state and leaves the broker killed: a persistent subscriber with 600 queued messages and 600
     * retained ones of 1 KB, the first 300 before a clean stop (the store may write them to table files), the rest
     * before a SIGKILL (in the write-ahead log).
     */
    private Path persistentState() throws Exception
    {
        final Path data = directory.resolve("data");
        broker = ForkedBroker.start(directory, options(data));
        final CrashSubscriber subscriber = new CrashSubscriber("crash-corrupt-sub", MqttVersion.V3_1_1);
        subscriber.connect(broker.port(), false);
        subscriber.subscribe("crash/corrupt/#", 1);
        subscriber.disconnect();
        final String padding = "-" + "x".repeat(1_000);
        final CrashPublisher publisher = new CrashPublisher("crash-corrupt-pub", MqttVersion.V3_1_1, 1, WINDOW,
            n -> new Message("crash/corrupt/" + n, n + padding, true));
        publisher.run(broker.port(), STORED / 2, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(20), null);
        broker.close();
        restart();
        publisher.run(broker.port(), STORED / 2, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(20), null);
        broker.kill();
        assertThat(publisher.accepted()).as("messages stored: %s", publisher.describe()).hasSize(STORED);
        return data;
    }

    /**
     * Starts a broker on a damaged copy of the data directory, then with --strict-recovery on another.
     *
     * @param minRetained the retained messages the lenient broker must still serve.
     */
    private void damagedStarts(final Path data, final String what, final DataDirectoryDamage.Damage damage,
        final int minRetained) throws Exception
    {
        final Path lenient = DataDirectoryDamage.copy(data, directory.resolve("lenient-data"));
        damage.apply(lenient);
        final ForkedBroker.Launch started = ForkedBroker.launch(directory, options(lenient));
        assertThat(started.broker()).as("the broker starts with %s; its output:%n%s", what, started.output())
            .isNotNull();
        broker = started.broker();
        final Optional<String> line = broker.awaitLine(RECOVERED, 5_000);
        assertThat(line).as("a '%s' line with %s; the output:%n%s", RECOVERED, what, broker.output()).isPresent();
        assertThat(line.get()).as("it says what it lost: %s", what).contains("LOST");
        final CrashSubscriber checker = new CrashSubscriber("crash-corrupt-check", MqttVersion.V3_1_1);
        checker.connect(broker.port(), true);
        checker.subscribe("crash/corrupt/#", 1);
        checker.startReading(Acks.ALL);
        checker.awaitDeliveries(Set.of(), 1_000, 1_000, 10_000);
        checker.disconnect();
        assertThat(checker.deliveries()).as("retained messages served after %s (%d stored)", what, STORED)
            .hasSizeBetween(minRetained, STORED);
        broker.close();

        final Path strict = DataDirectoryDamage.copy(data, directory.resolve("strict-data"));
        damage.apply(strict);
        final ForkedBroker.Launch refused = ForkedBroker.launch(directory, options(strict, "--strict-recovery"));
        if (null != refused.broker())
        {
            broker = refused.broker();
            final String output = broker.output();
            broker.kill();
            throw new AssertionError("started with --strict-recovery and " + what + "; its output:\n" + output);
        }
        assertThat(refused.exitValue()).as("exit status with --strict-recovery and %s; output:%n%s", what,
            refused.output()).isNotZero();
        assertThat(refused.output()).as("it says why it refuses: %s", what).containsIgnoringCase("lost");
    }

    private static String listing(final Path data)
    {
        try
        {
            return DataDirectoryDamage.listing(data);
        }
        catch (final java.io.IOException ex)
        {
            return data + ": " + ex;
        }
    }

    private boolean sessionPresent(final String clientId, final int expiryS) throws Exception
    {
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            assertThat(client.handshake(CrashSubscriber.connect(clientId, MqttVersion.V5, false, expiryS))).isZero();
            final boolean present = client.decoder().connack().isSessionPresent();
            client.send(new byte[]{(byte)0xE0, 0x00});
            return present;
        }
    }

    private static void untilAfter(final long startNs, final long delayMs) throws InterruptedException
    {
        final long remainingMs = TimeUnit.NANOSECONDS.toMillis(startNs + TimeUnit.MILLISECONDS.toNanos(delayMs) -
            System.nanoTime());
        if (remainingMs > 0)
        {
            Thread.sleep(remainingMs + 1); // a point in time, not a guess at how long something takes
        }
    }

    /**
     * One round: the publishers publish on threads of their own; once they are connected, after a random 50 to 400
     * ms, the broker is killed.
     */
    private void crashRound(final int round, final List<CrashPublisher> publishers,
        final List<CrashSubscriber> online) throws Exception
    {
        final int port = broker.port();
        final CountDownLatch connected = new CountDownLatch(publishers.size());
        final List<Thread> threads = new ArrayList<>();
        for (final CrashPublisher publisher : publishers)
        {
            final Thread thread = new Thread(() -> publisher.run(port, PER_ROUND, PACE_NS,
                System.nanoTime() + TimeUnit.SECONDS.toNanos(30), connected), "crash-publisher");
            thread.setDaemon(true);
            thread.start();
            threads.add(thread);
        }
        assertThat(connected.await(10, TimeUnit.SECONDS)).as("round %d: publishers connected", round).isTrue();
        final int delayMs = 50 + killPoints.nextInt(351);
        if (KILL)
        {
            Thread.sleep(delayMs); // the deliberate, random kill point
            broker.kill();
        }
        for (final Thread thread : threads)
        {
            thread.join(10_000);
            assertThat(thread.isAlive()).as("round %d: a publisher still runs 10 s after the kill", round).isFalse();
        }
        for (final CrashSubscriber subscriber : online)
        {
            if (KILL)
            {
                subscriber.awaitConnectionEnd();
            }
            else
            {
                subscriber.drop();
            }
        }
        final StringBuilder line = new StringBuilder("round ").append(round).append(": ")
            .append(KILL ? "SIGKILL " + delayMs + " ms after connecting" : "no kill");
        publishers.forEach(publisher -> line.append("; ").append(publisher.describe()));
        if (!online.isEmpty())
        {
            line.append("; online: ").append(online.stream().map(CrashSubscriber::clientId).toList());
        }
        rounds.add(line.toString());
    }

    private void restart() throws Exception
    {
        if (!KILL && broker.isAlive())
        {
            return;
        }
        broker = broker.restart();
        recovered.add(broker.awaitLine(RECOVERED, 200).orElse("(none)"));
    }

    /**
     * @return how to run it again and what happened, for a failure message.
     */
    private String run()
    {
        final String run = "seed " + SEED + " (-Dcrash.seed)" +
            (rounds.isEmpty() ? "" : ", " + ROUNDS + " rounds" + (KILL ? "" : " without kills")) +
            ", persistence " + PERSISTENCE;
        final StringBuilder account = new StringBuilder(run);
        rounds.forEach(line -> account.append("\n  ").append(line));
        account.append("\n  restarts said:");
        recovered.forEach(line -> account.append("\n    ").append(line));
        System.out.println(account);
        return run;
    }
}
