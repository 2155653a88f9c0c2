package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.LimitSettings;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MQTT 5.0 shared subscriptions end to end: three HiveMQ clients in {@code $share/g/t/#}, a broker per
 * {@code --shared-subscription-strategy}. Every member also has an ordinary subscription to {@code mark}: one marker
 * published there after the messages reaches every member behind whatever the group sent it, so the test knows
 * when each member has all it will get.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SharedSubscriptionTest extends InProcessBrokerTest
{
    private static final String GROUP = "$share/g/t/#";
    private int port;

    private void start(final String strategy) throws Exception
    {
        port = launch(TestBrokers.v5Context().limits(l -> l.sharedSubscriptionStrategy(strategy)));
    }

    static List<String> strategies()
    {
        return LimitSettings.SHARED_STRATEGIES;
    }

    private Hive5 member(final String clientId)
    {
        final Hive5 member = closeLater(Hive5.connect(port, clientId));
        member.subscribe(GROUP, 1);
        member.subscribe("mark", 1);
        return member;
    }

    private List<Hive5> members(final int count)
    {
        final List<Hive5> members = new ArrayList<>();
        for (int i = 0; i < count; i++)
        {
            members.add(member("member-" + i));
        }
        return members;
    }

    /**
     * Publishes a marker to every member and returns what each got before it, as payloads.
     */
    private static List<List<String>> collect(final List<Hive5> members, final Hive5 publisher)
        throws InterruptedException
    {
        final String marker = "marker-" + System.nanoTime();
        publisher.publish("mark", marker, 1, false);
        final List<List<String>> received = new ArrayList<>();
        for (final Hive5 member : members)
        {
            received.add(member.receiveUntil(marker).stream().map(Hive5::text).toList());
        }
        return received;
    }

    /** Asserts that the members together got every one of {@code sent}, each exactly once. */
    private static void assertEachExactlyOnce(final List<List<String>> received, final List<String> sent)
    {
        final List<String> all = new ArrayList<>();
        received.forEach(all::addAll);
        assertThat(all).as("what the members got, together").containsExactlyInAnyOrderElementsOf(sent);
    }

    private static List<String> publish(final Hive5 publisher, final String topicPrefix, final int count)
    {
        final List<String> sent = new ArrayList<>();
        for (int i = 0; i < count; i++)
        {
            final String payload = "m" + i;
            publisher.publish(topicPrefix + (i % 5), payload, 1, false);
            sent.add(payload);
        }
        return sent;
    }

    /**
     * Starts a broker with {@code strategy}, sends 30 messages over five topics to a group of three members, and
     * checks that each went to exactly one of them.
     *
     * @return what each member got.
     */
    private List<List<String>> spread(final String strategy) throws Exception
    {
        start(strategy);
        final List<Hive5> members = members(3);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        final List<String> sent = publish(publisher, "t/", 30);
        final List<List<String>> received = collect(members, publisher);
        assertEachExactlyOnce(received, sent);
        return received;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("strategies")
    @DisplayName("MQTT-4.8.2-2 (4.8.2): whatever the strategy, each message of a shared subscription goes to exactly "
        + "one member of the group")
    void exactlyOneMember(final String strategy) throws Exception
    {
        assertThat(spread(strategy)).hasSize(3);
    }

    @Test
    @DisplayName("4.8.2, --shared-subscription-strategy round-robin: 30 messages over 3 members, 10 each")
    void roundRobinSpreadsEvenly() throws Exception
    {
        assertThat(spread("round-robin")).allSatisfy(got -> assertThat(got).hasSize(10));
    }

    @Test
    @DisplayName("4.8.2, --shared-subscription-strategy sticky: every message to the same member while it is online")
    void stickyKeepsOneMember() throws Exception
    {
        assertThat(spread("sticky")).filteredOn(got -> !got.isEmpty()).hasSize(1);
    }

    @Test
    @DisplayName("4.8.2, --shared-subscription-strategy hash-topic: all messages on one topic go to the same member")
    void hashTopicStablePerTopic() throws Exception
    {
        start("hash-topic");
        final List<Hive5> members = members(3);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        final Map<String, Integer> memberOfTopic = new HashMap<>();
        for (int round = 0; round < 2; round++)
        {
            final List<String> sent = new ArrayList<>();
            for (int i = 0; i < 40; i++)
            {
                final String topic = "t/" + (i % 8);
                publisher.publish(topic, topic + "#" + round + "-" + i, 1, false);
                sent.add(topic + "#" + round + "-" + i);
            }
            final List<List<String>> received = collect(members, publisher);
            assertEachExactlyOnce(received, sent);
            for (int m = 0; m < received.size(); m++)
            {
                for (final String payload : received.get(m))
                {
                    final String topic = payload.substring(0, payload.indexOf('#'));
                    final Integer before = memberOfTopic.putIfAbsent(topic, m);
                    assertThat(null == before ? m : before).as("member of %s", topic).isEqualTo(m);
                }
            }
        }
        assertThat(memberOfTopic).hasSize(8);
    }

    @Test
    @DisplayName("4.8.2: a disconnected member (its session kept) gets nothing while other members are connected, "
        + "neither then nor queued for its return")
    void disconnectedMemberSkipped() throws Exception
    {
        start("round-robin");
        final List<Hive5> online = members(2);
        final Hive5 away = closeLater(new Hive5(port, "away"));
        away.client.connectWith().cleanStart(true).sessionExpiryInterval(60).send();
        away.subscribe(GROUP, 1);
        away.subscribe("mark", 1);
        away.client.disconnect();

        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        final List<String> sent = publish(publisher, "t/", 20);
        assertEachExactlyOnce(collect(online, publisher), sent);

        final Hive5 back = closeLater(new Hive5(port, "away"));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(60).send().isSessionPresent())
            .isTrue();
        final List<String> queued = new ArrayList<>();
        for (final Mqtt5Publish publish : back.drainUntilMarker(publisher, "mark"))
        {
            queued.add(Hive5.text(publish));
        }
        assertThat(queued).as("queued for the member while it was away").allMatch(p -> p.startsWith("marker-"));
    }

    @Test
    @DisplayName("4.8.2, 3.8.4: retained messages are not sent to a shared subscription when it is made")
    void noRetainedOnSharedSubscription() throws Exception
    {
        start("round-robin");
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.publish("t/state", "retained", 1, true);
        final Hive5 member = member("member");
        assertThat(collect(List.of(member), publisher)).containsExactly(List.of());

        final Hive5 plain = closeLater(Hive5.connect(port, "plain"));
        plain.subscribe("t/#", 1);
        assertThat(Hive5.text(plain.next())).as("the message is retained").isEqualTo("retained");
    }

    @Test
    @DisplayName("4.8.2: a 3.1.1 client (Paho) subscribing to $share/g/t/# joins the group, as an extension: 20 "
        + "messages shared with a 5.0 member, each to exactly one, 10 each by round-robin")
    void v311ClientShares() throws Exception
    {
        start("round-robin");
        final Hive5 v5 = member("v5-member");
        final Paho v3 = closeLater(Paho.connect(port, "v3-member"));
        v3.client.subscribe(new String[]{GROUP, "mark"}, new int[]{1, 1});
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        final List<String> sent = publish(publisher, "t/", 20);

        final String marker = "marker-" + System.nanoTime();
        publisher.publish("mark", marker, 1, false);
        final List<String> fromV5 = v5.receiveUntil(marker).stream().map(Hive5::text).toList();
        final List<String> fromV3 = new ArrayList<>();
        for (Paho.Received got = v3.next(); !marker.equals(got.payload()); got = v3.next())
        {
            assertThat(got.topic()).startsWith("t/");
            fromV3.add(got.payload());
        }
        assertEachExactlyOnce(List.of(fromV5, fromV3), sent);
        assertThat(fromV5).hasSize(10);
        assertThat(fromV3).hasSize(10);
        final Set<String> overlap = new HashSet<>(fromV5);
        overlap.retainAll(fromV3);
        assertThat(overlap).isEmpty();
    }

    @Test
    @DisplayName("4.8.2: a member whose session ends with QoS 1 messages unacknowledged: they go to another member of "
        + "the group, each of the 10 messages reaching the group once acknowledged")
    void unacknowledgedGoToAnotherMember() throws Exception
    {
        start("round-robin");
        final Hive5 keeper = member("keeper");
        final RawClient taker = closeLater(new RawClient(port).v5());
        taker.send(RawClient.connect5("taker", null));
        assertThat(taker.readPacket(5_000)).isEqualTo(io.ringmq.protocol.PacketType.CONNACK);
        taker.send(RawClient.subscribe5(1, GROUP, 1));
        assertThat(taker.readPacket(5_000)).isEqualTo(io.ringmq.protocol.PacketType.SUBACK);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        final List<String> sent = publish(publisher, "t/", 10);

        final Set<String> taken = new HashSet<>();
        while (taken.size() < 5)
        {
            assertThat(taker.readPacket(5_000)).isEqualTo(io.ringmq.protocol.PacketType.PUBLISH);
            taken.add(taker.decoder().publish().payload().asString()); // never acknowledged
        }
        taker.close(); // its session (expiry 0) ends with the connection

        final Set<String> kept = new HashSet<>();
        while (kept.size() < sent.size())
        {
            final Mqtt5Publish message = keeper.next();
            assertThat(message).as("all of " + sent + " at the keeper; has " + kept).isNotNull();
            kept.add(Hive5.text(message));
        }
        assertThat(kept).containsExactlyInAnyOrderElementsOf(sent);
    }
}
