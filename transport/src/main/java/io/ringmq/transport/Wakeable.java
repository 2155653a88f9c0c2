package io.ringmq.transport;

/**
 * Something that may sleep when idle and can be woken from another thread: an I/O agent blocked in
 * {@code select}, or a stage thread parked. Waking costs a system call only when the target is asleep.
 */
interface Wakeable
{
    void wake();

    Wakeable NONE = () ->
    {
    };
}
