package io.ringmq.transport;

import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongFunction;

/**
 * A QoS 1 or QoS 2 publisher for crash tests, on a {@link RawClient}: numbered messages (number 0, 1, 2, ... across
 * all its connections), sent at a steady pace with at most {@code window} unacknowledged, until the broker goes away.
 * It records exactly which numbers the broker accepted: a PUBACK (QoS 1) or a PUBREC (QoS 2) received.
 * <p>
 * QoS 1 connects with a clean session: what was unacknowledged when the broker died is abandoned ("maybe
 * delivered"). QoS 2 keeps its session (3.1.1 clean session 0, or 5.0 clean start 0 and an hour's expiry) and, on
 * each reconnect, does what MQTT requires of a client [MQTT-4.4.0-1]: resends each unacknowledged PUBLISH with DUP
 * and the same packet id, and the PUBREL of each PUBREC'd one, in their original order. Not thread-safe: one
 * {@link #run} at a time; read the results after it returned (a {@code join} orders them).
 */
final class CrashPublisher
{
    /** One message: where, what, whether retained; an empty payload clears a retained topic. */
    record Message(String topic, String payload, boolean retain)
    {
    }

    private final String clientId;
    private final int version;
    private final int qos;
    private final int window;
    private final LongFunction<Message> messages;
    private final Map<Long, Message> sent = new LinkedHashMap<>();
    private final Set<Long> accepted = new HashSet<>();
    private final Set<Long> completed = new HashSet<>();
    /** packet id -> number, in the order first sent (ids are handed out in increasing order, then wrap). */
    private final Map<Integer, Long> inFlight = new LinkedHashMap<>();
    private final Set<Integer> released = new HashSet<>();
    private final List<Boolean> sessionPresent = new ArrayList<>();
    private final List<String> problems = new ArrayList<>();
    private long nextNumber;
    private int nextPacketId = 1;
    private int connections;

    /**
     * @param window   unacknowledged messages at most.
     * @param messages what message number n is.
     */
    CrashPublisher(final String clientId, final int version, final int qos, final int window,
        final LongFunction<Message> messages)
    {
        this.clientId = clientId;
        this.version = version;
        this.qos = qos;
        this.window = window;
        this.messages = messages;
    }

    /**
     * The numbered messages of the QoS tests: the payload is the number, spread over three topics.
     */
    static LongFunction<Message> numbered(final String topicPrefix)
    {
        return n -> new Message(topicPrefix + (n % 3), Long.toString(n), false);
    }

    /**
     * One connection: connect, resend what the session still owes (QoS 2), then publish up to {@code maxNew} new
     * messages, one every {@code paceNs} at most, until the broker closes the connection, or everything sent is
     * finished (then DISCONNECT), or the deadline passes. Never throws for the broker going away.
     *
     * @param connected counted down once connected and the resends are written (or the attempt failed), or null.
     */
    void run(final int port, final int maxNew, final long paceNs, final long deadlineNs,
        final CountDownLatch connected)
    {
        RawClient client = null;
        try
        {
            client = new RawClient(port).version(version);
            final boolean clean = qos == 1;
            final int code = client.handshake(CrashSubscriber.connect(clientId, version, clean,
                CrashSubscriber.SESSION_EXPIRY_S));
            connections++;
            if (0 != code)
            {
                problems.add("connection " + connections + ": CONNACK " + code);
                return;
            }
            sessionPresent.add(client.decoder().connack().isSessionPresent());
            if (clean)
            {
                inFlight.clear(); // unacknowledged QoS 1 messages are abandoned with the session
            }
            resend(client);
            if (null != connected)
            {
                connected.countDown();
            }
            publish(client, maxNew, paceNs, deadlineNs);
        }
        catch (final IOException brokerGone)
        {
            // killed mid-way: what was acknowledged is recorded
        }
        finally
        {
            if (null != connected)
            {
                connected.countDown();
            }
            if (null != client)
            {
                try
                {
                    client.close();
                }
                catch (final IOException ignore)
                {
                    // already closed
                }
            }
        }
    }

    private void resend(final RawClient client) throws IOException
    {
        for (final Map.Entry<Integer, Long> entry : inFlight.entrySet())
        {
            final int packetId = entry.getKey();
            if (released.contains(packetId))
            {
                client.send(RawClient.ack(PacketType.PUBREL, packetId));
            }
            else
            {
                client.send(encode(sent.get(entry.getValue()), packetId, true)); // [MQTT-4.4.0-1], [MQTT-3.3.1-1]
            }
        }
    }

