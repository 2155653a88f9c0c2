package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;

/**
 * The ACL behaviours (refused filters and PUBLISHes, wide filters checked per message, reloads that revoke, restored
 * sessions) on three routing shards in dedicated threading: every shard judges a slot by the rules shard 0 held
 * when it stamped it.
 */
class AclRouteShardsTest extends AclTest
{
    @Override
    BrokerContext base()
    {
        return new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2)
            .routeShards(3));
    }
}
