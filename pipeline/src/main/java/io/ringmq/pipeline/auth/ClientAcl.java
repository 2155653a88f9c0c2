package io.ringmq.pipeline.auth;

import org.agrona.DirectBuffer;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * One client's access rules, compiled: its user's {@code topic} rules (or the anonymous section's) and every
 * {@code pattern} with its user name and client id put in. Immutable, so any stage may hold it. A {@code deny} rule
 * that matches wins over any grant; a topic no rule grants is refused.
 * <p>
 * {@link #OPEN} is the broker without an ACL file: everything may be read and written except {@code $SYS}, which is
 * the broker's (read-only for clients).
 */
public final class ClientAcl
{
    /** Every topic the subscription's filter matches may be read: nothing to check per message. */
    public static final int FULL = 0;
    /** Some of them may be read: each message is checked against the subscriber's rules before it goes out. */
    public static final int PARTIAL = 1;
    /** None may be read: the subscription is refused. */
    public static final int DENIED = 2;

    /** No ACL file: all open but writes to {@code $SYS}. */
    public static final ClientAcl OPEN = new ClientAcl(null, null, null, false);

    /**
     * The broker's own bridges: everything may be read and written, {@code $SYS} too (a bridge's state
     * notifications, a remote's {@code $SYS} imported), whatever the ACL file says, as Mosquitto's bridges are.
     */
    public static final ClientAcl BRIDGE = new ClientAcl(null, null, null, true);

    private static final Rule[] NONE = new Rule[0];

    /** An ACL file is in force and nothing in it is for this client: nothing may be read or written. */
    public static final ClientAcl NOTHING = new ClientAcl(NONE, NONE, NONE, false);

    private final Rule[] deny;
    private final Rule[] read;
    private final Rule[] write;
    /** {@link #BRIDGE}: writes to {@code $SYS} too. */
    private final boolean writesSys;

    private ClientAcl(final Rule[] deny, final Rule[] read, final Rule[] write, final boolean writesSys)
    {
        this.deny = deny;
        this.read = read;
        this.write = write;
        this.writesSys = writesSys;
    }

    /**
     * @param rules the rules in file order; their access is {@link AclFile#READ}, {@link AclFile#WRITE}, both,
     *              or {@link AclFile#DENY}.
     */
    static ClientAcl of(final List<Rule> rules)
    {
        return new ClientAcl(select(rules, AclFile.DENY), select(rules, AclFile.READ), select(rules, AclFile.WRITE),
            false);
    }

    private static Rule[] select(final List<Rule> rules, final int access)
    {
        int count = 0;
        for (final Rule rule : rules)
        {
            count += matchesAccess(rule, access) ? 1 : 0;
        }
        if (count == 0)
        {
            return NONE;
        }
        final Rule[] selected = new Rule[count];
        int i = 0;
        for (final Rule rule : rules)
        {
            if (matchesAccess(rule, access))
            {
                selected[i++] = rule;
            }
        }
        return selected;
    }

    private static boolean matchesAccess(final Rule rule, final int access)
    {
        return access == AclFile.DENY ? rule.access == AclFile.DENY : (rule.access & access) != 0;
    }

    /**
     * @return whether this is {@link #OPEN}: no ACL file.
     */
    public boolean isOpen()
    {
        return null == deny;
    }

    /**
     * @return whether the client may PUBLISH to the topic name {@code topic[offset, offset + length)}.
     */
    public boolean canWrite(final DirectBuffer topic, final int offset, final int length)
    {
        if (null == deny)
        {
            return writesSys || !isSys(topic, offset, length); // $SYS is the broker's unless a rule grants it
        }
        return allowed(write, topic, offset, length);
    }

    /**
     * @return whether the client may receive a message on the topic name {@code topic[offset, offset + length)}.
     */
    public boolean canRead(final DirectBuffer topic, final int offset, final int length)
    {
        return null == deny || allowed(read, topic, offset, length);
    }

    private boolean allowed(final Rule[] grants, final DirectBuffer topic, final int offset, final int length)
    {
        for (final Rule rule : deny)
        {
            if (AclMatch.matches(rule.bytes, topic, offset, length))
            {
                return false; // deny wins over any grant
            }
        }
        for (final Rule rule : grants)
        {
            if (AclMatch.matches(rule.bytes, topic, offset, length))
            {
                return true;
            }
        }
        return false;
    }

    /**
     * @param filter a subscription's filter, without a {@code $share/{name}/} prefix.
     * @return {@link #FULL}, {@link #PARTIAL} or {@link #DENIED}, for reading what the filter matches.
     */
    public int classify(final String filter)
    {
        if (null == deny)
        {
            return FULL;
        }
        final String[] levels = AclMatch.levels(filter);
        boolean denyOverlaps = false;
        for (final Rule rule : deny)
        {
            if (AclMatch.covers(rule.levels, levels))
            {
                return DENIED;
            }
            denyOverlaps |= AclMatch.overlaps(rule.levels, levels);
        }
        boolean overlaps = false;
        for (final Rule rule : read)
        {
            if (!denyOverlaps && AclMatch.covers(rule.levels, levels))
            {
                return FULL;
            }
            overlaps |= AclMatch.overlaps(rule.levels, levels);
        }
        return overlaps ? PARTIAL : DENIED;
    }

    /**
     * @return whether a topic name is in the broker's own tree, {@code $SYS}.
     */
    public static boolean isSys(final DirectBuffer topic, final int offset, final int length)
    {
        return length >= 4 && topic.getByte(offset) == '$' && topic.getByte(offset + 1) == 'S' &&
            topic.getByte(offset + 2) == 'Y' && topic.getByte(offset + 3) == 'S' &&
            (length == 4 || topic.getByte(offset + 4) == '/');
    }

    /**
     * One compiled rule: its filter as bytes (matched against topic names) and as levels (against filters).
     */
    static final class Rule
    {
        final byte[] bytes;
        final String[] levels;
        final int access;

        Rule(final String filter, final int access)
        {
            this.bytes = filter.getBytes(StandardCharsets.UTF_8);
            this.levels = AclMatch.levels(filter);
            this.access = access;
        }
    }
}
