package io.ringmq.transport;

import io.ringmq.protocol.MqttVersion;
import io.ringmq.transport.CrashPublisher.Message;
import io.ringmq.transport.CrashSubscriber.Delivery;
import org.assertj.core.api.SoftAssertions;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What the crash tests conclude from what the publishers had acknowledged and the subscribers received, put so that a
 * failure explains itself: numbers as ranges, each duplicate with the connections and DUP flags of its copies.
 */
final class CrashChecks
{
    private static final int MAX_RANGES = 40;

    private CrashChecks()
    {
    }

    /**
     * Checks the numbered messages of a QoS 1 or QoS 2 run: what the publisher had acknowledged reached each
     * subscriber still subscribed, once (QoS 2) or with repeats only as re-deliveries (QoS 1), and nothing published
     * after its UNSUBACK reached the one that unsubscribed.
     *
     * @param run              how to run it again, the start of each message.
     * @param unsubscribedFrom the first number published after the unsubscriber's UNSUBACK.
     */
    static void deliveries(final SoftAssertions softly, final String run, final int qos, final CrashPublisher publisher,
        final List<CrashSubscriber> subscribers, final CrashSubscriber unsubscriber, final long unsubscribedFrom)
    {
        final TreeSet<Long> accepted = publisher.accepted();
        softly.assertThat(accepted).as("%s: messages the broker accepted (the harness at work)", run).isNotEmpty();
        softly.assertThat(publisher.problems()).as("%s: the publisher's protocol problems", run).isEmpty();
        if (qos == 2)
        {
            final List<Boolean> present = publisher.sessionPresent();
            softly.assertThat(present.subList(Math.min(1, present.size()), present.size())).as("%s: the QoS 2 " +
                "publisher's session present at each reconnect after a kill [MQTT-3.2.2-2]", run).doesNotContain(false);
            final TreeSet<Long> unfinished = publisher.unfinished();
            softly.assertThat(unfinished.size()).as("%s: QoS 2 exchanges still unfinished after the publisher resent " +
                "them on a last connection [MQTT-4.4.0-1]: %s", run, ranges(unfinished)).isZero();
        }
        for (final CrashSubscriber subscriber : subscribers)
        {
            final String who = run + ", " + subscriber.clientId() + " (" +
                (subscriber.version() == MqttVersion.V5 ? "5.0" : "3.1.1") + ")";
            final List<Boolean> present = subscriber.sessionPresent();
            softly.assertThat(present.subList(Math.min(1, present.size()), present.size()))
                .as("%s: session present at each reconnect after a kill [MQTT-3.2.2-2]", who).doesNotContain(false);
            final TreeSet<Long> phantoms = new TreeSet<>(subscriber.numbers());
            phantoms.removeAll(publisher.sent().keySet());
            softly.assertThat(phantoms.size()).as("%s: delivered, never published: %s", who, ranges(phantoms))
                .isZero();
            softly.assertThat(subscriber.violations()).as("%s: packet id misuse", who).isEmpty();
            final List<Delivery> deliveries = subscriber.deliveries();
            System.out.printf("%s: %d deliveries, %d numbers received more than once%n", who, deliveries.size(),
                repeated(deliveries, false).size());
            if (subscriber == unsubscriber)
            {
                final NavigableSet<Long> late = new TreeSet<>(subscriber.numbers()).tailSet(unsubscribedFrom, true);
                softly.assertThat(late.size()).as("%s: delivered though published after its UNSUBACK (numbers " +
                    "from %d on) [MQTT-3.10.4-2]: %s", who, unsubscribedFrom, ranges(late)).isZero();
                continue;
            }
            final TreeSet<Long> missing = new TreeSet<>(accepted);
            missing.removeAll(subscriber.numbers());
            softly.assertThat(missing.size()).as("%s: %s received by the publisher, never delivered after the " +
                "kills [%s]: %s", who, qos == 1 ? "PUBACK" : "PUBREC", qos == 1 ? "MQTT-4.3.2-2" : "MQTT-4.3.3-2",
                ranges(missing)).isZero();
            if (qos == 1)
            {
                softly.assertThat(illegalQos1Duplicates(deliveries)).as("%s: QoS 1 may deliver a message more than " +
                    "once, but only as a re-delivery: on a later connection (after a kill), or with DUP set " +
                    "[MQTT-3.3.1-1]; these came again on the same connection without DUP", who).isEmpty();
            }
            else
            {
                final Map<Long, List<Delivery>> twice = repeated(deliveries, true);
                softly.assertThat(twice.size()).as("%s: QoS 2 is exactly once [MQTT-4.3.3]; delivered more than once " +
                    "to a receiver that keeps each packet id until PUBREL across reconnects (method B):%n%s", who,
                    lines(twice)).isZero();
            }
        }
    }

