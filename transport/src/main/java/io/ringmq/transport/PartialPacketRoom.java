package io.ringmq.transport;

import io.ringmq.pipeline.auth.AddressKeys;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.ObjectHashSet;

/**
 * What the own buffers of an I/O agent's admitted connections hold (a partial packet, or packets held while the
 * connection waits), and the line of those waiting for room. Before it, 450 admitted clients that each sent all but
 * the end of a 262 KB PUBLISH and then nothing held 118 MB of the pooled memory for as long as they liked, and the
 * memory budget refused every new connection meanwhile. The agent's thread only.
 * <p>
 * A buffer is counted while it holds bytes, at its capacity or at the length its partial packet's header declares,
 * whichever is more: room is reserved for the whole packet, so a connection given room reads it to its end without
 * waiting again (memory still follows the bytes that arrive). A buffer emptied goes back to the pool within two
 * {@link IdleBuffers} sweeps and is no longer counted. Past {@link #limitBytes}:
 * <ul>
 *   <li>a connection whose partial packet would grow its own buffer past what it has reserved waits, unread (its bytes
 *   stay in the socket, and TCP slows its client), in line, until holders give room back, the first of the address
 *   holding the least room first ({@code --max-connections-per-address}' address; loopback counts for none); one
 *   connection at a time, the {@link #overdraft}, reads on past the limit until its partial packet ends, so a packet
 *   larger than the room left (up to {@code --max-packet-size}) always gets through, one at a time;</li>
 *   <li>a connection holding nothing, or a short partial packet ({@link InboundBuffers}' carried length), reads at
 *   most that much at a time: small packets keep flowing while large ones wait;</li>
 *   <li>while connections wait, a holder whose socket gave less than a {@value #PROGRESS_SHARE}th of what it holds in
 *   {@value #STALL_MS} ms, or nothing in the last {@value #HEARD_WITHIN_MS} ms of them (two such periods running for
 *   one holding less than a read's worth), ends ({@link #stalled}), the largest first, and its room goes to the line: one the broker would read, or does not read only because its client
 *   does not read what it is owed. A client that keeps sending at that pace keeps its room (a 262 KB packet: 2 KB a
 *   second), TLS records and WebSocket frames counted as their bytes arrive.</li>
 * </ul>
 */
final class PartialPacketRoom
{
    /** The period a holder's progress is judged over, while connections wait. */
    static final long STALL_MS = 2_000;
    /**
     * A holder whose socket gave less than this share of what it holds in a period is stalled: a client holding a
     * 262 KB packet's room must send at least 4 KB every two seconds while others wait (one byte every 1.9 s held
     * it for good before, review of afa201d).
     */
    static final int PROGRESS_SHARE = 64;
    /**
     * A holder not heard from in this long at the end of a period is stalled too, whatever the period brought: a client
     * given room after waiting may only have had its bytes read from its socket, sent long before.
     */
    static final long HEARD_WITHIN_MS = STALL_MS / 2;
    /** While connections wait, how often the holders are looked over for stalled ones. */
    static final long LOOK_EVERY_MS = 250;
    /** The most holders one look ends: a look's cost stays bounded. */
    static final int MOST_ENDS_A_LOOK = 32;

    /** The most the holders may hold together, but for the overdraft's reads past it. */
    private final long limitBytes;
    /** The room one read of the agent's scratch buffer may take. */
    private final int readBytes;
    private long heldBytes;
    /** The connections holding bytes, counted ({@link Progress#admittedBytes} above 0). */
    private final ObjectHashSet<Connection> holders = new ObjectHashSet<>();
    /**
     * The waiting connections, a line per group their room is counted for (a limited address, or none): the next given
     * room is the first of the group holding the least, so one host's flood of stalled holders gives way to another's
     * packet.
     */
    private final AddressLines line = new AddressLines();
    private final AddressLines.Holdings holdings = this::holdings;
    /** Room held per limited address; only addresses holding some. */
    private final Long2LongHashMap heldByAddress = new Long2LongHashMap(0);
    /** Room held by connections counted for no address. */
    private long heldForNone;
    /** The one connection reading on past the limit until its partial packet ends, or null. */
    private Connection overdraft;
    private long nowMs;
    private final StallLooks looks = new StallLooks(LOOK_EVERY_MS, MOST_ENDS_A_LOOK);
    /**
     * The holders the look under way ends, largest first, found in one pass over the holders: a look's cost is that
     * pass, not a pass for each end (before, the ends of a look times every holder a client may open).
     */
    private final Connection[] ends = new Connection[MOST_ENDS_A_LOOK];
    private int endCount;
    private int nextEnd;

