package io.ringmq.pipeline.auth;

import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PropertyId;

import java.net.InetAddress;
import java.util.Arrays;

/**
 * One CONNECT's credentials on their way to a credential worker and its verdict on the way back: made by the I/O
 * agent that holds the CONNECT, filled in by a worker, read by that agent, which then wipes the password copy.
 */
public final class CredentialRequest
{
    /** No verdict (yet). */
    public static final long NO_VERDICT = -1;

    final int agentIndex;
    final long connectionId;
    final String userName;
    final byte[] password;
    final InetAddress address;
    final boolean loopback;
    volatile long verdict = NO_VERDICT;

    /**
     * @param password a copy of the CONNECT password, owned by the request (wiped by {@link #wipe()}).
     * @param address  the client's address (the PROXY protocol's when there is one), for the back-off; or null.
     */
    public CredentialRequest(final int agentIndex, final long connectionId, final String userName,
        final byte[] password, final InetAddress address, final boolean loopback)
    {
        this.agentIndex = agentIndex;
        this.connectionId = connectionId;
        this.userName = userName;
        this.password = password;
        this.address = address;
        this.loopback = loopback;
    }

    /**
     * @return whether a CONNECT's credentials need a worker: a user name and a password, outside enhanced
     * authentication (whose exchange the auth stage runs, with no PBKDF2 on the server's side).
     */
    public static boolean needsWorker(final ConnectFlyweight connect)
    {
        return connect.hasUserName() && connect.hasPassword() && !(connect.protocolLevel() == MqttVersion.V5 &&
            connect.properties().has(PropertyId.AUTHENTICATION_METHOD));
    }

    public int agentIndex()
    {
        return agentIndex;
    }

    public long connectionId()
    {
        return connectionId;
    }

    /**
     * @return the verdict ({@link Authenticator#verify}), or {@link #NO_VERDICT}.
     */
    public long verdict()
    {
        return verdict;
    }

    /**
     * Overwrites the password copy: once the verdict is taken, or when the connection is gone.
     */
    public void wipe()
    {
        Arrays.fill(password, (byte)0);
    }
}
