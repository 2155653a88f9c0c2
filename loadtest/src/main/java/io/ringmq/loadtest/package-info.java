/**
 * The load generator and scenario runner, on ringmq's own codec. Built by the load generator issue.
 */
package io.ringmq.loadtest;
