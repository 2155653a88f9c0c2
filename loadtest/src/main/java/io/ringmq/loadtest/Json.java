package io.ringmq.loadtest;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader for scenario and matrix files: objects become {@link Map}s, arrays {@link List}s, numbers
 * {@link Double}s. Errors name the offset.
 */
final class Json
{
    private final String text;
    private int pos;

    private Json(final String text)
    {
        this.text = text;
    }

    static Object parse(final String text)
    {
        final Json json = new Json(text);
        final Object value = json.value();
        json.skipSpace();
        if (json.pos != text.length())
        {
            throw json.error("trailing characters");
        }
        return value;
    }

    private Object value()
    {
        skipSpace();
        if (pos >= text.length())
        {
            throw error("unexpected end");
        }
        final char c = text.charAt(pos);
        switch (c)
        {
            case '{': return object();
            case '[': return array();
            case '"': return string();
            case 't': return literal("true", Boolean.TRUE);
            case 'f': return literal("false", Boolean.FALSE);
            case 'n': return literal("null", null);
            default: return number();
        }
    }

    private Map<String, Object> object()
    {
        final Map<String, Object> map = new LinkedHashMap<>();
        pos++;
        skipSpace();
        if (peek() == '}')
        {
            pos++;
            return map;
        }
        while (true)
        {
            skipSpace();
            final String key = string();
            skipSpace();
            expect(':');
            map.put(key, value());
            skipSpace();
            if (peek() == ',')
            {
                pos++;
                continue;
            }
            expect('}');
            return map;
        }
    }

    private List<Object> array()
    {
        final List<Object> list = new ArrayList<>();
        pos++;
        skipSpace();
        if (peek() == ']')
        {
            pos++;
            return list;
        }
        while (true)
        {
            list.add(value());
            skipSpace();
            if (peek() == ',')
            {
                pos++;
                continue;
            }
            expect(']');
            return list;
        }
    }

    private String string()
    {
        expect('"');
        final StringBuilder sb = new StringBuilder();
        while (pos < text.length())
        {
            final char c = text.charAt(pos++);
            if (c == '"')
            {
                return sb.toString();
            }
            if (c == '\\')
            {
                final char e = text.charAt(pos++);
                switch (e)
                {
                    case 'n': sb.append('\n'); break;
                    case 't': sb.append('\t'); break;
                    case 'u': sb.append((char)Integer.parseInt(text.substring(pos, pos + 4), 16)); pos += 4; break;
                    default: sb.append(e);
                }
            }
            else
            {
                sb.append(c);
            }
        }
        throw error("unterminated string");
    }

    private Object number()
    {
        final int start = pos;
        while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0)
        {
            pos++;
        }
        try
        {
            return Double.parseDouble(text.substring(start, pos));
        }
        catch (final NumberFormatException ex)
        {
            throw error("not a value");
        }
    }

    private Object literal(final String word, final Object value)
    {
        if (!text.startsWith(word, pos))
        {
            throw error("not a value");
        }
        pos += word.length();
        return value;
    }

    private void expect(final char c)
    {
        if (peek() != c)
        {
            throw error("expected '" + c + "'");
        }
        pos++;
    }

    private char peek()
    {
        return pos < text.length() ? text.charAt(pos) : '\0';
    }

    private void skipSpace()
    {
        while (pos < text.length() && Character.isWhitespace(text.charAt(pos)))
        {
            pos++;
        }
    }

    private IllegalArgumentException error(final String message)
    {
        return new IllegalArgumentException("JSON at offset " + pos + ": " + message);
    }
}
