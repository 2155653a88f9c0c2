package io.ringmq.pipeline.auth;

import java.net.InetAddress;

/**
 * What a client's address is counted as wherever the broker limits per address (the password back-off,
 * {@code --max-connections-per-address}, the shares of what clients no one has admitted yet may hold): an IPv4
 * address whole, an IPv6 address by its /64, what one host is usually given, so a host that takes a new address of
 * its /64 for each try still counts as one. One {@code long}, so the tables that count by it hold no address objects.
 * <p>
 * An IPv6 key is the address's first 64 bits. A TCP peer is never a multicast address (ff00::/8), so that space
 * holds the rest without meeting any peer's /64: IPv4 a.b.c.d is ffff:0:a.b:c.d::/64's key, {@link #NONE} is
 * ff00::/64's, and a multicast address a PROXY header might name counts as ff01::/64.
 * <p>
 * A host's /64 is one address here, but a customer given a /56 or /48 (common for homes and hosting) holds 256 or
 * 65,536 of them; and every device behind one NAT, or on one SLAAC /64, is one.
 */
public final class AddressKeys
{
    /** No address to count by (none known, or one exempt from the limit): the key of no address. */
    public static final long NONE = 0xFF00_0000_0000_0000L;
    /**
     * Where clients no one has admitted yet share a pool (the CONNECTs kept for enhanced authentications, the
     * partial packets of connections before their CONNACK), one address may hold at most this fraction of it: 1/16.
     */
    public static final int SHARES = 16;
    private static final long IPV4 = 0xFFFF_0000_0000_0000L;
    private static final long MULTICAST = 0xFF01_0000_0000_0000L;

    private AddressKeys()
    {
    }

    /**
     * @return the key {@code address} counts under.
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
            return IPV4 | key;
        }
        return (bytes[0] & 0xFF) == 0xFF ? MULTICAST : key;
    }
}
