package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;

/**
 * The auth stage: decides every CONNECT (protocol level, client identifier rules, credentials) off the I/O
 * threads, since password hashing is deliberately CPU-heavy. Its verdict is {@link IngressEvent#authCode}; only
 * an explicit {@link IngressEvent#AUTH_ACCEPTED} admits a client, so an error here refuses it.
 */
public final class AuthStage implements Stage
{
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final Authenticator authenticator;
    private final BrokerCounters counters;
    private final int maxClientIdLength;

    public AuthStage(final Authenticator authenticator, final BrokerCounters counters, final int maxClientIdLength)
    {
        this.authenticator = authenticator;
        this.counters = counters;
        this.maxClientIdLength = maxClientIdLength;
    }

    public boolean onEvent(final IngressEvent event)
    {
        if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.CONNECT)
        {
            decide(event);
        }
        return true;
    }

    private void decide(final IngressEvent event)
    {
        // fail closed: the slot arrives AUTH_UNDECIDED, and anything that returns or throws before the last line
        // leaves a refusal
        if (connect.wrap(event.packet, 0, event.packetLength) < 0)
        {
            event.authCode = ReasonCode.V3_SERVER_UNAVAILABLE; // the I/O agent validated it: a corrupt slot
            return;
        }
        if (connect.protocolLevel() != MqttVersion.V3_1_1)
        {
            event.authCode = ReasonCode.UNSUPPORTED_PROTOCOL_VERSION; // MQTT 5.0 sessions come later
            return;
        }
        if (connect.clientId().length() == 0 && !connect.isCleanStart())
        {
            event.authCode = ReasonCode.V3_IDENTIFIER_REJECTED; // [MQTT-3.1.3-8]
            return;
        }
        if (connect.clientId().length() > maxClientIdLength)
        {
            event.authCode = ReasonCode.V3_IDENTIFIER_REJECTED; // [MQTT-3.1.3-9] a limit, counted
            counters.increment(BrokerCounters.CLIENT_ID_TOO_LONG);
            return;
        }
        final String userName = connect.hasUserName() ? connect.userName().asString() : null;
        final byte[] password = connect.hasPassword() ? connect.password().toByteArray() : null;
        final int code = authenticator.authenticate(event.loopback, userName, password);
        if (code != ReasonCode.V3_CONNECTION_ACCEPTED)
        {
            counters.increment(BrokerCounters.AUTH_FAILURES);
        }
        event.authCode = code == ReasonCode.V3_CONNECTION_ACCEPTED ? IngressEvent.AUTH_ACCEPTED : code;
    }

    public String name()
    {
        return "auth";
    }
}
