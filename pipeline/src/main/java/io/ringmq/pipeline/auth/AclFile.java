package io.ringmq.pipeline.auth;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An access control list in Mosquitto's {@code acl_file} format, read as Mosquitto reads it:
 * <pre>
 *   # a comment (a line whose first character that is not blank is '#'); blank lines are skipped
 *   topic [read|write|readwrite|deny] TOPIC     anonymous clients: the lines before the first "user"
 *   user NAME                                   the lines after it, up to the next "user", are NAME's
 *   topic [read|write|readwrite|deny] TOPIC     no access word: readwrite; TOPIC is the rest of the line
 *   pattern [read|write|readwrite|deny] TOPIC   every client, wherever it stands, with %u (the user name; a client
 *                                               without one skips the rule) and %c (the client id) put in
 * </pre>
 * A user named twice gets the rules of both sections. A {@code deny} that matches wins over any grant (Mosquitto
 * lets a user's grant win over a pattern's deny; here no grant does). A client with a {@code +} or {@code #} in its
 * user name or client id gets no pattern rule, as Mosquitto denies them. Immutable once loaded: stages share it.
 * <p>
 * Each user's rules are compiled once, when the file is read; a client's rules are its user's (found by name, so
 * the time does not grow with the number of users) plus the patterns, substituted once per connection.
 */
public final class AclFile
{
    /** Access words: {@code deny} is none. */
    public static final int DENY = 0;
    public static final int READ = 1;
    public static final int WRITE = 2;
    /** The longest line read: a topic is at most 65,535 bytes [MQTT-4.7.3-3], and a line has a few words more. */
    public static final int MAX_LINE_LENGTH = 65_535 + 1024;

    private final String source;
    private final Map<String, ClientAcl> users;
    private final ClientAcl anonymous;
    private final Map<String, List<ClientAcl.Rule>> userRules;
    private final List<ClientAcl.Rule> anonymousRules;
    private final List<Pattern> patterns;

    private AclFile(final String source, final Map<String, List<ClientAcl.Rule>> userRules,
        final List<ClientAcl.Rule> anonymousRules, final List<Pattern> patterns)
    {
        this.source = source;
        this.userRules = userRules;
        this.anonymousRules = anonymousRules;
        this.patterns = patterns;
        this.users = new HashMap<>(userRules.size() * 2);
        for (final Map.Entry<String, List<ClientAcl.Rule>> user : userRules.entrySet())
        {
            users.put(user.getKey(), ClientAcl.of(user.getValue()));
        }
        this.anonymous = ClientAcl.of(anonymousRules);
    }

    /**
     * @throws IOException              when the file cannot be read.
     * @throws IllegalArgumentException naming the file and the line that is malformed.
     */
    public static AclFile load(final Path path) throws IOException
    {
        try (BufferedReader reader = Files.newBufferedReader(path, StandardCharsets.UTF_8))
        {
            return parse(path.toString(), reader);
        }
    }

