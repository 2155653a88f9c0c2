/**
 * The network edge: non-blocking socket I/O agents, accept, per-connection buffers, connection timers, the
 * outbound rings, the broker assembly ({@link io.ringmq.transport.Broker}) and the {@code ringmq} command line
 * ({@link io.ringmq.transport.Main}).
 */
package io.ringmq.transport;
