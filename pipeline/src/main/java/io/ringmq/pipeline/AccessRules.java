package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AclFile;
import io.ringmq.pipeline.auth.ClientAcl;

/**
 * The access rules in force: the ACL file (or none) and its generation, which a reload advances. Immutable: the
 * auth stage publishes a new one when it takes a reload, and the routing stage follows it by reference, so both
 * judge with the same rules.
 */
public final class AccessRules
{
    /** No ACL file: everything open but writes to {@code $SYS}. */
    public static final AccessRules OPEN = new AccessRules(null, 0);
    /**
     * The user the broker's own bridges are admitted as ({@link IngressEvent#bridge}), with {@link ClientAcl#BRIDGE}:
     * a client that would be admitted under this name any other way is refused.
     */
    public static final String BRIDGE_USER = "$bridge";

    private final AclFile file;
    private final int generation;

    private AccessRules(final AclFile file, final int generation)
    {
        this.file = file;
        this.generation = generation;
    }

    /**
     * @return the rules of an ACL file, at generation 0 (null: {@link #OPEN}).
     */
    public static AccessRules of(final AclFile file)
    {
        return null == file ? OPEN : new AccessRules(file, 0);
    }

    /**
     * @param path the ACL file, or null for none.
     * @throws IllegalArgumentException naming the file and line that is malformed, or why it cannot be read.
     */
    public static AccessRules load(final java.nio.file.Path path)
    {
        if (null == path)
        {
            return OPEN;
        }
        try
        {
            return of(AclFile.load(path));
        }
        catch (final java.io.IOException ex)
        {
            throw new IllegalArgumentException("cannot read ACL file " + path + ": " + ex, ex);
        }
    }

    /**
     * @return the rules of a reloaded file, one generation on.
     */
    AccessRules next(final AclFile reloaded)
    {
        return new AccessRules(reloaded, generation + 1);
    }

    /**
     * @param userName the client's user name, or null.
     * @param clientId its client identifier, as the broker knows it.
     */
    public ClientAcl forClient(final String userName, final String clientId)
    {
        if (BRIDGE_USER.equals(userName))
        {
            return ClientAcl.BRIDGE; // the auth stage admits no one else under this name
        }
        return null == file ? ClientAcl.OPEN : file.forClient(userName, clientId);
    }

    public boolean hasFile()
    {
        return null != file;
    }

    public int generation()
    {
        return generation;
    }

    @Override
    public String toString()
    {
        return null == file ? "no ACL file" : file.toString();
    }
}