    private void publish(final RawClient client, final int maxNew, final long paceNs, final long deadlineNs)
        throws IOException
    {
        final long startNs = System.nanoTime();
        int published = 0;
        while (System.nanoTime() < deadlineNs)
        {
            final long dueNs = startNs + published * paceNs;
            final boolean more = published < maxNew;
            if (more && inFlight.size() < window && System.nanoTime() >= dueNs)
            {
                final long number = nextNumber++;
                final Message message = messages.apply(number);
                final int packetId = nextPacketId();
                sent.put(number, message);
                inFlight.put(packetId, number); // before the send: an acknowledgement may come at once
                client.send(encode(message, packetId, false));
                published++;
                continue;
            }
            if (!more && inFlight.isEmpty())
            {
                client.send(new byte[]{(byte)0xE0, 0x00});
                return;
            }
            final long waitNs = more && inFlight.size() < window ? dueNs - System.nanoTime() :
                TimeUnit.MILLISECONDS.toNanos(100);
            final int type;
            try
            {
                type = client.readPacketOrClosed((int)Math.max(1, TimeUnit.NANOSECONDS.toMillis(waitNs)));
            }
            catch (final SocketTimeoutException nothingYet)
            {
                continue;
            }
            if (type < 0)
            {
                return; // the broker is gone
            }
            onPacket(client, type);
        }
    }

    private void onPacket(final RawClient client, final int type) throws IOException
    {
        if (type < PacketType.PUBACK || type > PacketType.PUBCOMP)
        {
            return;
        }
        final int packetId = client.decoder().ack().packetId();
        final int reason = version == MqttVersion.V5 ? client.decoder().ack().reasonCode() : 0;
        final Long number = inFlight.get(packetId);
        if (null == number)
        {
            problems.add("connection " + connections + ": " + PacketType.name(type) + " for packet id " + packetId +
                " which is not in flight");
            return;
        }
        if (reason >= 0x80)
        {
            problems.add("connection " + connections + ": " + PacketType.name(type) + " of number " + number +
                " with reason 0x" + Integer.toHexString(reason));
        }
        if (type == PacketType.PUBACK && qos == 1)
        {
            inFlight.remove(packetId);
            if (reason < 0x80)
            {
                accepted.add(number);
            }
        }
        else if (type == PacketType.PUBREC && qos == 2)
        {
            if (reason < 0x80)
            {
                accepted.add(number);
                released.add(packetId); // from now on a PUBREL is owed, never the PUBLISH again [MQTT-4.3.3-1]
                client.send(RawClient.ack(PacketType.PUBREL, packetId));
            }
            else
            {
                inFlight.remove(packetId); // refused: the exchange is over
            }
        }
        else if (type == PacketType.PUBCOMP && qos == 2 && released.remove(packetId))
        {
            inFlight.remove(packetId);
            completed.add(number);
        }
        else
        {
            problems.add("connection " + connections + ": unexpected " + PacketType.name(type) + " for number " +
                number);
        }
    }

    private int nextPacketId()
    {
        while (inFlight.containsKey(nextPacketId))
        {
            nextPacketId = nextPacketId == 0xFFFF ? 1 : nextPacketId + 1;
        }
        final int packetId = nextPacketId;
        nextPacketId = nextPacketId == 0xFFFF ? 1 : nextPacketId + 1;
        return packetId;
    }

    private byte[] encode(final Message message, final int packetId, final boolean dup)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(version).qos(qos).packetId(packetId)
            .dup(dup).retain(message.retain()).topic(message.topic())
            .payload(message.payload().getBytes(StandardCharsets.UTF_8));
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * @return the number the next new message gets.
     */
    long nextNumber()
    {
        return nextNumber;
    }

    /**
     * @return every message sent at least once, by number.
     */
    Map<Long, Message> sent()
    {
        return sent;
    }

    /**
     * @return the numbers the broker accepted: PUBACK (QoS 1) or PUBREC (QoS 2) received.
     */
    TreeSet<Long> accepted()
    {
        return new TreeSet<>(accepted);
    }

    /**
     * @return the QoS 2 numbers whose exchange finished (PUBCOMP received).
     */
    Set<Long> completed()
    {
        return completed;
    }

    /**
     * @return the numbers still unacknowledged (QoS 2: still owed a PUBLISH resend or a PUBREL).
     */
    TreeSet<Long> unfinished()
    {
        return new TreeSet<>(inFlight.values());
    }

    List<Boolean> sessionPresent()
    {
        return sessionPresent;
    }

    List<String> problems()
    {
        return problems;
    }

    int connections()
    {
        return connections;
    }

    /**
     * @return a short account: numbers sent, accepted, unfinished.
     */
    String describe()
    {
        return clientId + ": " + sent.size() + " sent, " + accepted.size() + " accepted, " + inFlight.size() +
            " unfinished, " + connections + " connections";
    }

    /**
     * For a retained message test: the numbers by topic, in order.
     */
    Map<String, TreeMap<Long, Message>> byTopic()
    {
        final Map<String, TreeMap<Long, Message>> byTopic = new TreeMap<>();
        sent.forEach((number, message) -> byTopic.computeIfAbsent(message.topic(), t -> new TreeMap<>())
            .put(number, message));
        return byTopic;
    }
}
