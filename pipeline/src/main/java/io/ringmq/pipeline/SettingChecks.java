package io.ringmq.pipeline;

/**
 * The one check every settings class ({@link BrokerContext} and its parts, {@link ListenerSettings},
 * {@link io.ringmq.pipeline.auth.CredentialSettings}) makes of a value in its {@code conclude()}.
 */
public final class SettingChecks
{
    private SettingChecks()
    {
    }

    /**
     * @param message one line naming the flag and what it must be, as the command line reports it.
     * @throws IllegalArgumentException with {@code message} when {@code condition} does not hold.
     */
    public static void check(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(message);
        }
    }

    /**
     * @return whether {@code address} names a host address (a literal, or a name that resolves).
     */
    public static boolean isAddress(final String address)
    {
        try
        {
            java.net.InetAddress.getByName(address);
            return true;
        }
        catch (final java.net.UnknownHostException ex)
        {
            return false;
        }
    }
}