    /**
     * @param limitBytes the most the holders may hold together (but for the overdraft).
     * @param readBytes  the most one read of the agent's scratch buffer takes.
     */
    PartialPacketRoom(final long limitBytes, final int readBytes)
    {
        this.limitBytes = limitBytes;
        this.readBytes = readBytes;
    }

    /**
     * @return this agent's share of the pooled memory for the own buffers of admitted connections: a quarter of
     * netty's limit, split between the I/O agents.
     */
    static long share(final long pooledLimitBytes, final int agents)
    {
        return pooledLimitBytes / 4 / Math.max(1, agents);
    }

    void nowMs(final long nowMs)
    {
        this.nowMs = nowMs;
    }

    /**
     * Reserves room for what an admitted connection's own buffer is to hold ({@code needs}: its capacity once grown,
     * or the length its partial packet's header declares, whichever is more), first in line first.
     *
     * @return true when it may be read now (reserved, and counted); false when it waits in line, unread (or, with
     * none reading past the limit and none in line, it becomes the one that does, and may be read).
     */
    boolean reserve(final Connection connection, final int needs)
    {
        if (connection == overdraft || (0 == line.size() && heldBytes + needs - held(connection) <= limitBytes))
        {
            progress(connection).reserved = true;
            count(connection, needs);
            return true;
        }
        if (null == overdraft && 0 == line.size())
        {
            overdraft = connection; // the one read past the limit: its packet gets through, the next waits for it
            progress(connection).reserved = true;
            count(connection, needs);
            return true;
        }
        if (0 == line.size())
        {
            startPeriods(); // progress is judged only while connections wait: from now
        }
        final Progress progress = progress(connection);
        progress.waitingForRoom = true;
        progress.roomWanted = needs;
        line.add(progress.addressKey, connection);
        connection.updateInterest();
        return false;
    }

    /**
     * @return whether a read of a connection holding no partial packet of its own may fill the agent's scratch buffer:
     * with less room than a read takes, or connections in line, it reads a short one.
     */
    boolean roomForRead()
    {
        return 0 == line.size() && heldBytes + readBytes <= limitBytes;
    }

    /**
     * A packet held in a connection's own buffer was taken from it: when it was the one reading past the limit, it no
     * longer is, and the first in line is.
     */
    void packetEnded(final Connection connection)
    {
        if (null != connection.progress)
        {
            connection.progress.reserved = false; // the next packet reserves its own room, behind those that wait
        }
        if (connection == overdraft)
        {
            overdraft = null;
            resume();
        }
    }

    /**
     * A read took {@code bytes} from a connection's socket (below its layers).
     */
    void heard(final Connection connection, final int read)
    {
        final Progress progress = connection.progress;
        if (null == progress)
        {
            return; // it never held a partial packet: nothing to judge
        }
        final long socketBytes = null == connection.layer ? 0 : connection.layer.bytesFromSocket();
        final long bytes = Math.max(read, socketBytes - progress.socketBytes);
        progress.socketBytes = socketBytes;
        if (bytes > 0)
        {
            progress.heardBytes = (int) Math.min(Integer.MAX_VALUE, progress.heardBytes + bytes);
            progress.heardMs = nowMs;
        }
    }

    /**
     * A write gave {@code bytes} to a connection's socket: for one unread because its client has not read what it is
     * owed (outFull), that is its progress (a client that reads slowly what it is sent goes on; one that reads nothing
     * stalls).
     */
    static void wrote(final Connection connection, final long bytes)
    {
        final Progress progress = connection.progress;
        if (null != progress && bytes > 0)
        {
            progress.wroteBytes = (int)Math.min(Integer.MAX_VALUE, progress.wroteBytes + bytes);
        }
    }

    /**
     * @return what a connection's own buffer holds as counted in its agent's room.
     */
    static int held(final Connection connection)
    {
        return null == connection.progress ? 0 : connection.progress.admittedBytes;
    }

    /**
     * @return whether a connection's partial packet waits, unread, for room.
     */
    static boolean waiting(final Connection connection)
    {
        return null != connection.progress && connection.progress.waitingForRoom;
    }

    /**
     * @return whether a connection's partial packet has its room reserved.
     */
    static boolean reserved(final Connection connection)
    {
        return null != connection.progress && connection.progress.reserved;
    }

