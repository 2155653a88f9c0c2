package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.ClientAcl;
import org.agrona.DirectBuffer;

import java.nio.charset.StandardCharsets;

/**
 * Who published a retained message (Mosquitto's {@code check_retain_source}): the user its client was admitted as
 * and the client id its access rules were compiled with. Before a retained message goes out to a new subscription,
 * its source must still be allowed to write its topic under the rules in force then, so a retained message stays no
 * longer than its publisher's right to publish it (CVE-2018-12546). The source's compiled rules are kept for the
 * rules they were compiled under, and compiled again after a reload. Immutable but for that cache, which holds one
 * immutable pair: a thread that reads a stale one compiles again.
 */
public final class MessageSource
{
    /**
     * A publisher not known: a session stored by a build before that did not keep its owner. Under an ACL file it
     * may write nothing, so its retained will is held back (fail closed, as the session itself is).
     */
    public static final MessageSource UNKNOWN = new MessageSource();

    private final String userName;
    private final String aclClientId;
    private final int bytes;
    private Compiled compiled;

    /**
     * @param userName    the user its client was admitted as (null: anonymous).
     * @param aclClientId the client id its rules use.
     */
    public MessageSource(final String userName, final String aclClientId)
    {
        this.userName = userName;
        this.aclClientId = java.util.Objects.requireNonNull(aclClientId);
        this.bytes = utf8Length(userName) + utf8Length(aclClientId);
    }

    private MessageSource()
    {
        this.userName = null;
        this.aclClientId = null;
        this.bytes = 0;
    }

    /**
     * @return whether this is {@link #UNKNOWN}.
     */
    public boolean isUnknown()
    {
        return null == aclClientId;
    }

    public String userName()
    {
        return userName;
    }

    /**
     * @return the client id its rules use; null for {@link #UNKNOWN}.
     */
    public String aclClientId()
    {
        return aclClientId;
    }

    /**
     * @return what it holds, counted with the retained message against {@code --retained-bytes}: the UTF-8 of its
     * user name and client id, as it is stored (up to 128 KiB from one CONNECT).
     */
    public int bytes()
    {
        return bytes;
    }

    /**
     * @return whether the source may write {@code topic[offset, offset + length)} under {@code rules}.
     */
    public boolean mayWrite(final AccessRules rules, final DirectBuffer topic, final int offset, final int length)
    {
        if (isUnknown())
        {
            return !rules.hasFile();
        }
        Compiled now = compiled;
        if (null == now || now.rules != rules)
        {
            now = new Compiled(rules, rules.forClient(userName, aclClientId));
            compiled = now;
        }
        return now.acl.canWrite(topic, offset, length);
    }

    private static int utf8Length(final String text)
    {
        return null == text ? 0 : text.getBytes(StandardCharsets.UTF_8).length;
    }

    @Override
    public String toString()
    {
        return "MessageSource[" + userName + ", " + aclClientId + "]";
    }

    private record Compiled(AccessRules rules, ClientAcl acl)
    {
    }
}
