package io.ringmq.transport;

import io.ringmq.pipeline.auth.AddressKeys;

import java.util.concurrent.ConcurrentHashMap;

/**
 * What one connection not admitted yet holds in heap buffers whose size its client drives (TLS records before an
 * accepting CONNACK, a WebSocket Upgrade request's or a PROXY header's growth), shared by its layers: counted in
 * {@link HeapShare#UNADMITTED}, and once the client's address is known (and limited: loopback only with
 * {@code --limit-loopback}, {@link AddressKeys}) in that address's sixteenth of it, all of the process's
 * connections of that address together. Past either, {@link HeapShare.Spent}: the connection that would take more
 * ends. Without the address's part, 820 sockets of one host, each past its TLS handshake and holding part of a
 * record, held the whole share, and every other client needing any buffer before its CONNACK (a browser's
 * WebSocket Upgrade request over 512 bytes, a ClientHello split across reads) was closed until they went.
 * <p>
 * The connection's own agent thread takes and gives back; the per-address counts are shared between agents (a
 * {@link ConcurrentHashMap}, used only while such buffers are held, never on a message's path).
 */
final class UnadmittedHeap
{
    /** Bytes held per limited address, by all connections; only addresses holding some. */
    private static final ConcurrentHashMap<Long, Long> BY_ADDRESS = new ConcurrentHashMap<>();

    private long addressKey = AddressKeys.NONE;
    /** What this connection holds, counted (also under {@link #addressKey} when it is not NONE). */
    private long held;

    /**
     * Counts {@code bytes} more, unless that would pass the share or the address's part of it.
     *
     * @throws HeapShare.Spent when it would (nothing counted).
     */
    void take(final long bytes)
    {
        HeapShare.UNADMITTED.take(bytes);
        if (addressKey != AddressKeys.NONE)
        {
            try
            {
                add(addressKey, bytes, HeapShare.UNADMITTED.limitBytes / AddressKeys.SHARES);
            }
            catch (final HeapShare.Spent spent)
            {
                HeapShare.UNADMITTED.giveBack(bytes);
                throw spent;
            }
        }
        held += bytes;
    }

    /**
     * Counts {@code bytes} less.
     */
    void giveBack(final long bytes)
    {
        HeapShare.UNADMITTED.giveBack(bytes);
        if (addressKey != AddressKeys.NONE)
        {
            add(addressKey, -bytes, Long.MAX_VALUE);
        }
        held -= bytes;
    }

    /**
     * The client's limited address ({@link InboundConnects#limitedAddressKey}), once known: what the connection holds
     * counts for it from now on (not judged again: it is held already).
     */
    void address(final long key)
    {
        if (addressKey != AddressKeys.NONE && held > 0)
        {
            add(addressKey, -held, Long.MAX_VALUE);
        }
        addressKey = key;
        if (key != AddressKeys.NONE && held > 0)
        {
            add(key, held, Long.MAX_VALUE);
        }
    }

    /**
     * @return what this connection holds (tests).
     */
    long held()
    {
        return held;
    }

    /**
     * @return what the connections of the address of {@code key} hold (tests).
     */
    static long heldBy(final long key)
    {
        return BY_ADDRESS.getOrDefault(key, 0L);
    }

    private static void add(final long key, final long bytes, final long limit)
    {
        BY_ADDRESS.compute(key, (address, before) ->
        {
            final long after = (null == before ? 0 : before) + bytes;
            if (bytes > 0 && after > limit)
            {
                throw new HeapShare.Spent("buffers of one address's connections not admitted yet hold its part of " +
                    "the heap");
            }
            return 0 == after ? null : after;
        });
    }
}
