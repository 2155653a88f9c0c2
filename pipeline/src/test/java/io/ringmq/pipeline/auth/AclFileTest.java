package io.ringmq.pipeline.auth;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Mosquitto's acl_file format as {@link AclFile} reads it, the checks a client's compiled rules make, and files
 * that are malformed, huge or hostile.
 */
class AclFileTest
{
    @TempDir
    Path directory;

    private static boolean write(final ClientAcl acl, final String topic)
    {
        final byte[] bytes = topic.getBytes(StandardCharsets.UTF_8);
        return acl.canWrite(new UnsafeBuffer(bytes), 0, bytes.length);
    }

    private static boolean read(final ClientAcl acl, final String topic)
    {
        final byte[] bytes = topic.getBytes(StandardCharsets.UTF_8);
        return acl.canRead(new UnsafeBuffer(bytes), 0, bytes.length);
    }

    @Test
    @DisplayName("the anonymous section, user sections, access words (none: readwrite), comments and blank lines")
    void sections()
    {
        final AclFile file = AclFile.parse("acl", String.join("\n",
            "# a comment",
            "   # an indented comment",
            "",
            "topic read public/#",
            "user alice",
            "\ttopic   write   alice/out  ",
            "topic alice/both",
            "user bob",
            "topic readwrite bob/#",
            "user alice",
            "topic read shared/news"));
        final ClientAcl anonymous = file.forClient(null, "c");
        assertThat(read(anonymous, "public/x")).isTrue();
        assertThat(write(anonymous, "public/x")).isFalse();
        assertThat(read(anonymous, "alice/both")).isFalse();

        final ClientAcl alice = file.forClient("alice", "c");
        assertThat(write(alice, "alice/out")).isTrue();
        assertThat(read(alice, "alice/out")).isFalse();
        assertThat(read(alice, "alice/both")).isTrue();
        assertThat(write(alice, "alice/both")).isTrue();
        assertThat(read(alice, "shared/news")).as("a user named twice has both sections").isTrue();
        assertThat(read(alice, "public/x")).as("the anonymous section is not a user's").isFalse();

        final ClientAcl stranger = file.forClient("mallory", "c");
        assertThat(read(stranger, "public/x")).isFalse();
        assertThat(write(stranger, "bob/x")).isFalse();
        assertThat(file.userCount()).isEqualTo(2);
    }

    @Test
    @DisplayName("pattern with %u and %c; a pattern with %u does not match a client without a user name")
    void patterns()
    {
        final AclFile file = AclFile.parse("acl", String.join("\n",
            "pattern readwrite users/%u/#",
            "pattern write devices/%c/status",
            "pattern read both/%u/%c"));
        final ClientAcl alice = file.forClient("alice", "dev1");
        assertThat(write(alice, "users/alice/x")).isTrue();
        assertThat(write(alice, "users/bob/x")).isFalse();
        assertThat(write(alice, "devices/dev1/status")).isTrue();
        assertThat(write(alice, "devices/dev2/status")).isFalse();
        assertThat(read(alice, "both/alice/dev1")).isTrue();

        final ClientAcl anonymous = file.forClient(null, "dev2");
        assertThat(write(anonymous, "users/%u/x")).isFalse();
        assertThat(write(anonymous, "users//x")).isFalse();
        assertThat(write(anonymous, "devices/dev2/status")).isTrue();
        assertThat(read(anonymous, "both//dev2")).isFalse();
    }

    @Test
    @DisplayName("with patterns in the file, a user name or client id with + or # gets nothing: a pattern would widen " +
        "its grants, and its user's grants must not pass a pattern's deny, as Mosquitto denies it")
    void dangerousNames()
    {
        final AclFile file = AclFile.parse("acl", "pattern readwrite users/%u/#\npattern readwrite c/%c");
        assertThat(write(file.forClient("#", "c1"), "users/anything/x")).isFalse();
        assertThat(write(file.forClient("+", "c1"), "users/x/y")).isFalse();
        assertThat(write(file.forClient("ok", "+"), "c/x")).isFalse();
        assertThat(write(file.forClient("ok", "c1"), "c/c1")).isTrue();

        final AclFile denying = AclFile.parse("acl", String.join("\n",
            "user alice",
            "topic read sensors/#",
            "user bob",
            "topic readwrite sensors/#",
            "pattern deny sensors/+/private/#"));
        assertThat(write(denying.forClient("bob", "bob1"), "sensors/d1/private/key")).isFalse();
        assertThat(write(denying.forClient("bob", "bob1"), "sensors/d1/temp")).isTrue();
        assertThat(write(denying.forClient("bob", "bob+"), "sensors/d1/private/key"))
            .as("the pattern's deny holds for a client id with +").isFalse();
        assertThat(read(denying.forClient("alice", "alice#"), "sensors/d1/private/key")).isFalse();
        assertThat(read(denying.forClient("alice", "alice#"), "sensors/d1/temp")).as("nothing at all").isFalse();
        assertThat(write(denying.forClient("b+", "bob1"), "sensors/d1/temp")).isFalse();
    }

