package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;

/**
 * The broker behaviours with everything on one thread (the 2-core default).
 */
class SharedThreadingTest extends BrokerBehaviourTest
{
    BrokerContext.Threading threading()
    {
        return BrokerContext.Threading.SHARED;
    }
}
