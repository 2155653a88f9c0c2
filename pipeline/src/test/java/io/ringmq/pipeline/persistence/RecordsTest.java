package io.ringmq.pipeline.persistence;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.MessageSource;
import org.agrona.ExpandableArrayBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The session record's owner and a retained message's source: written, read back as written, and a length that
 * runs past the record refused (recovery then counts the record unreadable).
 */
class RecordsTest
{
    private final ExpandableArrayBuffer value = new ExpandableArrayBuffer(64);

    /**
     * @return the offset of the owner in a session record, as recovery finds it.
     */
    private int ownerAt()
    {
        final int at = Records.afterString(value, 1);
        return value.getByte(at) == 1 ? at + 15 + Records.messageLength(value, at + 15) : at + 1;
    }

    @Test
    @DisplayName("the owner of a session without a will: its user, and its ACL client id given as its client id's")
    void ownerWithoutWill()
    {
        final int length = Records.session(value, 4, "client", null, 0, "alice", "client");
        final int at = ownerAt();
        assertThat(Records.stringAt(value, 1, length, null)).isEqualTo("client");
        assertThat(Records.stringAt(value, at, length, null)).isEqualTo("alice");
        final int aclAt = Records.afterString(value, at);
        assertThat(value.getInt(aclAt)).isEqualTo(Records.SAME_AS_CLIENT_ID);
        assertThat(Records.stringAt(value, aclAt, length, "client")).isEqualTo("client");
        assertThat(Records.afterString(value, aclAt)).isEqualTo(length);
    }

    @Test
    @DisplayName("the owner after a will: anonymous, with an ACL client id other than the assigned client id")
    void anonymousOwnerAfterAWill()
    {
        final Message will = new Message("w/t".getBytes(StandardCharsets.UTF_8), "gone".getBytes(StandardCharsets.UTF_8),
            1, true);
        final int length = Records.session(value, 5, "assigned-1", will, 30, null, "");
        final int at = ownerAt();
        assertThat(Records.stringAt(value, at, length, "absent")).isEqualTo("absent");
        final int aclAt = Records.afterString(value, at);
        assertThat(Records.stringAt(value, aclAt, length, "assigned-1")).isEmpty();
        assertThat(Records.afterString(value, aclAt)).isEqualTo(length);
    }

    @Test
    @DisplayName("a string whose length runs past its record is refused, from one byte past it to the largest")
    void stringPastItsRecordIsRefused()
    {
        final int length = Records.session(value, 4, "c", null, 0, "bob", "c");
        final int at = ownerAt();
        for (final int hostile : new int[] {8, 1 << 16, Integer.MAX_VALUE}) // "bob" and the next length: 7
        {
            value.putInt(at, hostile);
            assertThatThrownBy(() -> Records.stringAt(value, at, length, null))
                .isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    @DisplayName("a retained message's source: written after the message, read back as written (anonymous and unknown "
        + "too); none where the record ends with the message; a length past the record or a missing client id refused")
    void retainedSource()
    {
        final int end = Records.putSource(value, 20, new MessageSource("\u00e9ve", "dev-1"));
        final MessageSource read = Records.sourceAt(value, 20, end);
        assertThat(read.userName()).isEqualTo("\u00e9ve");
        assertThat(read.aclClientId()).isEqualTo("dev-1");
        final int anonymousEnd = Records.putSource(value, 20, new MessageSource(null, ""));
        assertThat(Records.sourceAt(value, 20, anonymousEnd).userName()).isNull();
        assertThat(Records.sourceAt(value, 20, anonymousEnd).aclClientId()).isEmpty();
        assertThat(Records.sourceAt(value, 20, 20)).as("a record that ends with its message").isNull();
        for (final int cut : new int[] {21, 23, 24, anonymousEnd - 1})
        {
            assertThatThrownBy(() -> Records.sourceAt(value, 20, cut)).as("cut at " + cut)
                .isInstanceOf(IllegalStateException.class);
        }
        final int unknownEnd = Records.putSource(value, 40, MessageSource.UNKNOWN);
        assertThat(Records.sourceAt(value, 40, unknownEnd)).isSameAs(MessageSource.UNKNOWN);
        value.putInt(24, -1); // no client id
        assertThatThrownBy(() -> Records.sourceAt(value, 20, anonymousEnd))
            .isInstanceOf(IllegalStateException.class);
    }
}
