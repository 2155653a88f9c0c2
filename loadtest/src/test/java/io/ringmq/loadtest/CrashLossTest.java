package io.ringmq.loadtest;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.transport.RingMq;
import io.ringmq.transport.junit.RingMqExtension;
import org.agrona.collections.LongHashSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.ringmq.loadtest.LoadTestTest.jsonNumber;
import static io.ringmq.loadtest.LoadTestTest.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code loadtest crash-loss}: the acknowledged-messages file, the drain's accounting, and the three phases against an
 * in-process ringmq (no kill: nothing may be lost); and {@code -clean false} for the other modes.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CrashLossTest
{
    @RegisterExtension
    static final RingMqExtension BROKER =
        new RingMqExtension(() -> RingMq.builder().threading(BrokerContext.Threading.SHARED)).perClass();

    private static RingMq broker;

    @BeforeEach
    void broker(final RingMq running)
    {
        broker = running;
    }

    @Test
    @DisplayName("a message's key keeps its round and sequence, the whole int range of sequences included")
    void keys()
    {
        for (final int[] pair : new int[][]{{1, 0}, {7, 123_456}, {Integer.MAX_VALUE, Integer.MAX_VALUE}, {3, -1}})
        {
            final long key = AckLog.key(pair[0], pair[1]);
            assertThat(AckLog.roundOf(key)).isEqualTo(pair[0]);
            assertThat(AckLog.sequenceOf(key)).isEqualTo(pair[1]);
        }
        assertThat(AckLog.key(1, 5)).isNotEqualTo(AckLog.key(2, 5));
    }

    @Test
    @DisplayName("the acknowledged-messages file accumulates rounds; a line that does not read is counted, not fatal")
    void ackLogRoundTrip(@TempDir final Path folder) throws Exception
    {
        final Path file = folder.resolve("sub/acked");
        AckLog.create(file, "test");
        assertThat(AckLog.read(file).lastRound()).isZero();
        try (AckLog log = AckLog.appendRound(file, 1))
        {
            log.acknowledged(1, 0);
            log.acknowledged(1, 1);
            log.acknowledged(1, 2);
        }
        try (AckLog log = AckLog.appendRound(file, 2)) // a round that got no PUBACK still counts as started
        {
            log.flush();
        }
        Files.writeString(file, "2 x\n# round zz\n1 2\n3", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        final AckLog.Contents contents = AckLog.read(file);
        assertThat(contents.lastRound()).isEqualTo(2);
        assertThat(contents.acknowledged()).containsExactlyInAnyOrder(AckLog.key(1, 0), AckLog.key(1, 1),
            AckLog.key(1, 2));
        assertThat(contents.malformedCount()).isEqualTo(3); // "2 x", "# round zz", and "3" cut short
        AckLog.create(file, "again");
        assertThat(AckLog.read(file).acknowledged()).isEmpty();
        assertThat(AckLog.read(folder.resolve("absent")).lastRound()).isZero();
    }

    @Test
    @DisplayName("parsing: rounds from headers and lines, blank lines and comments skipped, negative values refused")
    void ackLogParse()
    {
        final AckLog.Contents contents = AckLog.parse(List.of("# crash-loss", "", "# round 4 2026-01-01T00:00", "4 10",
            "  4 11  ", "5 0", "0 1", "4 -2"));
        assertThat(contents.lastRound()).isEqualTo(5);
        assertThat(contents.acknowledged()).containsExactlyInAnyOrder(AckLog.key(4, 10), AckLog.key(4, 11),
            AckLog.key(5, 0));
        assertThat(contents.malformedCount()).isEqualTo(2);
    }

    @Test
    @DisplayName("the tally: lost is what misses any subscriber; duplicates and unacknowledged deliveries apart")
    void tally()
    {
        final LongHashSet acknowledged = new LongHashSet();
        acknowledged.add(AckLog.key(1, 0));
        acknowledged.add(AckLog.key(1, 1));
        acknowledged.add(AckLog.key(1, 2));
        acknowledged.add(AckLog.key(2, 0));
        final CrashLossTally tally = new CrashLossTally(acknowledged, 2);
        tally.sessionPresent(0, true);
        for (final int[] delivery : new int[][]{{1, 0}, {1, 1}, {1, 2}, {2, 0}, {1, 1}, {2, 5}})
        {
            tally.delivered(0, delivery[0], delivery[1]); // everything, once twice, and one never acknowledged
        }
        tally.delivered(1, 1, 0);
        tally.delivered(1, 1, 1); // subscriber 1 misses 1:2 and 2:0
        final CrashLossTally.Result result = tally.result();
        assertThat(result.acknowledged()).isEqualTo(4);
        assertThat(result.delivered()).isEqualTo(2);
        assertThat(result.lost()).isEqualTo(2);
        assertThat(result.lostDeliveries()).isEqualTo(2);
        assertThat(result.duplicates()).isEqualTo(1);
        assertThat(result.unacknowledgedDelivered()).isEqualTo(1);
        assertThat(result.received()).isEqualTo(8);
        assertThat(result.sessionsResumed()).isEqualTo(1);
        assertThat(result.lostPercent()).isEqualTo(50.0);
        assertThat(result.byRound()).isEqualTo("round 1: 1 of 3 lost, round 2: 1 of 1 lost");
        assertThat(jsonNumber(result.json("x\"y"), "lost")).isEqualTo(2);
        assertThat(result.json("x\"y")).contains("\"label\":\"x\\\"y\"");
        assertThat(result.tsv("row").split("\t")).hasSize(CrashLossTally.TSV_HEADER.split("\t").length);
        assertThat(new CrashLossTally(new LongHashSet(), 1).result().lostPercent()).isZero();
    }

    @Test
    @DisplayName("prepare, two publish rounds and drain against a broker that is not killed: nothing lost")
    void phasesWithoutKill(@TempDir final Path folder) throws Exception
    {
        final String addr = "127.0.0.1:" + broker.port();
        final Path acked = folder.resolve("acked");
        final String[] common = {"-addr", addr, "-subs", "3", "-acked", acked.toString(), "-client-prefix", "clt"};
        assertThat(run(0, concat(new String[]{"crash-loss", "prepare"}, common)))
            .contains("3 of 3 persistent subscribers");
        assertThat(run(0, concat(new String[]{"crash-loss", "publish", "-duration", "500ms", "-rate", "200"}, common)))
            .contains("round 1:").contains("the time was up");
        assertThat(run(0, concat(new String[]{"crash-loss", "publish", "-duration", "300ms", "-rate", "300",
            "-inflight", "1"},
            common))).contains("round 2:");
        final AckLog.Contents contents = AckLog.read(acked);
        assertThat(contents.lastRound()).isEqualTo(2);
        assertThat(contents.acknowledged().size()).isGreaterThan(90);
        final Path result = folder.resolve("result/crash-loss.json");
        final String output = run(0, concat(new String[]{"crash-loss", "drain", "-quiet-for", "500ms", "-out",
            result.toString(), "-label", "in-process"}, common));
        assertThat(output).contains("crash-loss in-process: acknowledged " + contents.acknowledged().size())
            .contains("lost 0 (0.00 %)").contains("3 of 3 sessions resumed");
        final String json = Files.readString(result);
        assertThat(jsonNumber(json, "acknowledged")).isEqualTo(contents.acknowledged().size());
        assertThat(jsonNumber(json, "lost")).isZero();
        assertThat(jsonNumber(json, "lost_deliveries")).isZero();
        assertThat(jsonNumber(json, "sessions_resumed")).isEqualTo(3);
    }

    @Test
    @DisplayName("crash-loss: a broker that is not there is exit 1 with one line; a bad phase is exit 2")
    void crashLossErrors(@TempDir final Path folder) throws Exception
    {
        final int port;
        try (java.net.ServerSocket closed = new java.net.ServerSocket(0))
        {
            port = closed.getLocalPort();
        }
        final String acked = folder.resolve("acked").toString();
        assertThat(run(1, "crash-loss", "publish", "-addr", "127.0.0.1:" + port, "-acked", acked))
            .contains("cannot connect to 127.0.0.1:" + port);
        assertThat(run(2, "crash-loss", "restart", "-acked", acked)).contains("PHASE must be prepare, publish or drain");
        assertThat(run(2, "crash-loss", "drain", "-subs", "0", "-acked", acked)).contains("-subs must be at least 1");
    }

    @Test
    @DisplayName("-clean false: pubsub with sessions that outlive their connections, nothing lost")
    void pubsubWithPersistentSessions()
    {
        final String output = run(0, "-addr", "127.0.0.1:" + broker.port(), "-mode", "pubsub", "-pubs", "2", "-subs",
            "2", "-qos", "1", "-rate", "50", "-duration", "1s", "-clean", "false");
        assertThat(jsonNumber(output, "clean_session")).isZero();
        assertThat(jsonNumber(output, "delivered")).isEqualTo(jsonNumber(output, "published") * 2).isGreaterThan(0);
    }

    @Test
    @DisplayName("-clean and -session-expiry: defaults per mode, contradictions refused")
    void cleanSessionFlags()
    {
        final LoadTest flags = new LoadTest();
        assertThat(flags.settings().cleanSession).isTrue();
        flags.clean = false;
        flags.sessionExpiry = 60;
        assertThat(flags.settings().cleanSession).isFalse();
        assertThat(flags.settings().sessionExpiryS).isEqualTo(60);
        flags.clean = null;
        flags.mode = "persistent";
        assertThat(flags.settings().cleanSession).isFalse();
        assertThat(run(2, "-mode", "persistent", "-clean", "true")).contains("-clean true contradicts -mode persistent");
        assertThat(run(2, "-session-expiry", "-1")).contains("-session-expiry must be >= 0");
        assertThat(run(2, "-clean", "maybe")).contains("-clean");
    }

    @Test
    @DisplayName("the matrix's warm-up drops -offline in every spelling, so it is half the warm-up")
    void warmupWithoutOffline()
    {
        assertThat(Matrix.withoutOption(List.of("-mode", "persistent", "-offline", "10s", "-pubs", "5"), "-offline"))
            .containsExactly("-mode", "persistent", "-pubs", "5");
        assertThat(Matrix.withoutOption(List.of("--offline", "1s", "-offline=2s", "--offline=3s", "-qos", "1"),
            "-offline")).containsExactly("-qos", "1");
    }

    private static String[] concat(final String[] a, final String[] b)
    {
        final String[] both = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }

    @org.junit.jupiter.api.Test
    @org.junit.jupiter.api.DisplayName("-pass-file and -pass-env: the password kept out of 'ps'; one source at most")
    void passwordSources(@org.junit.jupiter.api.io.TempDir final java.nio.file.Path directory) throws Exception
    {
        final java.nio.file.Path secret = directory.resolve("secret");
        java.nio.file.Files.writeString(secret, "s3cret\n");
        final PasswordSources file = new PasswordSources();
        file.passFile = secret;
        assertThat(file.password(null)).isEqualTo("s3cret");
        final PasswordSources none = new PasswordSources();
        assertThat(none.password("p")).isEqualTo("p");
        assertThat(none.password(null)).isNull();
        final PasswordSources env = new PasswordSources();
        env.passEnv = System.getenv().keySet().iterator().next();
        assertThat(env.password(null)).isEqualTo(System.getenv(env.passEnv));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> file.password("p"))
            .hasMessageContaining("exclude each other");
        final PasswordSources unset = new PasswordSources();
        unset.passEnv = "RINGMQ_NO_SUCH_VARIABLE_42";
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> unset.password(null))
            .hasMessageContaining("is not set");
    }
}
