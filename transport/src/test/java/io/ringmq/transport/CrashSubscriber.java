package io.ringmq.transport;

import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubscribeEncoder;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A subscriber with a persistent session for crash tests, on a {@link RawClient} so that packet ids and DUP are
 * seen: 3.1.1 with clean session 0, or 5.0 with clean start 0 and a session expiry of an hour. It records every
 * PUBLISH it receives with the connection it came on (connections are numbered from 1; in these tests a new
 * connection follows a broker crash), and is the QoS 2 receiver of MQTT 4.3.3 method B: it delivers on the first
 * PUBLISH of a packet id, keeps the id until PUBREL, and treats a PUBLISH of a kept id as the same delivery. That
 * receiver state outlives connections, as a real client's session state does, and is discarded when a CONNACK says
 * session present 0 [MQTT-3.2.2-4 (5.0)].
 * <p>
 * The connection is read either synchronously (around SUBSCRIBE / UNSUBSCRIBE) or by a reader thread
 * ({@link #startReading(Acks)}) until the broker goes away; never both at once.
 */
final class CrashSubscriber
{
    /** How a connection acknowledges what it receives. */
    enum Acks
    {
        /** every PUBLISH and PUBREL, as a healthy client. */
        ALL,
        /**
         * leaves state behind, as a client that is cut off mid-way: no PUBACK / PUBREC for numbers divisible by 3
         * (QoS 2: stored and delivered, PUBREC not sent), no PUBCOMP for numbers that leave 1 divided by 3.
         */
        SOME
    }

    /**
     * One PUBLISH received.
     *
     * @param counted false for a QoS 2 PUBLISH of a packet id still awaiting PUBREL: the same delivery again.
     */
    record Delivery(String topic, String payload, int qos, boolean dup, boolean retain, int packetId, int connection,
        boolean counted)
    {
        long number()
        {
            return Long.parseLong(payload);
        }
    }

    static final int SESSION_EXPIRY_S = 3600;

    private final String clientId;
    private final int version;
    private final List<Delivery> deliveries = new ArrayList<>(); // guarded by this
    private final List<String> violations = new ArrayList<>(); // guarded by this
    /** QoS 2 receiver state: packet id -> payload, from PUBLISH until PUBREL. */
    private final Map<Integer, String> awaitingRelease = new HashMap<>(); // guarded by this
    private final List<Boolean> sessionPresent = new ArrayList<>();
    private int connection;
    private int nextPacketId = 1;
    private RawClient client;
    private Thread reader;
    private volatile boolean reading;
    private volatile Acks acks = Acks.ALL;
    private volatile long lastDeliveryNs = System.nanoTime();

    CrashSubscriber(final String clientId, final int version)
    {
        this.clientId = clientId;
        this.version = version;
    }

    String clientId()
    {
        return clientId;
    }

    int version()
    {
        return version;
    }

    /**
     * Connects with a persistent session (clean session / clean start as given).
     *
     * @return the CONNACK's session present flag.
     * @throws IOException when the broker refuses or does not answer.
     */
    boolean connect(final int port, final boolean clean) throws IOException
    {
        client = new RawClient(port).version(version);
        final int code = client.handshake(connect(clientId, version, clean, SESSION_EXPIRY_S));
        if (0 != code)
        {
            throw new IOException(clientId + ": CONNACK " + code);
        }
        final boolean present = client.decoder().connack().isSessionPresent();
        synchronized (this)
        {
            connection++;
            sessionPresent.add(present);
            if (!present)
            {
                awaitingRelease.clear(); // no session at the broker: no session state here either
            }
        }
        acks = Acks.ALL;
        return present;
    }

    /**
     * A CONNECT: 3.1.1 with keep alive 60 s, or 5.0 with a Session Expiry Interval.
     */
    static byte[] connect(final String clientId, final int version, final boolean clean, final int expiryS)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(version).cleanStart(clean).keepAlive(60);
        if (version == MqttVersion.V5)
        {
            encoder.properties(new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, expiryS));
        }
        encoder.clientId().wrap(clientId);
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * Subscribes and waits for the SUBACK, handling what arrives before it.
     *
     * @return the granted QoS (or failure code).
     */
    int subscribe(final String filter, final int qos) throws IOException
    {
        final int packetId = nextPacketId();
        client.send(version == MqttVersion.V5 ? RawClient.subscribe5(packetId, filter, qos) :
            RawClient.subscribe(packetId, filter, qos));
        readUntil(PacketType.SUBACK);
        return client.decoder().suback().reasonCode(0);
    }

    /**
     * Unsubscribes and waits for the UNSUBACK, handling what arrives before it.
     */
    void unsubscribe(final String filter) throws IOException
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.UNSUBSCRIBE).version(version)
            .packetId(nextPacketId());
        encoder.filters().add(filter, 0);
        client.send(RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0)));
        readUntil(PacketType.UNSUBACK);
    }

    private int nextPacketId()
    {
        final int packetId = nextPacketId;
        nextPacketId = nextPacketId == 0xFFFF ? 1 : nextPacketId + 1;
        return packetId;
    }

    private void readUntil(final int type) throws IOException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline)
        {
            final int read = client.readPacketOrClosed(10_000);
            if (read == type)
            {
                return;
            }
            if (read < 0)
            {
                throw new IOException(clientId + ": connection closed while waiting for " + PacketType.name(type));
            }
            handle(read);
        }
        throw new IOException(clientId + ": no " + PacketType.name(type) + " within 10 s");
    }

    /**
     * Reads the connection on a thread of its own until the broker closes it or {@link #disconnect()}.
     */
    void startReading(final Acks acks)
    {
        this.acks = acks;
        reading = true;
        reader = new Thread(this::readLoop, clientId + "-reader");
        reader.setDaemon(true);
        reader.start();
    }

    private void readLoop()
    {
        try
        {
            while (reading)
            {
                try
                {
                    final int type = client.readPacketOrClosed(100);
                    if (type < 0)
                    {
                        return; // the broker is gone
                    }
                    handle(type);
                }
                catch (final SocketTimeoutException idle)
                {
                    // nothing yet: look at the flag again
                }
            }
        }
        catch (final IOException gone)
        {
            // the broker went away mid-packet or while we wrote an acknowledgement
        }
    }

    /**
     * Waits (10 s at most) for the reader to end, after the broker was killed.
     */
    void awaitConnectionEnd() throws InterruptedException, IOException
    {
        if (null != reader)
        {
            reader.join(10_000);
            if (reader.isAlive())
            {
                reading = false;
                reader.join(1_000);
            }
            reader = null;
        }
        client.close();
    }

    /**
     * Stops reading and drops the connection without DISCONNECT (a reset), as a client that crashed.
     */
    void drop() throws IOException, InterruptedException
    {
        reading = false;
        if (null != reader)
        {
            reader.join(5_000);
            reader = null;
        }
        client.kill();
    }

    /**
     * Stops reading and sends DISCONNECT (the session stays, as its expiry says).
     */
    void disconnect() throws IOException, InterruptedException
    {
        reading = false;
        if (null != reader)
        {
            reader.join(5_000);
            reader = null;
        }
        client.send(new byte[]{(byte)0xE0, 0x00});
        client.close();
    }

    private void handle(final int type) throws IOException
    {
        if (type == PacketType.PUBLISH)
        {
            onPublish(client.decoder().publish());
        }
        else if (type == PacketType.PUBREL)
        {
            final int packetId = client.decoder().ack().packetId();
            final String payload;
            synchronized (this)
            {
                payload = awaitingRelease.remove(packetId);
            }
            if (acks == Acks.ALL || null == payload || number(payload) % 3 != 1)
            {
                client.send(RawClient.ack(PacketType.PUBCOMP, packetId));
            }
        }
    }

    private void onPublish(final PublishFlyweight publish) throws IOException
    {
        final String topic = text(publish.topic());
        final String payload = text(publish.payload());
        final int qos = publish.qos();
        final int packetId = qos > 0 ? publish.packetId() : 0;
        boolean counted = true;
        synchronized (this)
        {
            if (qos == 2)
            {
                final String kept = awaitingRelease.get(packetId);
                if (null != kept)
                {
                    counted = false; // method B: a PUBLISH of a packet id awaiting PUBREL is the same delivery
                    if (!kept.equals(payload))
                    {
                        violations.add("connection " + connection + ": packet id " + packetId + " carried " +
                            payload + " while " + kept + " still awaited PUBREL (a packet id reused too early)");
                    }
                }
                else
                {
                    awaitingRelease.put(packetId, payload);
                }
            }
            deliveries.add(new Delivery(topic, payload, qos, publish.isDup(), publish.isRetain(), packetId,
                connection, counted));
            lastDeliveryNs = System.nanoTime();
        }
        final boolean withhold = acks == Acks.SOME && number(payload) % 3 == 0;
        if (qos > 0 && !withhold)
        {
            client.send(RawClient.ack(qos == 1 ? PacketType.PUBACK : PacketType.PUBREC, packetId));
        }
    }

    private static long number(final String payload)
    {
        try
        {
            return Long.parseLong(payload);
        }
        catch (final NumberFormatException notANumber)
        {
            return 1; // not a numbered message: acknowledged in full
        }
    }

    private static String text(final Slice slice)
    {
        return slice.length() == 0 ? "" : slice.buffer().getStringWithoutLengthUtf8(slice.offset(), slice.length());
    }

    /**
     * Waits until every expected number has been delivered and nothing more came for {@code quietMs}, or nothing
     * at all came for {@code idleMs} (the broker has nothing more to give), or {@code timeoutMs} passed.
     */
    void awaitDeliveries(final java.util.Set<Long> expected, final long quietMs, final long idleMs,
        final long timeoutMs) throws InterruptedException
    {
        final long start = System.nanoTime();
        lastDeliveryNs = start;
        final long deadline = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (System.nanoTime() < deadline)
        {
            final long quietNs = System.nanoTime() - lastDeliveryNs;
            final boolean quiet = quietNs >= TimeUnit.MILLISECONDS.toNanos(quietMs);
            if (quietNs >= TimeUnit.MILLISECONDS.toNanos(idleMs) ||
                (quiet && (expected.isEmpty() || numbers().containsAll(expected))))
            {
                return;
            }
            Thread.sleep(20); // polling the condition
        }
    }

    synchronized List<Delivery> deliveries()
    {
        return new ArrayList<>(deliveries);
    }

    /**
     * @return the numbers delivered (payloads that are not a number are left out).
     */
    synchronized java.util.Set<Long> numbers()
    {
        final java.util.Set<Long> numbers = new java.util.HashSet<>();
        for (final Delivery delivery : deliveries)
        {
            try
            {
                numbers.add(delivery.number());
            }
            catch (final NumberFormatException notANumber)
            {
                // a retained test's value
            }
        }
        return numbers;
    }

    synchronized List<String> violations()
    {
        return new ArrayList<>(violations);
    }

    /**
     * @return the session present flag of each connection, in order.
     */
    synchronized List<Boolean> sessionPresent()
    {
        return new ArrayList<>(sessionPresent);
    }

    synchronized int connections()
    {
        return connection;
    }
}
