package io.ringmq.pipeline;

import org.agrona.DirectBuffer;

/**
 * An outbound port that throws when a shard writes to (or closes) one chosen connection, to make a delivery
 * shard fail on a slot, and records everything else.
 */
final class FailingOutbound implements Outbound
{
    private final PipelineTest.RecordingOutbound recording;
    private final long connectionId;
    private final boolean onClose;
    private final String why;
    private boolean armed;
    private boolean once;

    /**
     * @param onClose true to fail on closing the connection, false on sending to it.
     */
    FailingOutbound(final PipelineTest.RecordingOutbound recording, final long connectionId, final boolean onClose,
        final String why)
    {
        this.recording = recording;
        this.connectionId = connectionId;
        this.onClose = onClose;
        this.why = why;
        this.armed = true;
    }

    /**
     * @param armed whether matching calls throw.
     * @return this.
     */
    FailingOutbound armed(final boolean armed)
    {
        this.armed = armed;
        return this;
    }

    /**
     * Throws on the first matching call only, then disarms.
     *
     * @return this.
     */
    FailingOutbound once()
    {
        this.once = true;
        return this;
    }

    public boolean send(final int agentIndex, final long connectionId, final DirectBuffer buffer, final int offset,
        final int length)
    {
        failIf(!onClose, connectionId);
        return recording.send(agentIndex, connectionId, buffer, offset, length);
    }

    public boolean close(final int agentIndex, final long connectionId)
    {
        failIf(onClose, connectionId);
        return recording.close(agentIndex, connectionId);
    }

    public void endOfBatch()
    {
    }

    private void failIf(final boolean kind, final long connectionId)
    {
        if (kind && armed && connectionId == this.connectionId)
        {
            armed = !once;
            throw new IllegalStateException("injected: " + why);
        }
    }
}
