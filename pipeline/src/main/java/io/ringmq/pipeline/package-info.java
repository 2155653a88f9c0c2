/**
 * The broker's brain: Disruptor rings and stages, sessions, the subscription index, the retained store,
 * wills, QoS state, limits, timers and counters. It never touches a socket. Built by the broker issue.
 */
package io.ringmq.pipeline;
