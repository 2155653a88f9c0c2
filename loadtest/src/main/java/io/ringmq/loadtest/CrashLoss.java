package io.ringmq.loadtest;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code loadtest crash-loss PHASE}: how many acknowledged QoS 1 messages a broker loses when it is killed
 * (SIGKILL) and restarted on the same data. The broker is killed by the caller ({@code bench-configs/crash-loss.sh});
 * this command only talks MQTT, in three phases run as separate processes:
 * <pre>
 *   prepare   N subscribers (clean session false; 5.0: Session Expiry 1 h) subscribe PREFIX/# at QoS 1, go offline;
 *             the acknowledged-messages file is started afresh
 *   publish   one QoS 1 publisher (clean session) sends numbered messages on PREFIX/ROUND for -duration or until
 *             its connection drops (the broker was killed); every sequence whose PUBACK came is appended to the file
 *             (repeat: one round per kill)
 *   drain     the subscribers come back (clean session false, no new SUBSCRIBE), take everything until nothing came
 *             for -quiet-for (at most -drain-max), and the tally is printed: acknowledged, delivered, lost, duplicates
 * </pre>
 * The publisher's window is {@code -inflight} messages; each PUBACK is matched to its sequence by packet id.
 */
@Command(name = "crash-loss", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
    description = "Acknowledged QoS 1 messages lost across broker kills: prepare, publish (once per kill), drain.")
final class CrashLoss implements Callable<Integer>, Client.Handler
{
    @Parameters(index = "0", paramLabel = "PHASE", description = "prepare, publish or drain.")
    String phase;

    @Option(names = {"-addr", "--addr"}, paramLabel = "HOST:PORT", description = "Broker address (default: ${DEFAULT-VALUE}).")
    String addr = "127.0.0.1:1883";

    @Option(names = {"-protocol", "--protocol"}, description = "3.1.1 or 5 (default: ${DEFAULT-VALUE}).")
    String protocol = "3.1.1";

    @Option(names = {"-user", "--user"}, description = "User name for every connection.")
    String user;

    @Option(names = {"-pass", "--pass"}, description = "Password for every connection.")
    String pass;

    @picocli.CommandLine.Mixin
    PasswordSources passwords = new PasswordSources();

    @Option(names = {"-subs", "--subs"}, description = "Persistent subscribers (default: ${DEFAULT-VALUE}); the same "
        + "number in prepare and drain.")
    int subs = 4;

    @Option(names = {"-topic-prefix", "--topic-prefix"}, description = "Subscribers take PREFIX/#, round R publishes "
        + "on PREFIX/R (default: ${DEFAULT-VALUE}).")
    String topicPrefix = "crash-loss";

    @Option(names = {"-client-prefix", "--client-prefix"}, description = "Client ids PREFIX-s0.. and PREFIX-pub "
        + "(default: ${DEFAULT-VALUE}).")
    String clientPrefix = "crash-loss";

    @Option(names = {"-acked", "--acked"}, description = "The acknowledged-messages file: started by prepare, appended "
        + "by publish, read by drain (default: ${DEFAULT-VALUE}).")
    Path acked = Path.of("crash-loss.acked");

    @Option(names = {"-duration", "--duration"}, description = "publish: the longest it publishes (default: ${DEFAULT-VALUE}).")
    String duration = "10s";

    @Option(names = {"-rate", "--rate"}, description = "publish: messages/s; 0 sends as fast as the window allows "
        + "(default: ${DEFAULT-VALUE}).")
    int rate;

    @Option(names = {"-inflight", "--inflight"}, description = "publish: messages awaiting PUBACK at once (default: ${DEFAULT-VALUE}).")
    int inflight = 32;

    @Option(names = {"-payload", "--payload"}, description = "publish: payload bytes, at least 16 (default: ${DEFAULT-VALUE}).")
    int payload = 16;

    @Option(names = {"-quiet-for", "--quiet-for"}, description = "drain: ends once nothing arrived for this long "
        + "(default: ${DEFAULT-VALUE}).")
    String quietFor = "3s";

    @Option(names = {"-drain-max", "--drain-max"}, description = "drain: the longest it waits (default: ${DEFAULT-VALUE}).")
    String drainMax = "60s";

    @Option(names = {"-connect-timeout", "--connect-timeout"}, description = "How long a CONNACK (and SUBACK) may take "
        + "(default: ${DEFAULT-VALUE}).")
    String connectTimeout = "10s";

    @Option(names = {"-out", "--out"}, description = "drain: write the result as one JSON object to this file.")
    Path out;

    @Option(names = {"-label", "--label"}, description = "A name for the broker or configuration, in the result.")
    String label = "";

