package io.ringmq.pipeline.auth;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Verified password-file credentials, so a reconnect costs one HMAC instead of a PBKDF2 derivation. Each entry
 * is HMAC-SHA256(user, password) under a random key made per process and never written anywhere: neither the
 * password nor an unkeyed hash of it is kept, so a heap dump is not a password list (its key is in the same heap,
 * so guesses could be tested against it, but a reconnect-sized table is no better than the password file). An
 * entry holds only
 * under the password file it was verified against ({@link PasswordFile#generation()}); a reload clears them all.
 * Bounded: the least recently used entry goes first. Thread-safe: the credential workers share it; a short lock,
 * never taken on an I/O or stage thread.
 */
final class CredentialCache
{
    private static final int KEY_LENGTH = 32;
    private final SecretKeySpec key;
    private final ThreadLocal<Mac> macs;
    private final int capacity;
    private final LinkedHashMap<String, Entry> entries;

    /**
     * @param capacity entries at most; 0 remembers nothing.
     */
    CredentialCache(final int capacity)
    {
        final byte[] secret = new byte[KEY_LENGTH];
        new SecureRandom().nextBytes(secret);
        this.key = new SecretKeySpec(secret, "HmacSHA256");
        this.macs = ThreadLocal.withInitial(this::newMac);
        this.capacity = capacity;
        this.entries = new LinkedHashMap<>(16, 0.75f, true)
        {
            protected boolean removeEldestEntry(final Map.Entry<String, Entry> eldest)
            {
                return size() > CredentialCache.this.capacity;
            }
        };
    }

    private Mac newMac()
    {
        try
        {
            final Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(key);
            return mac;
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException("HmacSHA256 is not available", ex);
        }
    }

    /**
     * @return HMAC-SHA256 under this process's key of the parts, each length-prefixed so no two splits collide.
     */
    byte[] mac(final byte[] first, final byte[] second)
    {
        final Mac mac = macs.get();
        mac.update(lengthOf(first));
        mac.update(first);
        mac.update(lengthOf(second));
        mac.update(second);
        return mac.doFinal();
    }

    private static byte[] lengthOf(final byte[] bytes)
    {
        final int length = bytes.length;
        return new byte[]{(byte)(length >>> 24), (byte)(length >>> 16), (byte)(length >>> 8), (byte)length};
    }

    /**
     * @return whether this user's password was verified under the password file of that generation.
     */
    boolean contains(final long generation, final String user, final byte[] passwordUtf8)
    {
        if (0 == capacity)
        {
            return false;
        }
        final byte[] candidate = mac(user.getBytes(StandardCharsets.UTF_8), passwordUtf8);
        final Entry entry;
        synchronized (entries)
        {
            entry = entries.get(user);
        }
        return null != entry && entry.generation == generation && MessageDigest.isEqual(entry.mac, candidate);
    }

    /**
     * Remembers a verified password (replacing the user's previous one).
     */
    void put(final long generation, final String user, final byte[] passwordUtf8)
    {
        if (0 == capacity)
        {
            return;
        }
        final Entry entry = new Entry(generation, mac(user.getBytes(StandardCharsets.UTF_8), passwordUtf8));
        synchronized (entries)
        {
            entries.put(user, entry);
        }
    }

    void clear()
    {
        synchronized (entries)
        {
            entries.clear();
        }
    }

    int size()
    {
        synchronized (entries)
        {
            return entries.size();
        }
    }

    /**
     * What is kept of one verified credential: the file generation and the keyed MAC, nothing else.
     */
    private record Entry(long generation, byte[] mac)
    {
    }
}
