package io.ringmq.pipeline.auth;

import java.util.HashMap;
import java.util.Map;

/**
 * The enhanced-authentication methods a broker offers, by Authentication Method name (exact, case-sensitive).
 * Fixed when built; a CONNECT naming a method not here is refused with 0x8C Bad authentication method
 * [MQTT-4.12.0-1].
 */
public final class AuthMethods
{
    /** No enhanced authentication: every CONNECT with an Authentication Method is refused. */
    public static final AuthMethods NONE = new AuthMethods(new AuthMethod[0]);

    private final Map<String, AuthMethod> byName = new HashMap<>();

    /**
     * @throws IllegalArgumentException when two methods share a name.
     */
    public AuthMethods(final AuthMethod... methods)
    {
        for (final AuthMethod method : methods)
        {
            if (null != byName.putIfAbsent(method.name(), method))
            {
                throw new IllegalArgumentException("two authentication methods named " + method.name());
            }
        }
    }

    /**
     * @param name the CONNECT's Authentication Method.
     * @return the method, or null when it is not offered.
     */
    public AuthMethod find(final String name)
    {
        return null == name ? null : byName.get(name);
    }

    /**
     * @return a fresh exchange of the named method, or null when it is not offered (answer 0x8C).
     */
    public AuthExchange newExchange(final String name)
    {
        final AuthMethod method = find(name);
        return null == method ? null : method.newExchange();
    }

    public boolean isEmpty()
    {
        return byName.isEmpty();
    }
}