    @Test
    @DisplayName("deny wins over any grant, whatever the order: a user's, the anonymous section's, a pattern's")
    void denyWins()
    {
        final AclFile file = AclFile.parse("acl", String.join("\n",
            "topic readwrite #",
            "topic deny secret/#",
            "user alice",
            "topic readwrite #",
            "topic deny a/private",
            "pattern deny users/%u/locked",
            "user bob",
            "topic readwrite users/#"));
        assertThat(read(file.forClient(null, "c"), "secret/x")).isFalse();
        assertThat(read(file.forClient(null, "c"), "open")).isTrue();
        assertThat(write(file.forClient("alice", "c"), "a/private")).isFalse();
        assertThat(write(file.forClient("alice", "c"), "a/public")).isTrue();
        assertThat(write(file.forClient("bob", "c"), "users/bob/locked"))
            .as("a pattern's deny beats a user's grant (Mosquitto would let the grant win)").isFalse();
        assertThat(write(file.forClient("bob", "c"), "users/bob/open")).isTrue();
    }

    @Test
    @DisplayName("$ topics: # and + do not match them [MQTT-4.7.2-1]; only a rule that starts with $ does")
    void dollarTopics()
    {
        final AclFile file = AclFile.parse("acl", "topic readwrite #\ntopic read +/x\nuser admin\ntopic write $SYS/#");
        assertThat(read(file.forClient(null, "c"), "$SYS/broker/uptime")).isFalse();
        assertThat(read(file.forClient(null, "c"), "$SYS/x")).isFalse();
        assertThat(write(file.forClient("admin", "c"), "$SYS/broker/x")).isTrue();
        assertThat(ClientAcl.OPEN.canWrite(new UnsafeBuffer("$SYS/x".getBytes()), 0, 6)).isFalse();
        assertThat(ClientAcl.OPEN.canWrite(new UnsafeBuffer("$SYSTEM".getBytes()), 0, 7)).isTrue();
        assertThat(read(ClientAcl.OPEN, "$SYS/x")).isTrue();
    }

    @Test
    @DisplayName("a subscription's filter: wholly readable, partly (checked per message), or not at all (refused)")
    void classify()
    {
        final AclFile file = AclFile.parse("acl", String.join("\n",
            "topic read a/#",
            "topic read b/+/c",
            "topic deny a/secret/#",
            "topic read x/y"));
        final ClientAcl acl = file.forClient(null, "c");
        assertThat(acl.classify("b/1/c")).isEqualTo(ClientAcl.FULL);
        assertThat(acl.classify("b/+/c")).isEqualTo(ClientAcl.FULL);
        assertThat(acl.classify("x/y")).isEqualTo(ClientAcl.FULL);
        assertThat(acl.classify("a/public/x")).isEqualTo(ClientAcl.FULL);
        assertThat(acl.classify("a/#")).as("a deny inside it").isEqualTo(ClientAcl.PARTIAL);
        assertThat(acl.classify("#")).isEqualTo(ClientAcl.PARTIAL);
        assertThat(acl.classify("+/+/c")).isEqualTo(ClientAcl.PARTIAL);
        assertThat(acl.classify("b/#")).isEqualTo(ClientAcl.PARTIAL);
        assertThat(acl.classify("a/secret/#")).isEqualTo(ClientAcl.DENIED);
        assertThat(acl.classify("a/secret/x")).isEqualTo(ClientAcl.DENIED);
        assertThat(acl.classify("c/#")).isEqualTo(ClientAcl.DENIED);
        assertThat(acl.classify("x/y/z")).isEqualTo(ClientAcl.DENIED);
        assertThat(acl.classify("$SYS/#")).isEqualTo(ClientAcl.DENIED);
        assertThat(ClientAcl.OPEN.classify("#")).isEqualTo(ClientAcl.FULL);
        assertThat(ClientAcl.NOTHING.classify("#")).isEqualTo(ClientAcl.DENIED);
    }

    @Test
    @DisplayName("the matcher agrees with a naive reference on seeded random topics and filters")
    void matcherAgreesWithReference()
    {
        final Random random = new Random(42);
        final String[] levels = {"a", "b", "", "$SYS", "+", "#", "ab"};
        for (int i = 0; i < 20_000; i++)
        {
            final String filter = randomName(random, levels, true);
            final String topic = randomName(random, levels, false);
            if (null != AclMatch.invalid(filter) || topic.contains("+") || topic.contains("#"))
            {
                continue;
            }
            final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
            assertThat(AclMatch.matches(filter.getBytes(StandardCharsets.UTF_8), new UnsafeBuffer(t), 0, t.length))
                .as("%s matches %s", filter, topic).isEqualTo(reference(filter, topic));
        }
    }

