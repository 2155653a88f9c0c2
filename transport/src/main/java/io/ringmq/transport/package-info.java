/**
 * The network edge: non-blocking socket I/O agents, accept, framing, per-connection buffers, and the
 * {@code ringmq} command line that wires the broker. Built by the broker issue.
 */
package io.ringmq.transport;
