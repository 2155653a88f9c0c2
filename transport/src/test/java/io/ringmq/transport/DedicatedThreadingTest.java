package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;

/**
 * The broker behaviours with a thread per I/O agent and per stage.
 */
class DedicatedThreadingTest extends BrokerBehaviourTest
{
    BrokerContext.Threading threading()
    {
        return BrokerContext.Threading.DEDICATED;
    }
}