    private Settings settings;
    private int connectTimeoutMs;
    private ClientLoop loop;
    // publish
    private AckLog log;
    private int round;
    private final int[] sequenceByPacketId = new int[65_536];
    private long acknowledgedCount;
    private long rejectedCount;
    private long ackWriteErrors;
    // drain
    private CrashLossTally tally;
    private long lastDeliveryNs;

    public Integer call() throws Exception
    {
        settings = settings();
        connectTimeoutMs = (int)TimeUnit.NANOSECONDS.toMillis(LoadTest.parseDurationNs(connectTimeout,
            "-connect-timeout"));
        try (ClientLoop opened = new ClientLoop(this))
        {
            loop = opened;
            return switch (phase)
            {
                case "prepare" -> prepare();
                case "publish" -> publish();
                case "drain" -> drain();
                default -> throw new IllegalArgumentException("PHASE must be prepare, publish or drain, not '" +
                    phase + "'");
            };
        }
    }

    Settings settings()
    {
        final LoadTest flags = new LoadTest();
        flags.addr = addr;
        flags.protocol = protocol;
        flags.user = user;
        flags.pass = pass;
        flags.passwords = passwords;
        flags.mode = "persistent"; // clean session false; 5.0: a Session Expiry Interval
        flags.pubs = 1;
        flags.qos = 1;
        flags.payload = payload;
        flags.rate = rate;
        flags.inflight = inflight;
        flags.duration = duration;
        flags.topicPrefix = topicPrefix;
        final Settings parsed = flags.settings(); // the generator's own checks of address, protocol, payload...
        if (subs < 1)
        {
            throw new IllegalArgumentException("-subs must be at least 1");
        }
        parsed.subscribers = subs;
        return parsed;
    }

    private int prepare() throws IOException
    {
        AckLog.create(acked, "prepared " + subs + " subscriber(s) on " + addr + " to " + topicPrefix + "/#");
        for (int i = 0; i < subs; i++)
        {
            loop.open(i, false, clientPrefix + "-s" + i, settings, connectTimeoutMs);
        }
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(connectTimeoutMs);
        while (loop.readyCount + loop.endedCount() < subs && System.nanoTime() < deadline)
        {
            loop.poll(10);
        }
        final int ready = loop.readyCount;
        loop.disconnectAll();
        System.out.printf(Locale.ROOT, "crash-loss prepare: %d of %d persistent subscribers took %s/# at QoS 1 and " +
            "went offline%s; %s started%n", ready, subs, topicPrefix, loop.endedCount() > 0 ?
            " (" + loop.endedCount() + " failed)" : "", acked);
        return ready == subs ? 0 : 1;
    }

    private int publish() throws IOException
    {
        round = AckLog.read(acked).lastRound() + 1;
        final Settings publisherSettings = settings();
        publisherSettings.mode = "pub";
        publisherSettings.cleanSession = true; // the publisher's own session does not matter, only its PUBACKs
        final long startNs = System.nanoTime();
        try (AckLog opened = AckLog.appendRound(acked, round))
        {
            log = opened;
            final Client publisher;
            try
            {
                // its id is the round: the payload's stamp names the round of every message
                publisher = loop.open(round, true, clientPrefix + "-pub", publisherSettings, connectTimeoutMs);
            }
            catch (final IOException ex)
            {
                System.out.printf(Locale.ROOT, "crash-loss publish round %d: cannot connect to %s: %s%n", round, addr,
                    ex.getMessage());
                return 1;
            }
            final long connectDeadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(connectTimeoutMs);
            while (publisher.state == Client.State.CONNECTING && System.nanoTime() < connectDeadline)
            {
                loop.poll(10);
            }
            if (publisher.state != Client.State.READY)
            {
                System.out.printf(Locale.ROOT, "crash-loss publish round %d: no CONNACK from %s%n", round, addr);
                return 1;
            }
            final long runStartNs = System.nanoTime();
            final long endNs = runStartNs + settings.durationNs;
            final FixedRateSchedule schedule = publisher.schedule; // -rate 0: null, as fast as the window allows
            if (null != schedule)
            {
                schedule.start(runStartNs); // at most rate x duration messages, however late the end is noticed
            }
            while (publisher.state == Client.State.READY && System.nanoTime() < endNs)
            {
                final long now = System.nanoTime();
                while (publisher.inflight < publisher.window && (null == schedule || schedule.isDue(now)))
                {
                    sequenceByPacketId[publisher.nextPacketId] = publisher.sequence; // for its PUBACK
                    publisher.queuePublish(1, StampClock.stampOf(null == schedule ? now : schedule.nextDueNs()));
                    if (null != schedule)
                    {
                        schedule.advance();
                    }
                }
                loop.flush(publisher);
                loop.poll(1);
                log.flush(); // written once per cycle: the file must hold every PUBACK when the broker dies
            }
            // the time is up: wait a little for the window's acknowledgements, then leave cleanly
            final long settleDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            while (publisher.state == Client.State.READY && publisher.inflight > 0 &&
                System.nanoTime() < settleDeadline)
            {
                loop.poll(5);
            }
            final boolean lost = publisher.state != Client.State.READY;
            loop.disconnectAll();
            log.flush();
            System.out.printf(Locale.ROOT, "crash-loss publish round %d: sent %d, acknowledged %d%s in %.1f s; %s%n",
                round, publisher.sequence, acknowledgedCount, rejectedCount > 0 ? ", refused " + rejectedCount : "",
                (System.nanoTime() - startNs) / 1e9, lost ? "the connection was lost (broker killed?)" :
                "the time was up");
            return ackWriteErrors > 0 ? 1 : 0;
        }
    }

