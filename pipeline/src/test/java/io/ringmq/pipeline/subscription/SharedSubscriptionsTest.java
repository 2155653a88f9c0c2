package io.ringmq.pipeline.subscription;

import io.ringmq.pipeline.LimitSettings;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SharedSubscriptionsTest
{
    private static final long SEED = 0x5EED_0482L;

    /** A session as the strategies see it. */
    private static final class Member
    {
        final String name;
        final int hash;
        boolean online = true;
        int freeWindow;

        Member(final String name)
        {
            this.name = name;
            this.hash = name.hashCode();
        }

        public String toString()
        {
            return name;
        }
    }

    private static final SharedSubscriptions.Chooser<Member> CHOOSER = new SharedSubscriptions.Chooser<>()
    {
        public boolean isOnline(final Member member)
        {
            return member.online;
        }

        public int freeWindow(final Member member)
        {
            return member.freeWindow;
        }

        public int clientHash(final Member member)
        {
            return member.hash;
        }
    };

    /** One delivery: who, with which options and subscription identifier. */
    private record Delivery(String member, int options, int subscriptionId)
    {
    }

    static List<String> strategies()
    {
        return LimitSettings.SHARED_STRATEGIES;
    }

    private static SharedSubscriptions<Member> shared(final String strategy)
    {
        return new SharedSubscriptions<>(strategy, SEED);
    }

    private static Member[] join(final SharedSubscriptions<Member> shared, final String shareName,
        final String filter, final String... names)
    {
        final Member[] members = new Member[names.length];
        for (int i = 0; i < names.length; i++)
        {
            members[i] = new Member(names[i]);
            assertThat(shared.subscribe(shareName, filter, members[i], 1, 0)).isTrue();
        }
        return members;
    }

    private static List<Delivery> deliver(final SharedSubscriptions<Member> shared, final String topic,
        final int publisherHash)
    {
        final List<Delivery> deliveries = new ArrayList<>();
        final UnsafeBuffer buffer = SubscriptionIndex.bufferOf(topic);
        shared.match(buffer, 0, buffer.capacity(), publisherHash, CHOOSER,
            (member, options, subscriptionId) -> deliveries.add(new Delivery(member.name, options, subscriptionId)));
        return deliveries;
    }

    /**
     * @return the one member each of {@code count} messages on {@code topic} went to.
     */
    private static List<String> send(final SharedSubscriptions<Member> shared, final String topic, final int count)
    {
        final List<String> chosen = new ArrayList<>();
        for (int i = 0; i < count; i++)
        {
            final List<Delivery> deliveries = deliver(shared, topic, 0);
            assertThat(deliveries).hasSize(1);
            chosen.add(deliveries.get(0).member());
        }
        return chosen;
    }

    private static Map<String, Integer> tally(final List<String> chosen)
    {
        final Map<String, Integer> counts = new HashMap<>();
        for (final String name : chosen)
        {
            counts.merge(name, 1, Integer::sum);
        }
        return counts;
    }

    @Test
    @DisplayName("every configured strategy exists, and no other name does")
    void strategyNames()
    {
        for (final String name : LimitSettings.SHARED_STRATEGIES)
        {
            assertThat(new SharedSubscriptions<Member>(name).strategy()).isEqualTo(name);
        }
        assertThatThrownBy(() -> new SharedSubscriptions<Member>("fastest"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("round-robin");
    }

    @Test
    @DisplayName("MQTT-4.8.2-1, MQTT-4.8.2-2: $share/{ShareName}/{filter} splits at the first '/' after the prefix")
    void parsesSharedFilters()
    {
        assertThat(SharedSubscriptions.isShared("$share/workers/jobs/+")).isTrue();
        assertThat(SharedSubscriptions.isShared("$SYS/#")).isFalse();
        assertThat(SharedSubscriptions.isShared("share/workers/jobs")).isFalse();
        assertThat(SharedSubscriptions.shareName("$share/workers/jobs/+")).isEqualTo("workers");
        assertThat(SharedSubscriptions.filterOf("$share/workers/jobs/+")).isEqualTo("jobs/+");
        assertThat(SharedSubscriptions.filterOf("$share/g//a")).isEqualTo("/a");
        assertThat(SharedSubscriptions.filterOf("$share/g/$SYS/#")).isEqualTo("$SYS/#");
    }

    @Test
    @DisplayName("section 4.8.2: round-robin gives each member exactly its turn")
    void roundRobinIsExact()
    {
        final SharedSubscriptions<Member> shared = shared("round-robin");
        join(shared, "g", "jobs", "a", "b", "c");
        final List<String> chosen = send(shared, "jobs", 300);
        assertThat(chosen.subList(0, 6)).containsExactly("a", "b", "c", "a", "b", "c");
        assertThat(tally(chosen)).containsOnly(Map.entry("a", 100), Map.entry("b", 100), Map.entry("c", 100));
    }

    @Test
    @DisplayName("round-robin: a member leaving does not skip the one whose turn is next")
    void roundRobinKeepsItsPlaceWhenAMemberLeaves()
    {
        final SharedSubscriptions<Member> shared = shared("round-robin");
        final Member[] members = join(shared, "g", "jobs", "a", "b", "c", "d");
        assertThat(send(shared, "jobs", 2)).containsExactly("a", "b");
        shared.unsubscribe("g", "jobs", members[0]);
        assertThat(send(shared, "jobs", 4)).containsExactly("c", "d", "b", "c");
        shared.unsubscribe("g", "jobs", members[3]); // the member whose turn is next leaves
        assertThat(send(shared, "jobs", 3)).containsExactly("b", "c", "b");
    }

    @Test
    @DisplayName("random: roughly uniform, and repeatable from a seed")
    void randomIsRoughlyUniform()
    {
        final SharedSubscriptions<Member> shared = shared("random");
        join(shared, "g", "jobs", "a", "b", "c", "d");
        final List<String> chosen = send(shared, "jobs", 40_000);
        assertThat(tally(chosen)).hasSize(4).allSatisfy((name, count) -> assertThat(count).isBetween(9_500, 10_500));

        final SharedSubscriptions<Member> again = shared("random");
        join(again, "g", "jobs", "a", "b", "c", "d");
        assertThat(send(again, "jobs", 1_000)).isEqualTo(chosen.subList(0, 1_000));
    }

    @Test
    @DisplayName("sticky: the same member until it goes offline or leaves")
    void stickyStays()
    {
        final SharedSubscriptions<Member> shared = shared("sticky");
        final Member[] members = join(shared, "g", "jobs", "a", "b", "c");
        assertThat(tally(send(shared, "jobs", 100))).containsOnly(Map.entry("a", 100));
        members[0].online = false;
        assertThat(tally(send(shared, "jobs", 100))).containsOnly(Map.entry("b", 100));
        members[0].online = true; // back, but b keeps the group
        assertThat(tally(send(shared, "jobs", 100))).containsOnly(Map.entry("b", 100));
        shared.unsubscribe("g", "jobs", members[1]);
        assertThat(tally(send(shared, "jobs", 100))).containsOnly(Map.entry("c", 100));
        shared.unsubscribe("g", "jobs", members[0]); // one before the sticky member leaves: c stays
        assertThat(tally(send(shared, "jobs", 100))).containsOnly(Map.entry("c", 100));
    }

    @Test
    @DisplayName("hash-client: one publisher always reaches the same member; publishers spread over members")
    void hashClientIsStablePerPublisher()
    {
        final SharedSubscriptions<Member> shared = shared("hash-client");
        final Member[] members = join(shared, "g", "jobs/+", "a", "b", "c", "d", "e");
        final String[] before = new String[1_000];
        for (int publisher = 0; publisher < before.length; publisher++)
        {
            before[publisher] = deliver(shared, "jobs/" + publisher, publisher).get(0).member();
            assertThat(deliver(shared, "jobs/other", publisher).get(0).member()).isEqualTo(before[publisher]);
        }
        assertThat(tally(List.of(before))).hasSize(5).allSatisfy((name, count) -> assertThat(count).isGreaterThan(120));

        // rendezvous hashing: only the publishers of the member that goes away move
        members[2].online = false;
        for (int publisher = 0; publisher < before.length; publisher++)
        {
            final String after = deliver(shared, "jobs/x", publisher).get(0).member();
            if (before[publisher].equals("c"))
            {
                assertThat(after).isNotEqualTo("c");
            }
            else
            {
                assertThat(after).isEqualTo(before[publisher]);
            }
        }
    }

    @Test
    @DisplayName("hash-topic: one topic always reaches the same member, whoever publishes; topics spread")
    void hashTopicIsStablePerTopic()
    {
        final SharedSubscriptions<Member> shared = shared("hash-topic");
        join(shared, "g", "sensors/#", "a", "b", "c", "d");
        final List<String> chosen = new ArrayList<>();
        for (int topic = 0; topic < 1_000; topic++)
        {
            final String name = deliver(shared, "sensors/" + topic, 1).get(0).member();
            for (int publisher = 2; publisher < 5; publisher++)
            {
                assertThat(deliver(shared, "sensors/" + topic, publisher).get(0).member()).isEqualTo(name);
            }
            chosen.add(name);
        }
        assertThat(tally(chosen)).hasSize(4).allSatisfy((name, count) -> assertThat(count).isGreaterThan(150));
    }

    @Test
    @DisplayName("least-loaded: the member with the most free window; ties rotate")
    void leastLoadedPicksTheLargestFreeWindow()
    {
        final SharedSubscriptions<Member> shared = shared("least-loaded");
        final Member[] members = join(shared, "g", "jobs", "a", "b", "c", "d");
        members[0].freeWindow = 3;
        members[1].freeWindow = 9;
        members[2].freeWindow = 1;
        members[3].freeWindow = 9;
        assertThat(send(shared, "jobs", 4)).containsExactly("b", "d", "b", "d");
        members[2].freeWindow = 10;
        assertThat(send(shared, "jobs", 2)).containsExactly("c", "c");
        members[2].online = false; // the most room, but offline
        members[1].freeWindow = 2;
        assertThat(send(shared, "jobs", 2)).containsExactly("d", "d");
    }

    @ParameterizedTest
    @MethodSource("strategies")
    @DisplayName("section 4.8.2: an offline member is never chosen while an online one exists")
    void offlineMembersAreSkipped(final String strategy)
    {
        final SharedSubscriptions<Member> shared = shared(strategy);
        final Member[] members = join(shared, "g", "jobs", "a", "b", "c", "d");
        members[0].online = false;
        members[2].online = false;
        members[0].freeWindow = 100;
        members[1].freeWindow = 5;
        members[3].freeWindow = 5;
        for (int i = 0; i < 200; i++)
        {
            final List<Delivery> deliveries = deliver(shared, "jobs", i);
            assertThat(deliveries).hasSize(1);
            assertThat(deliveries.get(0).member()).isIn("b", "d");
        }
        members[3].online = false;
        assertThat(tally(send(shared, "jobs", 50))).containsOnly(Map.entry("b", 50));
    }

    @ParameterizedTest
    @MethodSource("strategies")
    @DisplayName("MQTT-4.8.2-4: with every member offline, one is still chosen, to hold the message until it returns")
    void allOfflineStillChoosesOne(final String strategy)
    {
        final SharedSubscriptions<Member> shared = shared(strategy);
        final Member[] members = join(shared, "g", "jobs", "a", "b", "c");
        for (final Member member : members)
        {
            member.online = false;
        }
        for (int i = 0; i < 100; i++)
        {
            final List<Delivery> deliveries = deliver(shared, "jobs", i);
            assertThat(deliveries).hasSize(1);
            assertThat(deliveries.get(0).member()).isIn("a", "b", "c");
        }
    }

    @Test
    @DisplayName("round-robin with every member offline rotates over all of them")
    void allOfflineRoundRobinRotates()
    {
        final SharedSubscriptions<Member> shared = shared("round-robin");
        for (final Member member : join(shared, "g", "jobs", "a", "b", "c"))
        {
            member.online = false;
        }
        assertThat(send(shared, "jobs", 6)).containsExactly("a", "b", "c", "a", "b", "c");
    }

    @ParameterizedTest
    @MethodSource("strategies")
    @DisplayName("section 4.8.2: one member of every matching group, with its options and subscription identifier")
    void oneMemberPerMatchingGroup(final String strategy)
    {
        final SharedSubscriptions<Member> shared = shared(strategy);
        join(shared, "exact", "plant/line1/temp", "e1", "e2");
        join(shared, "plus", "plant/+/temp", "p1", "p2", "p3");
        join(shared, "hash", "plant/#", "h1");
        join(shared, "other", "plant/line1/temp", "o1", "o2"); // the same filter under another ShareName
        join(shared, "miss", "plant/line2/temp", "m1");
        for (int i = 0; i < 50; i++)
        {
            final List<Delivery> deliveries = deliver(shared, "plant/line1/temp", i);
            assertThat(deliveries).hasSize(4);
            assertThat(deliveries).extracting(d -> d.member().charAt(0)).containsExactlyInAnyOrder('e', 'p', 'h', 'o');
        }
        assertThat(shared.groupCount()).isEqualTo(5);
        assertThat(shared.size()).isEqualTo(9);
    }

    @Test
    @DisplayName("a session in two matching groups gets a copy from each, with each subscription's options and id")
    void sameSessionInTwoGroups()
    {
        final SharedSubscriptions<Member> shared = shared("round-robin");
        final Member session = new Member("s");
        shared.subscribe("g1", "a/+", session, 1, 11);
        shared.subscribe("g2", "a/#", session, 2, 22);
        assertThat(deliver(shared, "a/b", 0)).containsExactlyInAnyOrder(new Delivery("s", 1, 11),
            new Delivery("s", 2, 22));
        assertThat(shared.size()).isEqualTo(2);
    }

    @Test
    @DisplayName("MQTT-4.7.1-2, MQTT-4.7.1-3: wildcard filters in groups")
    void wildcardFilters()
    {
        final SharedSubscriptions<Member> shared = shared("round-robin");
        join(shared, "g", "sensors/+/temp", "plus");
        join(shared, "g", "sensors/#", "hash");
        join(shared, "g", "+", "root");
        assertThat(deliver(shared, "sensors/7/temp", 0)).extracting(Delivery::member)
            .containsExactlyInAnyOrder("plus", "hash");
        assertThat(deliver(shared, "sensors", 0)).extracting(Delivery::member)
            .containsExactlyInAnyOrder("hash", "root"); // "sensors/#" also matches its parent level
        assertThat(deliver(shared, "sensors/7/humidity", 0)).extracting(Delivery::member).containsExactly("hash");
        assertThat(deliver(shared, "other/7/temp", 0)).isEmpty();
    }

    @Test
    @DisplayName("MQTT-4.7.2-1: a group on '#' or '+/...' does not see '$' topics; a group on '$SYS/#' does")
    void dollarTopics()
    {
        final SharedSubscriptions<Member> shared = shared("round-robin");
        join(shared, "all", "#", "all");
        join(shared, "plus", "+/broker/load", "plus");
        join(shared, "sys", "$SYS/#", "sys1", "sys2");
        assertThat(deliver(shared, "$SYS/broker/load", 0)).extracting(Delivery::member).containsExactly("sys1");
        assertThat(deliver(shared, "$SYS/broker/load", 0)).extracting(Delivery::member).containsExactly("sys2");
        assertThat(deliver(shared, "x/broker/load", 0)).extracting(Delivery::member)
            .containsExactlyInAnyOrder("all", "plus");
    }

    @Test
    @DisplayName("subscribing again replaces options and id; the last member leaving removes the group")
    void resubscribeAndUnsubscribe()
    {
        final SharedSubscriptions<Member> shared = shared("round-robin");
        final Member a = new Member("a");
        final Member b = new Member("b");
        assertThat(shared.subscribe("g", "jobs", a, 0, 5)).isTrue();
        assertThat(shared.subscribe("g", "jobs", b, 0, 0)).isTrue();
        assertThat(shared.subscribe("g", "jobs", a, 2, 7)).isFalse();
        assertThat(shared.size()).isEqualTo(2);
        assertThat(deliver(shared, "jobs", 0)).containsExactly(new Delivery("a", 2, 7));

        assertThat(shared.unsubscribe("g", "jobs", a)).isTrue();
        assertThat(shared.unsubscribe("g", "jobs", a)).isFalse();
        assertThat(shared.unsubscribe("h", "jobs", b)).isFalse();
        assertThat(shared.unsubscribe("g", "other", b)).isFalse();
        assertThat(shared.group("g", "jobs").memberCount()).isEqualTo(1);
        assertThat(shared.unsubscribe("g", "jobs", b)).isTrue();
        assertThat(shared.group("g", "jobs")).isNull();
        assertThat(shared.groupCount()).isZero();
        assertThat(shared.size()).isZero();
        assertThat(deliver(shared, "jobs", 0)).isEmpty();

        assertThat(shared.subscribe("g", "jobs", b, 1, 0)).isTrue(); // the group comes back with a new member
        assertThat(deliver(shared, "jobs", 0)).containsExactly(new Delivery("b", 1, 0));
    }

    @Test
    @DisplayName("a matcher may match again; the outer match carries on with its own chooser and matcher")
    void reentrantMatch()
    {
        final SharedSubscriptions<Member> shared = shared("hash-client");
        join(shared, "g", "a/+", "x", "y", "z");
        join(shared, "h", "a/#", "w");
        final List<String> outer = new ArrayList<>();
        final List<String> inner = new ArrayList<>();
        final UnsafeBuffer topic = SubscriptionIndex.bufferOf("a/b");
        final String expected = chosenInG(shared, 42);
        int innerHash = 0;
        while (chosenInG(shared, innerHash).equals(expected))
        {
            innerHash++; // a publisher the inner match would send elsewhere, so a leaked hash would show
        }
        final int otherPublisher = innerHash;
        // "a/#" is matched before "a/+", so the nested match runs before the outer one chooses in group g
        shared.match(topic, 0, 3, 42, CHOOSER, (member, options, id) ->
        {
            outer.add(member.name);
            shared.match(topic, 0, 3, otherPublisher, CHOOSER, (m, o, i) -> inner.add(m.name));
        });
        assertThat(outer).containsExactlyInAnyOrder(expected, "w");
        assertThat(inner).hasSize(4);
    }

    private static String chosenInG(final SharedSubscriptions<Member> shared, final int publisherHash)
    {
        return deliver(shared, "a/b", publisherHash).stream()
            .map(Delivery::member).filter(m -> !m.equals("w")).findFirst().orElseThrow();
    }

    @Test
    @Timeout(60)
    @DisplayName("10,000 groups of 10 members: one delivery per matching group, set up and torn down in bounded time")
    void tenThousandGroups()
    {
        final SharedSubscriptions<Member> shared = shared("round-robin");
        final Member[] members = new Member[100_000];
        for (int i = 0; i < members.length; i++)
        {
            members[i] = new Member("m" + i);
            shared.subscribe("workers", "devices/" + (i / 10) + "/telemetry", members[i], 1, 0);
        }
        join(shared, "all", "devices/+/telemetry", "all1", "all2");
        assertThat(shared.groupCount()).isEqualTo(10_001);
        assertThat(shared.size()).isEqualTo(100_002);

        final long start = System.nanoTime();
        for (int group = 0; group < 10_000; group++)
        {
            final List<Delivery> deliveries = deliver(shared, "devices/" + group + "/telemetry", group);
            assertThat(deliveries).hasSize(2);
            final int expectedGroup = group;
            assertThat(deliveries).extracting(Delivery::member)
                .anyMatch(name -> name.startsWith("all"))
                .anyMatch(name -> name.startsWith("m") && Integer.parseInt(name.substring(1)) / 10 == expectedGroup);
        }
        assertThat(System.nanoTime() - start).isLessThan(20_000_000_000L);

        final Map<String, Integer> group77 = new HashMap<>();
        for (int i = 0; i < 100; i++)
        {
            for (final Delivery delivery : deliver(shared, "devices/77/telemetry", i))
            {
                group77.merge(delivery.member(), 1, Integer::sum);
            }
        }
        for (int i = 770; i < 780; i++)
        {
            assertThat(group77).containsEntry("m" + i, 10); // round-robin: each of the ten members ten times
        }

        for (int i = 0; i < members.length; i++)
        {
            assertThat(shared.unsubscribe("workers", "devices/" + (i / 10) + "/telemetry", members[i])).isTrue();
        }
        assertThat(shared.groupCount()).isEqualTo(1);
        assertThat(shared.size()).isEqualTo(2);
    }

    @ParameterizedTest
    @MethodSource("strategies")
    @DisplayName("matching and choosing allocate nothing in steady state")
    void matchAllocatesNothing(final String strategy)
    {
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        final SharedSubscriptions<Member> shared = shared(strategy);
        final Member[] members = join(shared, "g", "sport/tennis/+", "a", "b", "c", "d");
        join(shared, "h", "sport/#", "e", "f");
        join(shared, "i", "+/+/player1", "g");
        members[1].online = false;
        members[2].freeWindow = 4;
        final UnsafeBuffer topic = SubscriptionIndex.bufferOf("sport/tennis/player1");
        final int[] count = new int[1];
        final SharedSubscriptions.Matcher<Member> matcher = (member, options, subscriptionId) -> count[0]++;
        for (int i = 0; i < 20_000; i++)
        {
            shared.match(topic, 0, topic.capacity(), i, CHOOSER, matcher);
        }
        final long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 100_000; i++)
        {
            shared.match(topic, 0, topic.capacity(), i, CHOOSER, matcher);
        }
        final long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertThat(count[0]).isEqualTo(120_000 * 3);
        // 100,000 matches: even one object per match would be over a megabyte; allow the probe's own noise
        assertThat(allocated).isLessThan(10_000);
    }
}
