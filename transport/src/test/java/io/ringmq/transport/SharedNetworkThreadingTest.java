package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;

/**
 * The broker behaviours with two I/O threads and one stage thread.
 */
class SharedNetworkThreadingTest extends BrokerBehaviourTest
{
    BrokerContext.Threading threading()
    {
        return BrokerContext.Threading.SHARED_NETWORK;
    }
}
