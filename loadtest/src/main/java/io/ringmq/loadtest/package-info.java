/**
 * The load generator ({@link io.ringmq.loadtest.LoadTest}) and the bench matrix runner, on ringmq's own codec with
 * non-blocking I/O threads; per-message latency in HdrHistogram, loss, duplicate and reorder accounting, and
 * broker observation from /proc.
 */
package io.ringmq.loadtest;
