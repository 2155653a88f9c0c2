/**
 * Delivery shards, one per I/O agent: each owns the delivery half of its sessions (binding, packet ids, in-flight
 * window, bounded queue, pooled message copies), encodes each PUBLISH once per variant, writes only to its own
 * agent's outbound ring, and hands a session over to another shard when its client reconnects through another
 * agent.
 */
package io.ringmq.pipeline.delivery;
