package io.ringmq.transport;

import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.common.MqttMessage;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --check-retain-source} (Mosquitto's {@code check_retain_source}, CVE-2018-12546), with Paho 3.1.1 and 5.0
 * clients: a retained message goes out to a new subscription only while its publisher may still write its topic
 * under the ACL file in force, after a reload and after a restart on RocksDB; a retained will is judged by its
 * client's rules; and a retained message stored by a build before, which names no publisher, goes out as before.
 * What a subscriber did not get is shown by a marker published after its SUBSCRIBE: the broker keeps the order, so
 * anything the SUBSCRIBE brought has arrived when the marker does.
 */
class RetainSourceTest extends RetainSourceHarness
{
    @Test
    @Timeout(60)
    @DisplayName("CVE-2018-12546: a retained message whose publisher may no longer write its topic is not sent to a "
        + "new subscription after a reload, and goes out again when a reload gives the right back")
    void revokedPublisherRetainedNotSent() throws Exception
    {
        launch(context(WRITABLE));
        final Paho publisher = paho("pub", null);
        publisher.publish("test/topic", "retained message", 0, true);
        publisher.close(); // gone, as in Mosquitto's test: the source is what the message keeps, not a connection
        assertThat(retainedOnSubscribe("test/topic", "s1")).containsExactly("retained message");

        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("test/topic", "s2")).isEmpty();
        assertThat(refused()).isEqualTo(1);

        reload(WRITABLE);
        assertThat(retainedOnSubscribe("test/topic", "s3")).as("kept, and sent once its source may write again")
            .containsExactly("retained message");
    }

    @Test
    @Timeout(60)
    @DisplayName("under a wide filter each retained message is judged by its own publisher: alice's, whose right "
        + "is gone, stays back; a device's under its %c pattern goes out")
    void eachMessageJudgedByItsOwnPublisher() throws Exception
    {
        launch(context(WRITABLE));
        final Paho alice = paho("a1", "alice");
        alice.publish("alice/status", "alice's", 1, true);
        final Paho device = paho("d7", null);
        device.publish("devices/d7/state", "d7's", 1, true);
        final Paho other = paho("d8", null);
        other.publish("devices/d7/state", "d8's: refused at publish", 1, true); // not its %c: never retained
        assertThat(retainedOnSubscribe("#", "s1")).containsExactlyInAnyOrder("alice's", "d7's");

        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("#", "s2")).containsExactly("d7's");
        assertThat(refused()).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    @DisplayName("with --check-retain-source false a retained message goes out whatever its publisher may do now")
    void checkOff() throws Exception
    {
        launch(context(WRITABLE).auth(a -> a.checkRetainSource(false)));
        paho("pub", null).publish("test/topic", "retained message", 1, true);
        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("test/topic", "s1")).containsExactly("retained message");
        assertThat(refused()).isZero();
    }

    @Test
    @Timeout(60)
    @DisplayName("a retained will keeps its client as its source: once a reload takes the client's right to its "
        + "topic away, the will retained before is not sent to a new subscription")
    void retainedWillJudgedByItsClient() throws Exception
    {
        launch(context(WRITABLE));
        final Paho5 client = closeLater(new Paho5(broker.port(), "w1"));
        final MqttConnectionOptions options = Paho5.options();
        final MqttMessage will = new MqttMessage("gone".getBytes(StandardCharsets.UTF_8), 1, true, null);
        options.setWill("test/will", will);
        client.client.connect(options).waitForCompletion(10_000);
        final Paho5 watcher = closeLater(Paho5.connect(broker.port(), "watch"));
        assertThat(watcher.subscribe(new MqttSubscription("test/will", 1), 0)).containsExactly(1);
        client.client.disconnectForcibly(0, 0, false); // no DISCONNECT: the will goes out
        assertThat(watcher.next().payload()).isEqualTo("gone");
        assertThat(retainedOnSubscribe("test/will", "s1")).containsExactly("gone");

        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("test/will", "s2")).isEmpty();
    }

    @Test
    @Timeout(90)
    @DisplayName("the source is stored with the retained message: after a restart under an ACL file that took "
        + "alice's right away, her retained message is not sent; one an anonymous client may still write is")
    void sourceSurvivesARestart() throws Exception
    {
        launch(persistent(WRITABLE));
        paho("a1", "alice").publish("alice/status", "alice's", 1, true);
        paho("d7", null).publish("devices/d7/state", "d7's", 1, true);
        assertThat(retainedOnSubscribe("#", "s1")).containsExactlyInAnyOrder("alice's", "d7's");
        broker.close();

        launch(persistent(READ_ONLY));
        assertThat(retainedOnSubscribe("#", "s2")).containsExactly("d7's");
        assertThat(refused()).isEqualTo(1);
        broker.close();

        launch(persistent(WRITABLE));
        assertThat(retainedOnSubscribe("#", "s3")).containsExactlyInAnyOrder("alice's", "d7's");
    }

    @Test
    @Timeout(90)
    @DisplayName("a retained message stored by a build before, which names no publisher, goes out as it did (as "
        + "Mosquitto sends one without a source)")
    void recordOfABuildBeforeHasNoSource() throws Exception
    {
        launch(persistent(WRITABLE));
        paho("a1", "alice").publish("alice/status", "alice's", 1, true);
        broker.close();
        assertThat(SessionRecords.dropRetainedSources(directory.resolve("data"))).isEqualTo(1);

        launch(persistent(READ_ONLY));
        assertThat(retainedOnSubscribe("#", "s1")).containsExactly("alice's");
        assertThat(refused()).isZero();
    }
}
