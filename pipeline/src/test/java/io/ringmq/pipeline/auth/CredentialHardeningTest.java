package io.ringmq.pipeline.auth;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Authentication that cannot be used against the broker, below the network: the decoy hash of unknown users,
 * the keyed cache, the per-address back-off and its bound, the credential workers' threads and queue, the
 * constant-time {@code --user} check, Mosquitto-written entries.
 */
class CredentialHardeningTest
{
    @TempDir
    Path directory;

    @AfterEach
    void noObserver()
    {
        PasswordHash.hashObserver(null);
    }

    private PasswordFile file(final String... userPasswordPairs) throws Exception
    {
        final Path path = directory.resolve("passwd");
        for (int i = 0; i < userPasswordPairs.length; i += 2)
        {
            PasswordFile.write(path, userPasswordPairs[i], userPasswordPairs[i + 1], 1_000);
        }
        return PasswordFile.load(path);
    }

    private static byte[] utf8(final String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    @DisplayName("an unknown user is hashed like a known user with a wrong password: one derivation each, same cost")
    void unknownUserAndWrongPasswordBothHash() throws Exception
    {
        final Authenticator authenticator =
            new Authenticator(Authenticator.AnonymousPolicy.NONE, null, null, file("alice", "a-pw"));
        final AtomicInteger hashes = new AtomicInteger();
        PasswordHash.hashObserver(thread -> hashes.incrementAndGet());

        final long wrong = authenticator.verify("alice", utf8("nope"));
        assertThat(hashes.get()).isEqualTo(1);
        final long unknown = authenticator.verify("mallory", utf8("nope"));
        assertThat(hashes.get()).as("the unknown user was hashed too").isEqualTo(2);
        assertThat(Authenticator.verdictCode(wrong)).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(Authenticator.verdictCode(unknown)).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(wrong & Authenticator.HASHED).isNotZero();
        assertThat(unknown & Authenticator.HASHED).isNotZero();
        assertThat(authenticator.passwordFile().decoy().iterations()).as("the decoy has the file's work factor")
            .isEqualTo(1_000);
    }

    @Test
    @DisplayName("the decoy takes the file's usual iteration count and kind, and no password matches it")
    void decoyFollowsTheUsualEntry() throws Exception
    {
        final Path path = directory.resolve("mixed");
        PasswordFile.write(path, "a", "pw", 200);
        PasswordFile.write(path, "b", "pw", 3_000);
        PasswordFile.write(path, "c", "pw", 3_000);
        final PasswordFile file = PasswordFile.load(path);
        assertThat(file.decoy().iterations()).isEqualTo(3_000);
        assertThat(file.decoy().scram()).isNull();
        assertThat(file.decoy().matches(utf8("pw"))).isFalse();
        assertThat(file.decoy().matches(new byte[0])).isFalse();
    }

    @Test
    @DisplayName("mosquitto_passwd's entries (101 iterations) load and verify, with one warning line at load")
    void mosquittoEntriesLoadWithAWarning() throws Exception
    {
        final Path path = directory.resolve("mosquitto.passwd");
        try (InputStream in = getClass().getResourceAsStream("mosquitto-101.passwd"))
        {
            Files.copy(in, path);
        }
        final List<String> warnings = Collections.synchronizedList(new ArrayList<>());
        final Logger logger = Logger.getLogger("io.ringmq.pipeline.auth");
        final Handler handler = new Handler()
        {
            public void publish(final LogRecord record)
            {
                if (record.getLevel() == java.util.logging.Level.WARNING)
                {
                    warnings.add(record.getMessage());
                }
            }

            public void flush()
            {
            }

            public void close()
            {
            }
        };
        logger.addHandler(handler);
        try
        {
            final PasswordFile file = PasswordFile.load(path);
            assertThat(file.size()).isEqualTo(2);
            assertThat(file.weakCount()).isEqualTo(2);
            assertThat(file.hashOf("mosq").iterations()).isEqualTo(101);
            assertThat(warnings).as("one line for the file, not one per entry").hasSize(1);
            assertThat(warnings.get(0)).contains("2 of 2 entries").contains("fewer than 1000");
            final Authenticator authenticator = new Authenticator(Authenticator.AnonymousPolicy.NONE, null, null, file);
            assertThat(Authenticator.verdictCode(authenticator.verify("mosq", utf8("mosq-secret"))))
                .isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
            assertThat(Authenticator.verdictCode(authenticator.verify("other", utf8("mosq-secret"))))
                .isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
            warnings.clear();
            PasswordFile.load(writeStrong());
            assertThat(warnings).as("no warning at 1,000 iterations").isEmpty();
        }
        finally
        {
            logger.removeHandler(handler);
        }
    }

    private Path writeStrong() throws Exception
    {
        final Path path = directory.resolve("strong");
        PasswordFile.write(path, "s", "pw", PasswordFile.WEAK_ITERATIONS);
        return path;
    }

    @Test
    @DisplayName("iteration counts load whatever they are (1, 101, 100000); 0, negative and garbage are refused")
    void anyIterationCountLoads()
    {
        assertThat(PasswordHash.parse(PasswordHash.create("x", 1).encode()).iterations()).isEqualTo(1);
        assertThat(PasswordHash.parse("$7$100000$AAAAAAAAAAAAAAAA$" + "A".repeat(86) + "==").iterations())
            .isEqualTo(100_000);
        assertThatThrownBy(() -> PasswordHash.parse("$7$0$AAAA$AAAA")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PasswordHash.parse("$7$-5$AAAA$AAAA")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PasswordHash.parse("$7$ten$AAAA$AAAA")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PasswordHash.parse("$7$101$AAAA")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("keyed cache: a reconnect costs one HMAC, not PBKDF2; only a keyed MAC is kept; cleared on reload")
    void keyedCache() throws Exception
    {
        final Authenticator authenticator =
            new Authenticator(Authenticator.AnonymousPolicy.NONE, null, null, file("alice", "a-pw"));
        final AtomicInteger hashes = new AtomicInteger();
        PasswordHash.hashObserver(thread -> hashes.incrementAndGet());
        final long first = authenticator.verify("alice", utf8("a-pw"));
        final long second = authenticator.verify("alice", utf8("a-pw"));
        assertThat(first & Authenticator.HASHED).isNotZero();
        assertThat(second & Authenticator.CACHED).as("the reconnect came from the cache").isNotZero();
        assertThat(hashes.get()).isEqualTo(1);
        assertThat(Authenticator.verdictCode(authenticator.verify("alice", utf8("wrong"))))
            .as("a cached user with another password is hashed and refused")
            .isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(hashes.get()).isEqualTo(2);

        authenticator.passwordFile(authenticator.passwordFile()); // a reload, even of the same entries
        assertThat(authenticator.cachedCount()).isZero();
        authenticator.verify("alice", utf8("a-pw"));
        assertThat(hashes.get()).as("hashed again after the reload").isEqualTo(3);
    }

    @Test
    @DisplayName("keyed cache: the MAC is keyed per process (not SHA-256 of the password), and the cache is bounded")
    void cacheIsKeyedAndBounded() throws Exception
    {
        final CredentialCache one = new CredentialCache(2);
        final CredentialCache two = new CredentialCache(2);
        final byte[] password = utf8("a-pw");
        assertThat(one.mac(utf8("alice"), password)).isNotEqualTo(two.mac(utf8("alice"), password));
        assertThat(one.mac(utf8("alice"), password))
            .isNotEqualTo(MessageDigest.getInstance("SHA-256").digest(password));
        assertThat(one.mac(utf8("ab"), utf8("c"))).as("parts length-prefixed").isNotEqualTo(one.mac(utf8("a"), utf8("bc")));
        one.put(1, "a", password);
        one.put(1, "b", password);
        one.put(1, "c", password);
        assertThat(one.size()).isEqualTo(2);
        assertThat(one.contains(1, "a", password)).as("the least recently used went first").isFalse();
        assertThat(one.contains(1, "c", password)).isTrue();
        assertThat(one.contains(2, "c", password)).as("another file generation").isFalse();
        final CredentialCache none = new CredentialCache(0);
        none.put(1, "a", password);
        assertThat(none.contains(1, "a", password)).isFalse();
    }

    @Test
    @DisplayName("--user/--pass: accepted on an exact match only, compared as keyed MACs (lengths do not matter)")
    void commandLineUser() throws Exception
    {
        final Authenticator authenticator =
            new Authenticator(Authenticator.AnonymousPolicy.NONE, "ops", "cli-pw", null);
        assertThat(Authenticator.verdictCode(authenticator.verify("ops", utf8("cli-pw"))))
            .isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        assertThat(Authenticator.verdictGeneration(authenticator.verify("ops", utf8("cli-pw")))).isZero();
        for (final String[] attempt : new String[][]{{"ops", "cli-p"}, {"ops", "cli-pw "}, {"op", "cli-pw"},
            {"ops2", "cli-pw"}, {"", ""}, {"ops", ""}})
        {
            assertThat(Authenticator.verdictCode(authenticator.verify(attempt[0], utf8(attempt[1]))))
                .as(attempt[0] + "/" + attempt[1]).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        }
        assertThat(authenticator.authenticate(false, "ops", null)).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(authenticator.authenticate(false, null, null)).isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
    }

    @Test
    @DisplayName("back-off: N failures start it, it doubles up to the cap, a success resets, a quiet spell resets")
    void backoffGrowsAndResets()
    {
        final AddressBackoff backoff = new AddressBackoff(new CredentialSettings().maxFailures(3)
            .failureWindowMs(10_000).backoff(1_000, 4_000).conclude());
        final long key = 42;
        long now = 1_000_000;
        assertThat(backoff.failed(key, now)).isFalse();
        assertThat(backoff.failed(key, now)).isFalse();
        assertThat(backoff.isBackingOff(key, now)).isFalse();
        assertThat(backoff.failed(key, now)).as("the third failure starts a back-off").isTrue();
        assertThat(backoff.isBackingOff(key, now + 999)).isTrue();
        assertThat(backoff.isBackingOff(key, now + 1_000)).isFalse();
        now += 1_000;
        backoff.failed(key, now);
        backoff.failed(key, now);
        assertThat(backoff.failed(key, now)).isTrue();
        assertThat(backoff.isBackingOff(key, now + 1_999)).as("doubled").isTrue();
        assertThat(backoff.isBackingOff(key, now + 2_000)).isFalse();
        now += 2_000;
        for (int round = 0; round < 3; round++)
        {
            backoff.failed(key, now);
            backoff.failed(key, now);
            backoff.failed(key, now);
            assertThat(backoff.isBackingOff(key, now + 3_999)).as("capped at 4 s").isTrue();
            assertThat(backoff.isBackingOff(key, now + 4_000)).isFalse();
            now += 4_000;
        }
        backoff.succeeded(key);
        assertThat(backoff.size()).as("a success forgets the address").isZero();
        backoff.failed(key, now);
        backoff.failed(key, now);
        assertThat(backoff.failed(key, now)).isTrue();
        assertThat(backoff.isBackingOff(key, now + 1_000)).as("back to the first back-off").isFalse();

        backoff.failed(7, now);
        backoff.failed(7, now);
        assertThat(backoff.failed(7, now + 10_001)).as("failures outside the window do not add up").isFalse();
    }

    @Test
    @DisplayName("back-off: a million source addresses keep the table at its bound, the forgotten counted")
    void backoffIsBounded() throws Exception
    {
        final AddressBackoff backoff = new AddressBackoff(new CredentialSettings().trackedAddresses(1_000).conclude());
        for (int i = 0; i < 1_000_000; i++)
        {
            backoff.failed(i, 1_000 + i * 100L); // one a tenth of a second: the oldest's window is over
        }
        assertThat(backoff.size()).isEqualTo(1_000);
        assertThat(backoff.takeEvicted()).isEqualTo(999_000);
        assertThat(AddressKeys.of(InetAddress.getByName("2001:db8::1")))
            .as("IPv6 by its /64").isEqualTo(AddressKeys.of(InetAddress.getByName("2001:db8::ffff:1")));
        assertThat(AddressKeys.of(InetAddress.getByName("2001:db8:0:1::1")))
            .isNotEqualTo(AddressKeys.of(InetAddress.getByName("2001:db8::1")));
        assertThat(AddressKeys.of(InetAddress.getByName("10.0.0.1")))
            .isNotEqualTo(AddressKeys.of(InetAddress.getByName("10.0.0.2")));
        assertThat(AddressKeys.of(InetAddress.getByName("10.0.0.1"))).as("IPv4 apart from any unicast /64")
            .isNotEqualTo(AddressKeys.of(InetAddress.getByName("0:100:a00:1::")))
            .isEqualTo(AddressKeys.of(InetAddress.getByName("::ffff:10.0.0.1"))); // the JDK reads it as IPv4
        assertThat(AddressKeys.of(InetAddress.getByName("8000::1"))).as("no unicast address's key means none")
            .isNotEqualTo(AddressKeys.NONE)
            .isNotEqualTo(AddressKeys.of(InetAddress.getByName("8000:0:0:1::1")));
        assertThat(AddressKeys.of(InetAddress.getByName("ff00::1"))).as("multicast (only a PROXY header names it)")
            .isNotEqualTo(AddressKeys.NONE);
        final AddressBackoff off = new AddressBackoff(new CredentialSettings().maxFailures(0).conclude());
        for (int i = 0; i < 100; i++)
        {
            assertThat(off.failed(1, 1_000)).isFalse();
        }
        assertThat(off.size()).as("0: no limit, nothing tracked").isZero();
    }

    @Test
    @DisplayName("back-off: failing from more addresses than the table holds forgets neither a running back-off nor "
        + "failures still in their window: the addresses the table cannot hold count together; once windows and "
        + "back-offs are over, a new address gets its own entry again")
    void backoffSurvivesAFullTable()
    {
        final AddressBackoff backoff = new AddressBackoff(new CredentialSettings().maxFailures(3)
            .backoff(60_000, 60_000).trackedAddresses(2).conclude()); // the window: 60 s
        final long now = 1_000;
        for (int i = 0; i < 3; i++)
        {
            backoff.failed(1, now);
        }
        backoff.failed(2, now + 1); // one failure: below the maximum, in its window
        assertThat(backoff.isBackingOff(1, now + 1)).isTrue();
        assertThat(backoff.isBackingOff(3, now + 1)).as("an address the full table does not hold: not yet").isFalse();
        for (int address = 100; address < 103; address++)
        {
            backoff.failed(address, now + 2); // a rotation: each new address once
        }
        assertThat(backoff.size()).isEqualTo(2);
        assertThat(backoff.isBackingOff(1, now + 2)).as("address 1 still within its 60 s").isTrue();
        assertThat(backoff.isBackingOff(103, now + 2)).as("the addresses the table cannot hold back off together")
            .isTrue();
        assertThat(backoff.isBackingOff(2, now + 2)).isFalse();
        backoff.failed(2, now + 3);
        backoff.failed(2, now + 3);
        assertThat(backoff.isBackingOff(2, now + 3)).as("address 2's own failures were kept: its third").isTrue();
        final long later = now + 130_000; // windows, back-offs and the quiet spell after them all over
        assertThat(backoff.failed(500, later)).isFalse();
        assertThat(backoff.isBackingOff(500, later)).isFalse();
        assertThat(backoff.size()).isEqualTo(2);
        assertThat(backoff.takeEvicted()).as("address 1 forgotten for 500").isEqualTo(1);
    }

    @Test
    @Timeout(20)
    @DisplayName("workers: hashing runs on ringmq-auth-worker-N threads; a full queue refuses at once (counted)")
    void workersAndQueue() throws Exception
    {
        final BrokerCounters counters = new BrokerCounters();
        final Authenticator authenticator =
            new Authenticator(Authenticator.AnonymousPolicy.NONE, null, null, file("alice", "a-pw"));
        final CountDownLatch release = new CountDownLatch(1);
        final LinkedBlockingQueue<String> threads = new LinkedBlockingQueue<>();
        PasswordHash.hashObserver(thread ->
        {
            threads.add(thread.getName());
            awaitQuietly(release);
        });
        final LinkedBlockingQueue<CredentialRequest> verdicts = new LinkedBlockingQueue<>();
        try (CredentialWorkers workers = new CredentialWorkers(authenticator,
            new CredentialSettings().threads(1).queueLength(1).conclude(), 1, counters))
        {
            workers.sink(0, verdicts::add);
            assertThat(authenticator.offloaded()).isTrue();
            assertThat(workers.submit(request(1, "alice", "a-pw"))).isTrue();
            assertThat(threads.poll(10, TimeUnit.SECONDS)).isEqualTo("ringmq-auth-worker-0"); // busy on the first
            assertThat(workers.submit(request(2, "alice", "a-pw"))).as("queued").isTrue();
            assertThat(workers.submit(request(3, "alice", "a-pw"))).as("queue full").isFalse();
            assertThat(counters.get(BrokerCounters.AUTH_QUEUE_FULL)).isEqualTo(1);
            release.countDown();
            final CredentialRequest first = verdicts.poll(10, TimeUnit.SECONDS);
            final CredentialRequest second = verdicts.poll(10, TimeUnit.SECONDS);
            assertThat(first.connectionId()).isEqualTo(1);
            assertThat(Authenticator.verdictCode(first.verdict())).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
            assertThat(second.verdict() & Authenticator.CACHED).as("the second from the cache").isNotZero();
            assertThat(counters.get(BrokerCounters.AUTH_HASHES)).isEqualTo(1);
            assertThat(counters.get(BrokerCounters.AUTH_CACHE_HITS)).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("workers: an address backing off is refused without hashing; loopback exempt only when asked")
    void workersBackOff() throws Exception
    {
        final BrokerCounters counters = new BrokerCounters();
        final Authenticator authenticator =
            new Authenticator(Authenticator.AnonymousPolicy.NONE, null, null, file("alice", "a-pw"));
        final AtomicInteger hashes = new AtomicInteger();
        PasswordHash.hashObserver(thread -> hashes.incrementAndGet());
        final List<CredentialRequest> verdicts = new ArrayList<>();
        try (CredentialWorkers workers = new CredentialWorkers(authenticator,
            new CredentialSettings().maxFailures(2).conclude(), 0, counters))
        {
            workers.sink(0, verdicts::add);
            workers.submit(request(1, "alice", "x"));
            workers.submit(request(2, "alice", "y"));
            workers.submit(request(3, "alice", "a-pw"));
            assertThat(hashes.get()).as("the third was not hashed").isEqualTo(2);
            assertThat(Authenticator.verdictCode(verdicts.get(2).verdict())).isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
            assertThat(counters.get(BrokerCounters.AUTH_RATE_LIMITED)).isEqualTo(1);
            assertThat(counters.get(BrokerCounters.AUTH_BACKOFFS)).isEqualTo(1);
        }
        try (CredentialWorkers workers = new CredentialWorkers(authenticator,
            new CredentialSettings().maxFailures(2).exemptLoopback(true).conclude(), 0, counters))
        {
            verdicts.clear();
            workers.sink(0, verdicts::add);
            for (int i = 0; i < 5; i++)
            {
                workers.submit(request(i, "alice", "x"));
            }
            workers.submit(request(9, "alice", "a-pw"));
            assertThat(Authenticator.verdictCode(verdicts.get(5).verdict()))
                .as("loopback exempt").isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        }
    }

    private static CredentialRequest request(final long connectionId, final String user, final String password)
        throws Exception
    {
        return new CredentialRequest(0, connectionId, user, utf8(password), InetAddress.getLoopbackAddress(), true);
    }

    private static void awaitQuietly(final CountDownLatch latch)
    {
        try
        {
            latch.await(10, TimeUnit.SECONDS);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }
}