    private static String randomName(final Random random, final String[] levels, final boolean wildcards)
    {
        final StringBuilder name = new StringBuilder();
        final int count = 1 + random.nextInt(4);
        for (int i = 0; i < count; i++)
        {
            name.append(i == 0 ? "" : "/");
            String level = levels[random.nextInt(levels.length)];
            if (!wildcards && (level.equals("+") || level.equals("#")))
            {
                level = "w";
            }
            name.append(level);
        }
        return name.toString();
    }

    private static boolean reference(final String filter, final String topic)
    {
        final String[] f = filter.split("/", -1);
        final String[] t = topic.split("/", -1);
        if (topic.startsWith("$") && (f[0].equals("+") || f[0].equals("#")))
        {
            return false;
        }
        for (int i = 0; i < f.length; i++)
        {
            if (f[i].equals("#"))
            {
                return true;
            }
            if (i >= t.length || (!f[i].equals("+") && !f[i].equals(t[i])))
            {
                return false;
            }
        }
        return f.length == t.length;
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "topic", "pattern", "user", "user   ", "topic bogus a/b", "topic READ a/b", "subscribe a/b",
        "topic read a/#/b", "topic read a/b#", "topic read a+/b", "topic read +a", "topic a/b/##", "pattern deny #/x",
        "topic read a\u0000b", "users alice"})
    @DisplayName("a malformed line is an error naming the file and the line")
    void malformed(final String line)
    {
        assertThatThrownBy(() -> AclFile.parse("my.acl", "# first\ntopic read ok\n" + line + "\ntopic x"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageStartingWith("my.acl line 3: ");
    }

    @Test
    @DisplayName("a huge line is refused before it is buffered, naming the line; a topic over 65,535 bytes too")
    void hugeLines()
    {
        final String huge = "topic read " + "a".repeat(5_000_000);
        assertThatThrownBy(() -> AclFile.parse("big.acl", "\n" + huge))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("big.acl line 2: line longer than");
        assertThatThrownBy(() -> AclFile.parse("big.acl", "topic read " + "é".repeat(40_000)))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("65535 bytes");
    }

    @Test
    @DisplayName("deep topics: a rule of 30,000 levels loads and matches")
    void deepTopics()
    {
        final String deep = "a/".repeat(30_000) + "#";
        final AclFile file = AclFile.parse("deep.acl", "topic read " + deep);
        final ClientAcl acl = file.forClient(null, "c");
        assertThat(read(acl, "a/".repeat(30_000) + "b")).isTrue();
        assertThat(read(acl, "a/".repeat(29_999) + "b")).isFalse();
        assertThat(acl.classify("a/".repeat(30_000) + "+")).isEqualTo(ClientAcl.FULL);
    }

    @Test
    @DisplayName("10,000 users and 100,000 rules load fast, and a check costs the same for the first and last user")
    void largeFile() throws Exception
    {
        final StringBuilder text = new StringBuilder();
        for (int u = 0; u < 10_000; u++)
        {
            text.append("user user").append(u).append('\n');
            for (int r = 0; r < 10; r++)
            {
                text.append("topic readwrite site/").append(u).append("/room").append(r).append("/#\n");
            }
        }
        final Path path = directory.resolve("large.acl");
        Files.writeString(path, text);
        final long startNs = System.nanoTime();
        final AclFile file = AclFile.load(path);
        final long loadMs = (System.nanoTime() - startNs) / 1_000_000;
        assertThat(file.userCount()).isEqualTo(10_000);
        assertThat(loadMs).as("load time in ms").isLessThan(5_000);
        final ClientAcl first = file.forClient("user0", "c");
        final ClientAcl last = file.forClient("user9999", "c");
        assertThat(write(first, "site/0/room3/x")).isTrue();
        assertThat(write(last, "site/9999/room9/x")).isTrue();
        assertThat(write(last, "site/0/room3/x")).isFalse();
        assertThat(file.forClient("user9999", "other")).as("compiled once per user, shared").isSameAs(last);
    }

    @Test
    @DisplayName("a file that cannot be read is an IOException; an empty file grants nothing")
    void unreadableAndEmpty() throws Exception
    {
        assertThatThrownBy(() -> AclFile.load(directory.resolve("missing.acl"))).isInstanceOf(java.io.IOException.class);
        final AclFile empty = AclFile.parse("empty.acl", "\n\n# nothing\n");
        assertThat(read(empty.forClient(null, "c"), "a")).isFalse();
        assertThat(write(empty.forClient("alice", "c"), "a")).isFalse();
    }

    @Test
    @DisplayName("a topic is the rest of the line (it may hold spaces), one word alone is a topic; CRLF line ends are read")
    void restOfLine()
    {
        final AclFile file = AclFile.parse("acl", "topic read a b/c d\r\ntopic write  x \r\ntopic read\n");
        assertThat(read(file.forClient(null, "c"), "a b/c d")).isTrue();
        assertThat(write(file.forClient(null, "c"), "read")).as("one word: a topic named so, readwrite").isTrue();
        assertThat(write(file.forClient(null, "c"), "x")).isTrue();
    }
}
