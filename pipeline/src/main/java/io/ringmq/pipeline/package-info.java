/**
 * The broker's brain: the Disruptor ingress ring and its stages ({@link io.ringmq.pipeline.AuthStage},
 * {@link io.ringmq.pipeline.RoutingStage}, one {@link io.ringmq.pipeline.delivery.DeliveryShard} per I/O agent,
 * and the release stage), wired by {@link io.ringmq.pipeline.Pipeline}.
 * <p>
 * Ownership is structural: only ids and coordinates cross stages. An {@link io.ringmq.pipeline.IngressEvent} slot
 * holds primitives; packet bytes too large for it live in an I/O agent's {@link io.ringmq.pipeline.MessageLog},
 * and the routing stage's variable output in its own log ({@link io.ringmq.pipeline.RouteOutput}). The routing
 * stage alone owns the session registry, the subscription index and the retained store; each delivery shard
 * alone owns the delivery half of its sessions. Stages are polled by a {@link io.ringmq.pipeline.StagePoller}
 * inside {@link io.ringmq.pipeline.StageAgent}s, fail closed, and bound their work per duty cycle.
 * It never touches a socket: bytes leave through the {@link io.ringmq.pipeline.Outbound} port.
 */
package io.ringmq.pipeline;