    /**
     * @param source the file's name, for the errors.
     * @throws IllegalArgumentException naming the source and the line that is malformed.
     */
    public static AclFile parse(final String source, final String text)
    {
        try
        {
            return parse(source, new StringReader(text));
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex); // a string cannot fail to read
        }
    }

    private static AclFile parse(final String source, final Reader reader) throws IOException
    {
        final Map<String, List<ClientAcl.Rule>> userRules = new HashMap<>();
        final List<ClientAcl.Rule> anonymous = new ArrayList<>();
        final List<Pattern> patterns = new ArrayList<>();
        final StringBuilder line = new StringBuilder(256);
        List<ClientAcl.Rule> section = anonymous;
        for (int number = 1; readLine(reader, line, source, number); number++)
        {
            final String text = line.toString().strip();
            if (text.isEmpty() || text.charAt(0) == '#')
            {
                continue;
            }
            final int keywordEnd = wordEnd(text, 0);
            final String keyword = text.substring(0, keywordEnd);
            final String rest = text.substring(keywordEnd).strip();
            switch (keyword)
            {
                case "user":
                    if (rest.isEmpty())
                    {
                        throw error(source, number, "missing user name");
                    }
                    section = userRules.computeIfAbsent(rest, name -> new ArrayList<>());
                    break;
                case "topic":
                case "pattern":
                    final String[] rule = rule(source, number, rest);
                    final int access = access(source, number, rule[0]);
                    if ("topic".equals(keyword))
                    {
                        section.add(new ClientAcl.Rule(rule[1], access));
                    }
                    else
                    {
                        patterns.add(new Pattern(rule[1], access));
                    }
                    break;
                default:
                    throw error(source, number, "expected 'user', 'topic' or 'pattern', not '" + shorten(keyword) + "'");
            }
        }
        return new AclFile(source, userRules, anonymous, patterns);
    }

    /**
     * @return {access word or null, topic}: the topic is the rest of the line after the access word, or the only
     * word when there is one.
     */
    private static String[] rule(final String source, final int number, final String rest)
    {
        if (rest.isEmpty())
        {
            throw error(source, number, "empty topic");
        }
        final int wordEnd = wordEnd(rest, 0);
        final String topic = wordEnd == rest.length() ? rest : rest.substring(wordEnd).strip();
        final String access = wordEnd == rest.length() ? null : rest.substring(0, wordEnd);
        final String invalid = AclMatch.invalid(topic);
        if (null != invalid)
        {
            throw error(source, number, "invalid topic '" + shorten(topic) + "': " + invalid);
        }
        return new String[] {access, topic};
    }

    private static int access(final String source, final int number, final String word)
    {
        if (null == word)
        {
            return READ | WRITE;
        }
        switch (word)
        {
            case "read": return READ;
            case "write": return WRITE;
            case "readwrite": return READ | WRITE;
            case "deny": return DENY;
            default: throw error(source, number, "invalid access '" + shorten(word) +
                "' (read, write, readwrite or deny)");
        }
    }

    private static int wordEnd(final String text, final int from)
    {
        int i = from;
        while (i < text.length() && text.charAt(i) != ' ' && text.charAt(i) != '\t')
        {
            i++;
        }
        return i;
    }

    /**
     * Reads one line into {@code line}, refusing one longer than {@link #MAX_LINE_LENGTH} before buffering it.
     *
     * @return false at the end of the input.
     */
    private static boolean readLine(final Reader reader, final StringBuilder line, final String source,
        final int number) throws IOException
    {
        line.setLength(0);
        int c = reader.read();
        if (c < 0)
        {
            return false;
        }
        while (c >= 0 && c != '\n')
        {
            if (line.length() == MAX_LINE_LENGTH)
            {
                throw error(source, number, "line longer than " + MAX_LINE_LENGTH + " characters");
            }
            line.append((char)c);
            c = reader.read();
        }
        return true;
    }

    private static String shorten(final String text)
    {
        return text.length() <= 64 ? text : text.substring(0, 64) + "...";
    }

    private static IllegalArgumentException error(final String source, final int number, final String why)
    {
        return new IllegalArgumentException(source + " line " + number + ": " + why);
    }

    /**
     * @param userName the client's user name, or null for an anonymous client.
     * @param clientId its client identifier (after {@code --use-username-as-clientid}).
     * @return the client's rules, compiled: its user's section (shared by every client of the user when the file
     * has no patterns) with the patterns substituted for this client.
     */
    public ClientAcl forClient(final String userName, final String clientId)
    {
        final ClientAcl own = null == userName ? anonymous : users.get(userName);
        if (patterns.isEmpty())
        {
            return null == own ? ClientAcl.NOTHING : own;
        }
        if (dangerous(userName) || dangerous(clientId))
        {
            // put into a pattern it would widen a grant, and a deny could not be put in at all: with patterns in the
            // file such a client gets nothing, as Mosquitto denies it (before, its patterns were left out, their
            // denies with them, and its user's grants alone let it write what a pattern denied everyone)
            return ClientAcl.NOTHING;
        }
        final List<ClientAcl.Rule> rules = new ArrayList<>(null == userName ? anonymousRules :
            userRules.getOrDefault(userName, List.of()));
        for (final Pattern pattern : patterns)
        {
            if ((pattern.hasUser && null == userName) || (pattern.hasClient && clientId.isEmpty()))
            {
                continue; // no user name for %u, or no client id yet for %c (the broker assigns it later)
            }
            rules.add(new ClientAcl.Rule(pattern.substitute(userName, clientId), pattern.access));
        }
        return ClientAcl.of(rules);
    }

    /**
     * @return whether a user name or client id could widen a pattern: one with {@code +} or {@code #}.
     */
    private static boolean dangerous(final String name)
    {
        return null != name && (name.indexOf('+') >= 0 || name.indexOf('#') >= 0);
    }

    /**
     * @return the file this was read from.
     */
    public String source()
    {
        return source;
    }

    /**
     * @return the number of users with a section of their own.
     */
    public int userCount()
    {
        return userRules.size();
    }

    @Override
    public String toString()
    {
        return source + " (" + userRules.size() + " users, " + patterns.size() + " patterns)";
    }

    /**
     * A {@code pattern} line: its topic with {@code %u} and {@code %c} still in it.
     */
    private static final class Pattern
    {
        final String topic;
        final int access;
        final boolean hasUser;
        final boolean hasClient;

        Pattern(final String topic, final int access)
        {
            this.topic = topic;
            this.access = access;
            this.hasUser = topic.contains("%u");
            this.hasClient = topic.contains("%c");
        }

        String substitute(final String userName, final String clientId)
        {
            final StringBuilder out = new StringBuilder(topic.length() + 32);
            for (int i = 0; i < topic.length(); i++)
            {
                final char c = topic.charAt(i);
                if (c == '%' && i + 1 < topic.length() && topic.charAt(i + 1) == 'c')
                {
                    out.append(clientId);
                    i++;
                }
                else if (c == '%' && i + 1 < topic.length() && topic.charAt(i + 1) == 'u' && null != userName)
                {
                    out.append(userName);
                    i++;
                }
                else
                {
                    out.append(c);
                }
            }
            return out.toString();
        }
    }
}