    /**
     * @return its progress, made the first time it is asked for.
     */
    private static Progress progress(final Connection connection)
    {
        Progress progress = connection.progress;
        if (null == progress)
        {
            progress = new Progress();
            progress.socketBytes = null == connection.layer ? 0 : connection.layer.bytesFromSocket();
            progress.addressKey = InboundConnects.limitedAddressKey(connection); // admitted: its address is known
            connection.progress = progress;
        }
        return progress;
    }

    /**
     * Starts a period of progress for every holder.
     */
    private void startPeriods()
    {
        for (final Connection holder : holders)
        {
            startPeriod(holder);
            progress(holder).missed = false;
        }
    }

    private void startPeriod(final Connection connection)
    {
        final Progress progress = progress(connection);
        progress.readMs = nowMs;
        progress.heardBytes = 0;
        progress.wroteBytes = 0;
    }

    /**
     * Counts what an admitted connection's own buffer holds now ({@code held}: the more of its capacity and its partial
     * packet's declared length while it holds bytes, 0 when it holds none or the connection is not admitted); room
     * given back goes to the line.
     */
    void count(final Connection connection, final int held)
    {
        final int before = held(connection);
        if (held == before)
        {
            return;
        }
        heldBytes += held - before;
        final Progress progress = progress(connection);
        progress.admittedBytes = held;
        if (AddressKeys.NONE == progress.addressKey)
        {
            heldForNone += held - before;
        }
        else
        {
            final long byAddress = heldByAddress.get(progress.addressKey) + held - before;
            if (0 == byAddress)
            {
                heldByAddress.remove(progress.addressKey); // the table holds only addresses holding some
            }
            else
            {
                heldByAddress.put(progress.addressKey, byAddress);
            }
        }
        if (0 == before)
        {
            holders.add(connection);
            startPeriod(connection);
            progress(connection).missed = false;
        }
        else if (0 == held)
        {
            holders.remove(connection);
            if (connection == overdraft)
            {
                overdraft = null; // it holds nothing: the next in line reads past the limit (resumed below)
            }
        }
        if (held < before)
        {
            resume();
        }
    }

    /**
     * A connection closes: what it held goes back, and its place in line or past the limit.
     */
    void release(final Connection connection)
    {
        if (waiting(connection))
        {
            leaveLine(connection);
        }
        if (connection == overdraft)
        {
            overdraft = null;
        }
        count(connection, 0);
        resume();
    }

    /**
     * Waiters read again, the first of the group holding the least room first, each with the room it waits for
     * reserved; when that one cannot have it and none reads past the limit, it does.
     */
    private void resume()
    {
        while (0 != line.size())
        {
            final Connection next = nextInLine();
            final int wanted = progress(next).roomWanted;
            if (heldBytes + wanted - held(next) > limitBytes)
            {
                if (null != overdraft)
                {
                    return;
                }
                overdraft = next;
            }
            leaveLine(next);
            progress(next).reserved = true;
            count(next, Math.max(held(next), wanted)); // more: no resume from within
            startPeriod(next); // it was not read for the broker's sake: its progress is judged from now
            progress(next).missed = false;
            // and its keep-alive counts from now: its PINGREQ, if any, waits behind the rest of its packet
            next.lastPacketMs = Math.max(next.lastPacketMs, nowMs);
            next.updateInterest();
        }
    }

    /**
     * @return the waiting connection whose group (its limited address, or those counted for none) holds the least
     * room, the first in line among equals.
     */
    private Connection nextInLine()
    {
        return line.next(holdings);
    }

    private long holdings(final long key)
    {
        return AddressKeys.NONE == key ? heldForNone : heldByAddress.get(key);
    }

    /**
     * A connection leaves the line: given room, or closed.
     */
    private void leaveLine(final Connection connection)
    {
        connection.progress.waitingForRoom = false;
        line.remove(connection.progress.addressKey, connection);
    }

    /**
     * While connections wait, at most every {@value #LOOK_EVERY_MS} ms and {@value #MOST_ENDS_A_LOOK} times a look:
     * a holder to end, whose room then goes to the line as it closes. One whose socket gave less than a
     * {@value #PROGRESS_SHARE}th of what it holds over a period of {@value #STALL_MS} ms, periods not counting while it
     * is unread for the broker's sake (waiting for room, the ingress ring full, its CONNACK on its way); the largest
     * such.
     *
     * @param looking true for the first call of a duty cycle (it may look, or wait for the next look); false for the
     *                calls after one that returned a connection, which go on with the same look.
     * @return the connection to end (the caller closes it, which releases what it holds), or null.
     */
    Connection stalled(final boolean looking)
    {
        if (!looks.open(looking, 0 != line.size(), nowMs))
        {
            return null;
        }
        if (looking)
        {
            judge(); // one pass over the holders a look, however many it ends
        }
        while (nextEnd < endCount)
        {
            final Connection stalled = ends[nextEnd];
            ends[nextEnd++] = null;
            if (!stalled.closed && held(stalled) > 0)
            {
                looks.ended();
                return stalled;
            }
        }
        return null;
    }

