package io.ringmq.transport;

/**
 * When an I/O agent looks over the holders of something others wait for (a handshake slot, room for partial packets)
 * for stalled ones to end: while connections wait, at most once every so often, and a bounded number of ends a look,
 * so a look's cost stays bounded whatever the line. The agent's thread only.
 */
final class StallLooks
{
    private final long everyMs;
    private final int mostEnds;
    private long nextLookMs;
    private int endsThisLook;

    StallLooks(final long everyMs, final int mostEnds)
    {
        this.everyMs = everyMs;
        this.mostEnds = mostEnds;
    }

    /**
     * @param looking true for the first call of a duty cycle (it may start a look, or wait for the next); false for
     *                the calls after one that ended a holder, which go on with the same look.
     * @param waiting whether connections wait.
     * @return whether a holder may be ended now.
     */
    boolean open(final boolean looking, final boolean waiting, final long nowMs)
    {
        if (!waiting)
        {
            return false;
        }
        if (looking)
        {
            if (nowMs < nextLookMs)
            {
                return false;
            }
            nextLookMs = nowMs + everyMs;
            endsThisLook = 0;
        }
        return endsThisLook < mostEnds;
    }

    /**
     * A holder was found to end in this look.
     */
    void ended()
    {
        endsThisLook++;
    }
}
