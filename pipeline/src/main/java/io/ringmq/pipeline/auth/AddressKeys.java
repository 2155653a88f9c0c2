package io.ringmq.pipeline.auth;

import java.net.InetAddress;

/**
 * What a client's address is counted as wherever the broker limits per address (the password back-off,
 * {@code --max-connections-per-address}, the CONNECTs kept for enhanced authentication): an IPv4 address whole, an
 * IPv6 address by its /64, what one host is usually given, so a host that takes a new address of its /64 for each
 * try still counts as one. One {@code long}, so the tables that count by it hold no address objects.
 */
public final class AddressKeys
{
    /** No address to count by (none known, or one exempt from the limit): the key of no address. */
    public static final long NONE = Long.MIN_VALUE;

    private AddressKeys()
    {
    }

    /**
     * @return the key {@code address} counts under; IPv4 keys are kept apart from the IPv6 prefixes they would
     * alias, and the one reserved /64 whose key would be {@link #NONE} (8000::/64) counts as 8000:0:0:1::/64.
     */
    public static long of(final InetAddress address)
    {
        final byte[] bytes = address.getAddress();
        long key = 0;
        for (int i = 0; i < Math.min(8, bytes.length); i++)
        {
            key = (key << 8) | (bytes[i] & 0xFF);
        }
        if (bytes.length == 4)
        {
            return key | (1L << 40);
        }
        return key == NONE ? NONE + 1 : key;
    }
}