    /**
     * Judges every holder over its period, once a look: the {@value #MOST_ENDS_A_LOOK} largest stalled ones are the
     * look's {@link #ends}, largest first.
     */
    private void judge()
    {
        for (int i = nextEnd; i < endCount; i++)
        {
            ends[i] = null;
        }
        nextEnd = 0;
        endCount = 0;
        for (final Connection holder : holders)
        {
            if (waiting(holder) || holder.paused || holder.awaitingConnack)
            {
                startPeriod(holder); // unread for the broker's sake (waiting for room, the ingress ring full)
                continue;
            }
            final Progress progress = progress(holder);
            if (holder.closed || holder.closing || nowMs - progress.readMs < STALL_MS)
            {
                continue;
            }
            // one unread because its client does not read what it is owed (outFull) is judged by what its socket took
            // of that instead: one that reads nothing stalls as one that sends nothing (else it could hold its room,
            // and the one past the limit, for good), one that reads slowly goes on
            // and one that reads slowly goes on only for as many periods as one sending slowly takes to end its
            // packet: else a trickle of reads held its room, and the one past the limit, for good (review of 45a442f)
            final boolean sending =
                progress.heardBytes >= held(holder) / PROGRESS_SHARE && nowMs - progress.heardMs < HEARD_WITHIN_MS;
            final boolean reading = !sending && holder.outFull &&
                progress.wroteBytes >= held(holder) / PROGRESS_SHARE && progress.readingPeriods < PROGRESS_SHARE;
            if (sending || reading)
            {
                progress.readingPeriods = sending ? 0 : progress.readingPeriods + 1;
                progress.missed = false;
                startPeriod(holder); // it goes on: judged again over the next period
            }
            else if (held(holder) < readBytes && !progress.missed)
            {
                // a small holder is given a second period: a lossy link's retransmission may stall it a second or more
                progress.missed = true;
                startPeriod(holder);
            }
            else
            {
                addEnd(holder);
            }
        }
    }

    /**
     * Keeps a stalled holder among the look's ends, in order of what they hold, largest first, when it is among the
     * largest {@value #MOST_ENDS_A_LOOK}.
     */
    private void addEnd(final Connection holder)
    {
        final int held = held(holder);
        if (endCount == ends.length && held(ends[endCount - 1]) >= held)
        {
            return;
        }
        int at = Math.min(endCount, ends.length - 1);
        while (at > 0 && held(ends[at - 1]) < held)
        {
            ends[at] = ends[at - 1];
            at--;
        }
        ends[at] = holder;
        endCount = Math.min(endCount + 1, ends.length);
    }

    /**
     * @return what the holders hold, as counted (tests).
     */
    long heldBytes()
    {
        return heldBytes;
    }

    /**
     * @return connections waiting for room (tests).
     */
    int waiting()
    {
        return line.size();
    }

    /**
     * How a connection holding room goes with its partial packet, on its agent's thread.
     */
    static final class Progress
    {
        /** What its own buffer holds as counted in the room (admitted). */
        int admittedBytes;
        /** Its partial packet waits, unread, for room. */
        boolean waitingForRoom;
        /** Its partial packet's room is reserved (until that packet ends): its buffer is counted at the reservation. */
        boolean reserved;
        /** When the period its progress is judged over began. */
        long readMs;
        /** The bytes its socket gave in the period. */
        int heardBytes;
        /** When its socket last gave bytes. */
        long heardMs;
        /** Its layers' {@link SocketLayer#bytesFromSocket} at its last read. */
        long socketBytes;
        /** While it waits: the room it waits for (what its own buffer is to be counted at). */
        int roomWanted;
        /** Holding less than a read's worth, it failed its last period: one more and it is stalled. */
        boolean missed;
        /** The bytes writes gave its socket in the period. */
        int wroteBytes;
        /** The periods running it went on by what its socket took (unread, outFull), not by what it sent. */
        int readingPeriods;
        /** The group its room is counted for: its limited address ({@code AddressKeys}), or none. */
        long addressKey;
    }
}
