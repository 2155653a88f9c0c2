package io.ringmq.pipeline.auth;

/**
 * A pluggable MQTT 5.0 enhanced-authentication method (section 4.12), named by the CONNECT's Authentication
 * Method property. The method itself is shared and stateless towards connections; each CONNECT (and each
 * re-authentication, section 4.12.1) that names it gets a fresh {@link AuthExchange} holding that connection's
 * state, which the auth stage steps with the CONNECT's Authentication Data and then with each client AUTH's.
 * <pre>
 *   CONNECT(method, data0) -> exchange = method.newExchange(); code = exchange.step(data0)
 *   code 0x18 -> AUTH(0x18, method, exchange.serverData())        [MQTT-4.12.0-2]
 *   AUTH(0x18, method, dataN) -> code = exchange.step(dataN)
 *   code 0x00 -> CONNACK(0x00, method, exchange.serverData()), user exchange.userName()
 *   code >= 0x80 -> CONNACK(code), close                              [MQTT-4.12.0-4]
 * </pre>
 * Implementations never block and never throw out of {@link AuthExchange#step}: bad client data is a failure
 * code. They run on the auth stage's thread.
 */
public interface AuthMethod
{
    /**
     * @return the Authentication Method name as it appears in CONNECT and AUTH, e.g. {@code SCRAM-SHA-256}; it
     * is compared exactly (case-sensitive).
     */
    String name();

    /**
     * @return a fresh exchange for one CONNECT or one re-authentication; it is not reused.
     */
    AuthExchange newExchange();
}
