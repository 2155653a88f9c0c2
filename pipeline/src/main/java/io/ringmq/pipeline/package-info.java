/**
 * The broker's brain: the Disruptor ingress ring and its stages ({@link io.ringmq.pipeline.AuthStage},
 * {@link io.ringmq.pipeline.RoutingStage}, {@link io.ringmq.pipeline.DeliveryStage}), sessions, the subscription
 * index, retained messages, QoS state, authentication and counters. It never touches a socket: bytes leave through
 * the {@link io.ringmq.pipeline.Outbound} port.
 */
package io.ringmq.pipeline;
