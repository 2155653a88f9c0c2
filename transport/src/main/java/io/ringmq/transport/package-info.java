/**
 * The network edge: non-blocking socket I/O agents, accept, per-connection buffers, connection timers, the
 * outbound rings, the broker assembly ({@link io.ringmq.transport.Broker}) and the {@code ringmq} command line
 * ({@link io.ringmq.transport.Main}). The broker puts its agents on threads through {@code AgentThreads}, warms up
 * through {@code WarmStart} and reloads through {@code LiveReload}.
 * <p>
 * An I/O agent ({@code IoAgent}, the duty cycle) runs three roles over its selector: the {@code Acceptor} (on the
 * agent that listens: admits sockets against the connection, per-address and memory limits and hands them out),
 * the {@code ConnectionReader} (reads into the {@code InboundBuffers}; its {@code PacketFramer} frames, judges the
 * first packet through {@code InboundConnects}, sizes and topics, and hands packets on) and the
 * {@code ConnectionWriter} (appends the pipeline's bytes, notes the CONNACK, flushes once per cycle). The
 * {@code ConnectionRegistry} takes connections in and the {@code ConnectionCloser} ends them. Bytes meet the socket
 * in one place, a {@code SocketLayer} (plain TCP now; TLS and WebSocket next).
 */
package io.ringmq.transport;
