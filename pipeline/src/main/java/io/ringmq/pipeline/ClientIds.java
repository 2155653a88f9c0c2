package io.ringmq.pipeline;

import io.ringmq.protocol.ConnectFlyweight;

/**
 * The one place a CONNECT's client identifier is read: with {@code --use-username-as-clientid} it is the user
 * name (as Mosquitto's {@code use_username_as_clientid}), so one user cannot take over another's session; a
 * client without a user name is then refused by the auth stage.
 */
public final class ClientIds
{
    private ClientIds()
    {
    }

    /**
     * @return the client identifier the broker knows the client by; empty when the client sent none (the routing
     * stage assigns one [MQTT-3.1.3-6]).
     */
    public static String of(final ConnectFlyweight connect, final boolean useUserName)
    {
        return useUserName && connect.hasUserName() ? connect.userName().asString() : connect.clientId().asString();
    }
}
