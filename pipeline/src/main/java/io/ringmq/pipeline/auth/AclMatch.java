package io.ringmq.pipeline.auth;

import org.agrona.DirectBuffer;

/**
 * Topic matching for access control, over bytes: a topic name against a rule's filter (every PUBLISH, every
 * message a partly readable subscription brings: no allocation), and a subscription's filter against a rule's
 * filter (once per SUBSCRIBE: does the rule cover all of it, or some of it). Filters are valid ones ({@code +} and
 * {@code #} whole levels, {@code #} last); as in MQTT, a filter whose first level is a wildcard matches no topic
 * that starts with {@code $} [MQTT-4.7.2-1].
 */
public final class AclMatch
{
    private AclMatch()
    {
    }

    /**
     * @return whether the topic name {@code topic[offset, offset + length)} matches the filter.
     */
    public static boolean matches(final byte[] filter, final DirectBuffer topic, final int offset, final int length)
    {
        final int end = offset + length;
        if (length > 0 && topic.getByte(offset) == '$' && filter.length > 0 && (filter[0] == '+' || filter[0] == '#'))
        {
            return false; // [MQTT-4.7.2-1]
        }
        int f = 0;
        int t = offset;
        while (true)
        {
            if (f < filter.length && filter[f] == '#')
            {
                return true; // the rest, whatever it is
            }
            if (f < filter.length && filter[f] == '+')
            {
                while (t < end && topic.getByte(t) != '/')
                {
                    t++;
                }
                f++;
            }
            else
            {
                while (f < filter.length && filter[f] != '/' && t < end && topic.getByte(t) != '/')
                {
                    if (filter[f] != topic.getByte(t))
                    {
                        return false;
                    }
                    f++;
                    t++;
                }
                if ((f < filter.length && filter[f] != '/') || (t < end && topic.getByte(t) != '/'))
                {
                    return false; // one level is longer than the other
                }
            }
            final boolean filterEnds = f == filter.length;
            if (t == end)
            {
                // "a/#" matches "a" too [MQTT-4.7.1-2]
                return filterEnds || (filter.length - f == 2 && filter[f] == '/' && filter[f + 1] == '#');
            }
            if (filterEnds)
            {
                return false;
            }
            f++;
            t++;
        }
    }

    /**
     * @return whether every topic the subscription's filter matches is matched by the rule's filter.
     */
    public static boolean covers(final String[] rule, final String[] filter)
    {
        if (dollarApart(rule, filter))
        {
            return false;
        }
        for (int i = 0; ; i++)
        {
            if (i < rule.length && "#".equals(rule[i]))
            {
                return true;
            }
            if (i == filter.length || i == rule.length)
            {
                return i == filter.length && i == rule.length;
            }
            if ("#".equals(filter[i]) || (!"+".equals(rule[i]) && !rule[i].equals(filter[i])))
            {
                return false; // a literal level covers only itself, never a wildcard
            }
        }
    }

    /**
     * @return whether some topic matches both the rule's filter and the subscription's filter.
     */
    public static boolean overlaps(final String[] rule, final String[] filter)
    {
        if (dollarApart(rule, filter))
        {
            return false;
        }
        for (int i = 0; ; i++)
        {
            if ((i < rule.length && "#".equals(rule[i])) || (i < filter.length && "#".equals(filter[i])))
            {
                return true;
            }
            if (i == filter.length || i == rule.length)
            {
                return i == filter.length && i == rule.length;
            }
            if (!"+".equals(rule[i]) && !"+".equals(filter[i]) && !rule[i].equals(filter[i]))
            {
                return false;
            }
        }
    }

    /**
     * @return whether one filter starts with a wildcard and the other with a {@code $} level: no topic matches both.
     */
    private static boolean dollarApart(final String[] a, final String[] b)
    {
        return (isWildcard(a[0]) && b[0].startsWith("$")) || (isWildcard(b[0]) && a[0].startsWith("$"));
    }

    private static boolean isWildcard(final String level)
    {
        return "+".equals(level) || "#".equals(level);
    }

    /**
     * @return the filter's levels ("a//b" has three, the middle one empty).
     */
    public static String[] levels(final String filter)
    {
        return filter.split("/", -1);
    }

    /**
     * @return null for a valid filter, else why not: {@code +} and {@code #} must each be a whole level, {@code #}
     * the last, no NUL [MQTT-4.7.1-1] [MQTT-4.7.1-2] [MQTT-4.7.1-3], at most 65,535 bytes of UTF-8 [MQTT-4.7.3-3].
     */
    public static String invalid(final String filter)
    {
        if (filter.isEmpty())
        {
            return "empty topic";
        }
        if (filter.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 65_535)
        {
            return "topic longer than 65535 bytes";
        }
        final int n = filter.length();
        for (int i = 0; i < n; i++)
        {
            final char c = filter.charAt(i);
            if (c == 0 || Character.isSurrogate(c) && !validSurrogate(filter, i))
            {
                return "a NUL or broken UTF-16 in the topic";
            }
            final boolean levelStart = i == 0 || filter.charAt(i - 1) == '/';
            final boolean levelEnd = i == n - 1 || filter.charAt(i + 1) == '/';
            if (c == '+' && !(levelStart && levelEnd))
            {
                return "'+' must be a whole level";
            }
            if (c == '#' && !(levelStart && i == n - 1))
            {
                return "'#' must be the whole last level";
            }
        }
        return null;
    }

    private static boolean validSurrogate(final String s, final int i)
    {
        final char c = s.charAt(i);
        return Character.isHighSurrogate(c) ? i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1)) :
            i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
