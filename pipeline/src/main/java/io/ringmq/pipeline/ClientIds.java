package io.ringmq.pipeline;

import io.ringmq.protocol.ConnectFlyweight;

/**
 * The one place a CONNECT's client identifier is read: with {@code --use-username-as-clientid} it is the user the
 * client was admitted as (as Mosquitto's {@code use_username_as_clientid}): the CONNECT's User Name, or the user an
 * enhanced authentication proved, never a User Name the exchange did not prove, so one user cannot take over
 * another's session. A client admitted as no user is then refused by the auth stage. A CONNECT without one is
 * assigned one by the auth stage ({@link IngressEvent#assignedClientId}). The auth stage reads it once for an admitted
 * CONNECT ({@link IngressEvent#clientId}); only {@code AccessControl.admit} writes that field, with the user and the
 * assigned id, so the three always agree.
 */
public final class ClientIds
{
    private ClientIds()
    {
    }

    /**
     * @param admittedUser the user the auth stage admitted the CONNECT as ({@link IngressEvent#aclUser}; null:
     *                     anonymous).
     * @return the client identifier the broker knows the client by; empty when the client sent none (the auth stage
     * assigns one [MQTT-3.1.3-6]).
     */
    public static String of(final ConnectFlyweight connect, final String admittedUser, final boolean useUserName)
    {
        // a bridge keeps its own client id: every bridge is admitted under the one name
        return useUserName && null != admittedUser && !AccessRules.BRIDGE_USER.equals(admittedUser) ? admittedUser :
            connect.clientId().asString();
    }

    /**
     * @param event an admitted CONNECT's slot.
     * @return the client identifier the broker knows it by: the one it assigned, if any; the auth stage's string
     * when it admitted the CONNECT ({@link IngressEvent#clientId}), so that one string serves every stage.
     */
    public static String of(final ConnectFlyweight connect, final IngressEvent event, final boolean useUserName)
    {
        if (null != event.clientId)
        {
            return event.clientId;
        }
        return null != event.assignedClientId ? event.assignedClientId : of(connect, event.aclUser, useUserName);
    }
}
