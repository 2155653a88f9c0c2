package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;

/**
 * The 5.0 session behaviours (expiry, delayed wills, takeover, resumption) on three routing shards in dedicated
 * threading: the shards expire sessions and publish wills on ticks shard 0 puts on the ring, and every shard must
 * agree on which session is which.
 */
class Mqtt5SessionsRouteShardsTest extends Mqtt5SessionsTest
{
    BrokerContext context()
    {
        return TestBrokers.v5Context().threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2)
            .routeShards(3));
    }
}