    /**
     * Checks what a new subscriber got as retained after the kills: per topic, the value of the last operation the
     * publisher saw PUBACKed, or of a later one that was unacknowledged at a kill (it may or may not have been
     * stored); nothing where that operation was a clear (an empty payload); RETAIN set on each.
     *
     * @param received what the new subscriber got on subscribing to every retained topic.
     */
    static void retained(final SoftAssertions softly, final String run, final CrashPublisher publisher,
        final List<Delivery> received)
    {
        final String none = "(nothing)";
        final Map<String, List<String>> byTopicReceived = new TreeMap<>();
        for (final Delivery delivery : received)
        {
            byTopicReceived.computeIfAbsent(delivery.topic(), t -> new ArrayList<>())
                .add(delivery.retain() ? delivery.payload() : delivery.payload() + " (RETAIN not set)");
        }
        softly.assertThat(publisher.accepted()).as("%s: retained PUBACKs received (the harness at work)", run)
            .isNotEmpty();
        softly.assertThat(publisher.problems()).as("%s: the retained publisher's protocol problems", run).isEmpty();
        final Map<String, TreeMap<Long, Message>> byTopic = publisher.byTopic();
        softly.assertThat(byTopicReceived.keySet()).as("%s: retained on topics never published", run)
            .isSubsetOf(byTopic.keySet());
        final TreeSet<Long> accepted = publisher.accepted();
        byTopic.forEach((topic, operations) ->
        {
            final Long lastAccepted = operations.keySet().stream().filter(accepted::contains)
                .reduce((a, b) -> b).orElse(null);
            final Set<String> allowed = new LinkedHashSet<>();
            if (null == lastAccepted)
            {
                allowed.add(none);
            }
            for (final Message message : (null == lastAccepted ? operations :
                operations.tailMap(lastAccepted, true)).values())
            {
                allowed.add(message.payload().isEmpty() ? none : message.payload());
            }
            final List<String> got = byTopicReceived.getOrDefault(topic, List.of(none));
            softly.assertThat(got).as("%s: retained on %s after the kills; last PUBACKed operation #%s; allowed: it, " +
                "or a later one unacknowledged at a kill, %s for a clear [MQTT-3.3.1-5, MQTT-3.3.1-10]: %s", run,
                topic, lastAccepted, none, allowed).hasSize(1).allMatch(allowed::contains);
        });
    }

    /**
     * @return e.g. {@code "5 numbers: 3-5, 9, 12"}, at most 40 ranges.
     */
    static String ranges(final Collection<Long> numbers)
    {
        final TreeSet<Long> sorted = new TreeSet<>(numbers);
        final StringBuilder sb = new StringBuilder().append(sorted.size()).append(" numbers");
        int ranges = 0;
        Long first = null;
        Long last = null;
        for (final long n : sorted)
        {
            if (null != last && n == last + 1)
            {
                last = n;
                continue;
            }
            if (null != first)
            {
                if (++ranges > MAX_RANGES)
                {
                    return sb.append(", ...").toString();
                }
                sb.append(ranges == 1 ? ": " : ", ").append(first).append(first.equals(last) ? "" : "-" + last);
            }
            first = n;
            last = n;
        }
        if (null != first)
        {
            sb.append(ranges == 0 ? ": " : ", ").append(first).append(first.equals(last) ? "" : "-" + last);
        }
        return sb.toString();
    }

    /**
     * @param countedOnly only the copies that count as deliveries (QoS 2: not a PUBLISH awaiting PUBREL again).
     * @return the copies of each number received more than once.
     */
    static Map<Long, List<Delivery>> repeated(final List<Delivery> deliveries, final boolean countedOnly)
    {
        final Map<Long, List<Delivery>> byNumber = new TreeMap<>();
        for (final Delivery delivery : deliveries)
        {
            if (!countedOnly || delivery.counted())
            {
                byNumber.computeIfAbsent(delivery.number(), n -> new ArrayList<>()).add(delivery);
            }
        }
        byNumber.values().removeIf(copies -> copies.size() < 2);
        return byNumber;
    }

    /**
     * QoS 1 is at least once, so a number may come again; but a PUBLISH sent again is a re-delivery and carries DUP
     * [MQTT-3.3.1-1], and a new connection is where the broker re-delivers [MQTT-4.4.0-1]. A copy on the same
     * connection as an earlier one without DUP is neither.
     *
     * @return the duplicates that MQTT does not allow, explained.
     */
    static List<String> illegalQos1Duplicates(final List<Delivery> deliveries)
    {
        final List<String> illegal = new ArrayList<>();
        repeated(deliveries, false).forEach((number, copies) ->
        {
            for (int i = 1; i < copies.size(); i++)
            {
                final Delivery copy = copies.get(i);
                final boolean sameConnection = copies.get(i - 1).connection() == copy.connection();
                if (sameConnection && !copy.dup())
                {
                    illegal.add(number + " " + describe(copies));
                }
            }
        });
        return illegal;
    }

    /**
     * @return e.g. {@code "[conn 3 id 17, conn 5 id 2 DUP]"}.
     */
    static String describe(final List<Delivery> copies)
    {
        final StringBuilder sb = new StringBuilder("[");
        for (final Delivery copy : copies)
        {
            sb.append(sb.length() > 1 ? ", " : "").append("conn ").append(copy.connection()).append(" id ")
                .append(copy.packetId()).append(copy.dup() ? " DUP" : "").append(copy.counted() ? "" : " (same)");
        }
        return sb.append(']').toString();
    }

    /**
     * @return the first few entries of a map of duplicates, one a line.
     */
    static String lines(final Map<Long, List<Delivery>> repeated)
    {
        final StringBuilder sb = new StringBuilder();
        int shown = 0;
        for (final Map.Entry<Long, List<Delivery>> entry : repeated.entrySet())
        {
            if (++shown > MAX_RANGES)
            {
                return sb.append("  ... ").append(repeated.size() - MAX_RANGES).append(" more\n").toString();
            }
            sb.append("  ").append(entry.getKey()).append(' ').append(describe(entry.getValue())).append('\n');
        }
        return sb.toString();
    }
}
