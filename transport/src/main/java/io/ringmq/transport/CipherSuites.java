package io.ringmq.transport;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A listener's cipher suites from Mosquitto's two directives: {@code ciphers} names the suites of TLS 1.2 (OpenSSL's
 * names, or IANA's as the JDK knows them; also TLS 1.3 suites, ringmq's own reading from before
 * {@code ciphers_tls1.3}), {@code ciphers_tls1.3} those of TLS 1.3 (the same names in OpenSSL and IANA). Each leaves
 * the other version's suites at the JDK's defaults, as OpenSSL does, so a migrated {@code ciphers} line does not turn
 * TLS 1.3 off. Of OpenSSL's cipher-list language only the forms that select no more than the JDK's defaults are read
 * (DEFAULT, HIGH or ALL with weak classes excluded, as in Mosquitto's sample configuration); anything else is refused
 * with a message saying so, never served wider than written.
 */
final class CipherSuites
{
    /** OpenSSL's names of the TLS 1.2 suites the JDK offers, to IANA's. */
    private static final Map<String, String> OPENSSL_NAMES = Map.ofEntries(
        Map.entry("ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
        Map.entry("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        Map.entry("ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
        Map.entry("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
        Map.entry("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
        Map.entry("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        Map.entry("DHE-RSA-AES256-GCM-SHA384", "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384"),
        Map.entry("DHE-RSA-AES128-GCM-SHA256", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"),
        Map.entry("DHE-RSA-CHACHA20-POLY1305", "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        Map.entry("DHE-DSS-AES256-GCM-SHA384", "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384"),
        Map.entry("DHE-DSS-AES128-GCM-SHA256", "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256"),
        Map.entry("ECDHE-ECDSA-AES256-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384"),
        Map.entry("ECDHE-RSA-AES256-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"),
        Map.entry("ECDHE-ECDSA-AES128-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"),
        Map.entry("ECDHE-RSA-AES128-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"),
        Map.entry("DHE-RSA-AES256-SHA256", "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256"),
        Map.entry("DHE-RSA-AES128-SHA256", "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256"),
        Map.entry("DHE-DSS-AES256-SHA256", "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256"),
        Map.entry("DHE-DSS-AES128-SHA256", "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256"),
        Map.entry("ECDHE-ECDSA-AES256-SHA", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"),
        Map.entry("ECDHE-RSA-AES256-SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
        Map.entry("ECDHE-ECDSA-AES128-SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"),
        Map.entry("ECDHE-RSA-AES128-SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
        Map.entry("DHE-RSA-AES256-SHA", "TLS_DHE_RSA_WITH_AES_256_CBC_SHA"),
        Map.entry("DHE-RSA-AES128-SHA", "TLS_DHE_RSA_WITH_AES_128_CBC_SHA"),
        Map.entry("DHE-DSS-AES256-SHA", "TLS_DHE_DSS_WITH_AES_256_CBC_SHA"),
        Map.entry("DHE-DSS-AES128-SHA", "TLS_DHE_DSS_WITH_AES_128_CBC_SHA"),
        Map.entry("AES256-GCM-SHA384", "TLS_RSA_WITH_AES_256_GCM_SHA384"),
        Map.entry("AES128-GCM-SHA256", "TLS_RSA_WITH_AES_128_GCM_SHA256"),
        Map.entry("AES256-SHA256", "TLS_RSA_WITH_AES_256_CBC_SHA256"),
        Map.entry("AES128-SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA256"),
        Map.entry("AES256-SHA", "TLS_RSA_WITH_AES_256_CBC_SHA"),
        Map.entry("AES128-SHA", "TLS_RSA_WITH_AES_128_CBC_SHA"));
    /** OpenSSL cipher-list words that select at least what the JDK's defaults hold. */
    private static final Set<String> WIDE = Set.of("DEFAULT", "HIGH", "ALL");
    /**
     * Classes an OpenSSL list may exclude that the strong defaults ({@link #of}) hold none of (DHE, DSS, RSA key
     * exchange and SHA-1 suites are there: excluding those is refused).
     */
    private static final Set<String> WEAK = Set.of("aNULL", "eNULL", "NULL", "ADH", "AECDH", "LOW", "EXPORT", "EXP",
        "MEDIUM", "MD5", "RC4", "DES", "3DES", "SSLv2", "PSK", "SRP", "CAMELLIA", "SEED", "IDEA", "ARIA");
    /** Parts of a suite's IANA name that put it in one of {@link #WEAK}'s classes. */
    private static final List<String> WEAK_PARTS = List.of("_anon_", "_NULL_", "EXPORT", "_RC4_", "_DES_", "3DES",
        "_MD5", "CAMELLIA", "SEED", "IDEA", "ARIA", "PSK", "SRP");
    /** Suites a list in OpenSSL's language reads without: DSS is in none of OpenSSL 3's DEFAULT. */
    private static final String NOT_IN_DEFAULT = "_DSS_";

    private CipherSuites()
    {
    }

    /**
     * @param ciphers    the {@code ciphers} directive, or null.
     * @param tls13      the {@code ciphers_tls1.3} directive, or null.
     * @param supported  the suites the JDK can offer.
     * @param defaults   the suites it offers by default (both versions).
     * @param warnings   where a list read as the JDK's defaults is said.
     * @return the suites to enable, TLS 1.3 first; null for the JDK's defaults.
     * @throws IllegalArgumentException naming the directive and the name or form that cannot be served.
     */
    static String[] of(final String ciphers, final String tls13, final String[] supported, final String[] defaults,
        final Consumer<String> warnings)
    {
        if (blank(ciphers) && blank(tls13))
        {
            return null;
        }
        final Set<String> offered = new HashSet<>(Arrays.asList(supported));
        final List<String> defaults12 = new ArrayList<>();
        final List<String> defaults13 = new ArrayList<>();
        for (final String suite : defaults)
        {
            if (WEAK_PARTS.stream().anyMatch(suite::contains))
            {
                continue; // the strong defaults: whatever the JDK is configured to enable, no suite of a weak class
            }
            if (isTls13(suite))
            {
                defaults13.add(suite);
            }
            else if (!suite.endsWith("_SCSV"))
            {
                defaults12.add(suite);
            }
        }
        final List<String> named = blank(ciphers) ? null : named("ciphers", ciphers, offered, defaults12, warnings);
        final List<String> fromCiphers13 = null == named ? List.of() : named.stream().filter(CipherSuites::isTls13)
            .toList();
        final List<String> suites12 = null == named ? defaults12 : named.stream().filter(s -> !isTls13(s)).toList();
        final List<String> suites13 = !blank(tls13) ? tls13Suites(tls13, offered) :
            fromCiphers13.isEmpty() ? defaults13 : fromCiphers13;
        final Set<String> all = new LinkedHashSet<>(suites13);
        all.addAll(suites12);
        if (all.isEmpty())
        {
            throw new IllegalArgumentException("ciphers " + ciphers + ", ciphers_tls1.3 " + tls13 + ": no suite left");
        }
        return all.toArray(new String[0]);
    }

    /**
     * @return the suites a {@code ciphers} list names (OpenSSL or IANA names), or {@code defaults12} (the JDK's
     * default TLS 1.2 suites less any of a weak class) for a list in OpenSSL's language that
     * selects no fewer than them.
     */
    private static List<String> named(final String directive, final String list, final Set<String> offered,
        final List<String> defaults12, final Consumer<String> warnings)
    {
        final String[] terms = terms(list);
        if (Arrays.stream(terms).allMatch(CipherSuites::isKeywordTerm))
        {
            return keywords(directive, list, terms, defaults12, warnings);
        }
        final List<String> suites = new ArrayList<>();
        for (final String term : terms)
        {
            final String suite = OPENSSL_NAMES.getOrDefault(term, term);
            if (!offered.contains(suite))
            {
                throw new IllegalArgumentException(directive + " " + list + ": " + term + " is not a cipher suite " +
                    "the JDK offers (give OpenSSL names such as ECDHE-RSA-AES128-GCM-SHA256, or IANA names such as " +
                    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256; of OpenSSL's list language, DEFAULT, HIGH or ALL with " +
                    "weak classes excluded)");
            }
            suites.add(suite);
        }
        return suites;
    }

    private static List<String> keywords(final String directive, final String list, final String[] terms,
        final List<String> defaults12, final Consumer<String> warnings)
    {
        boolean wide = false;
        for (final String term : terms)
        {
            final char first = term.charAt(0);
            final String word = first == '!' || first == '-' || first == '+' || first == '@' ? term.substring(1) : term;
            if (first == '@' && secLevelOver2(word))
            {
                throw new IllegalArgumentException(directive + " " + list + ": " + term + " takes suites out of the " +
                    "JDK's defaults (level 3 and up: those without forward secrecy); name the suites instead");
            }
            if (first == '@' || first == '+')
            {
                continue; // @STRENGTH, @SECLEVEL up to 2: order and a level the JDK's defaults meet; +X only orders
            }
            if (first == '!' || first == '-')
            {
                if (!WEAK.contains(word))
                {
                    throw new IllegalArgumentException(directive + " " + list + ": excluding " + word + " is more " +
                        "than ringmq can read of OpenSSL's list language; name the suites instead");
                }
                continue;
            }
            if (!WIDE.contains(word))
            {
                throw new IllegalArgumentException(directive + " " + list + ": " + word + " is more than ringmq can " +
                    "read of OpenSSL's list language; name the suites instead");
            }
            wide = true;
        }
        if (!wide)
        {
            throw new IllegalArgumentException(directive + " " + list + ": selects no suite");
        }
        warnings.accept(directive + " " + list + ": read as the JDK's default TLS 1.2 suites less DSS, which hold " +
            "none of the classes it excludes");
        return defaults12.stream().filter(suite -> !suite.contains(NOT_IN_DEFAULT)).toList();
    }

    /**
     * @return whether an {@code @SECLEVEL=n} term asks a level above 2 (a term of any other form: false).
     */
    private static boolean secLevelOver2(final String word)
    {
        if (!word.startsWith("SECLEVEL="))
        {
            return false;
        }
        final String level = word.substring("SECLEVEL=".length());
        return !(level.equals("0") || level.equals("1") || level.equals("2"));
    }

    /**
     * @return the terms of a list, split at ':', ',' and white space, empty ones left out (OpenSSL skips them).
     */
    private static String[] terms(final String list)
    {
        return Arrays.stream(list.trim().split("[:,\\s]+")).filter(term -> !term.isEmpty()).toArray(String[]::new);
    }

    private static List<String> tls13Suites(final String list, final Set<String> offered)
    {
        final List<String> suites = new ArrayList<>();
        for (final String name : terms(list))
        {
            if (!isTls13(name) || !offered.contains(name))
            {
                throw new IllegalArgumentException("ciphers_tls1.3 " + list + ": " + name + " is not a TLS 1.3 suite " +
                    "the JDK offers (TLS_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256, TLS_CHACHA20_POLY1305_SHA256)");
            }
            suites.add(name);
        }
        return suites;
    }

    /**
     * @return whether a term is a word of OpenSSL's list language rather than a suite's name.
     */
    private static boolean isKeywordTerm(final String term)
    {
        final char first = term.charAt(0);
        return first == '!' || first == '-' || first == '+' || first == '@' || WIDE.contains(term) ||
            WEAK.contains(term);
    }

    /**
     * @return whether a suite is one of TLS 1.3's (which name no key exchange: no "_WITH_").
     */
    static boolean isTls13(final String suite)
    {
        return suite.startsWith("TLS_") && !suite.contains("_WITH_") && !suite.endsWith("_SCSV");
    }

    private static boolean blank(final String value)
    {
        return null == value || value.isBlank();
    }
}