    private int drain() throws IOException
    {
        final AckLog.Contents contents = AckLog.read(acked);
        tally = new CrashLossTally(contents.acknowledged(), subs);
        final long startNs = System.nanoTime();
        for (int i = 0; i < subs; i++)
        {
            try
            {
                // no SUBSCRIBE: the session has the subscription, or the broker lost it
                loop.open(i, false, clientPrefix + "-s" + i, settings, connectTimeoutMs).resuming = true;
            }
            catch (final IOException ex)
            {
                System.out.printf(Locale.ROOT, "crash-loss drain: cannot connect to %s: %s%n", addr, ex.getMessage());
                return 1;
            }
        }
        final long quietNs = LoadTest.parseDurationNs(quietFor, "-quiet-for");
        final long deadline = startNs + LoadTest.parseDurationNs(drainMax, "-drain-max");
        lastDeliveryNs = System.nanoTime();
        long connectedNs = 0;
        while (System.nanoTime() < deadline)
        {
            loop.poll(10);
            final long now = System.nanoTime();
            if (connectedNs == 0 && loop.readyCount + loop.endedCount() >= subs)
            {
                connectedNs = now;
            }
            if (connectedNs == 0 && now - startNs > TimeUnit.MILLISECONDS.toNanos(connectTimeoutMs))
            {
                break;
            }
            if (connectedNs > 0 && now - Math.max(connectedNs, lastDeliveryNs) >= quietNs)
            {
                break;
            }
        }
        loop.disconnectAll();
        final CrashLossTally.Result result = tally.result();
        System.out.println("crash-loss drain by round: " + result.byRound());
        System.out.println(result.summary(label) + String.format(Locale.ROOT, "; drained in %.1f s%s%s",
            (System.nanoTime() - startNs) / 1e9, loop.endedCount() > 0 ? "; " + loop.endedCount() +
            " subscriber(s) failed" : "", contents.malformedCount() > 0 ? "; " + contents.malformedCount() +
            " unreadable line(s) in " + acked : ""));
        if (null != out)
        {
            if (null != out.toAbsolutePath().getParent())
            {
                Files.createDirectories(out.toAbsolutePath().getParent());
            }
            Files.writeString(out, result.json(label) + "\n", StandardCharsets.UTF_8);
        }
        return loop.endedCount() < subs ? 0 : 1;
    }

    public void onConnack(final Client client, final int code)
    {
        if (code != 0)
        {
            System.out.printf(Locale.ROOT, "crash-loss %s: CONNACK 0x%02x for %s%n", phase, code,
                client.publisher ? "the publisher" : "subscriber " + client.id);
            loop.fail(client);
            return;
        }
        if ("prepare".equals(phase))
        {
            client.queueSubscribe(topicPrefix + "/#", 1);
            return;
        }
        if (null != tally)
        {
            tally.sessionPresent(client.id, client.sessionPresent);
        }
        loop.ready(client);
    }

    public void onSuback(final Client client, final int code)
    {
        if (code >= 0x80)
        {
            System.out.printf(Locale.ROOT, "crash-loss prepare: SUBACK 0x%02x for subscriber %d%n", code, client.id);
            loop.fail(client);
            return;
        }
        loop.ready(client);
    }

    public void onDisconnect(final Client client, final int reasonCode)
    {
        // a 5.0 DISCONNECT: the socket closes next, which counts the connection as lost
    }

    public void onMessage(final Client client, final int publisherId, final int sequence, final long stampNs)
    {
        if (null != tally && !client.publisher)
        {
            tally.delivered(client.id, publisherId, sequence); // publisherId is the round (the publisher's id)
            lastDeliveryNs = System.nanoTime();
        }
    }

    public void onAck(final Client client, final int packetId, final int reasonCode)
    {
        if (reasonCode >= 0x80)
        {
            rejectedCount++;
            return;
        }
        acknowledgedCount++;
        try
        {
            log.acknowledged(round, sequenceByPacketId[packetId]);
        }
        catch (final IOException ex)
        {
            ackWriteErrors++;
        }
    }
}
