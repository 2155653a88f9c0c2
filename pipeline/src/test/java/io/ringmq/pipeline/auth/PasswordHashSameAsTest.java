package io.ringmq.pipeline.auth;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A reload keeps a connection admitted under a password-file entry only while the user's entry is the same secret:
 * judged on the entries themselves, the same way as on their encodings.
 */
class PasswordHashSameAsTest
{
    @Test
    void anEntryIsTheSameAsItsOwnEncodingParsedAgain()
    {
        final PasswordHash entry = PasswordHash.create("secret", 1_000);
        assertThat(entry.sameAs(entry)).isTrue();
        assertThat(entry.sameAs(PasswordHash.parse(entry.encode()))).isTrue();
        final PasswordHash scram = PasswordHash.createScram("secret", 4_096);
        assertThat(scram.sameAs(PasswordHash.parse(scram.encode()))).isTrue();
    }

    @Test
    void anotherSaltIterationCountOrKindIsAnotherEntry()
    {
        final PasswordHash entry = PasswordHash.create("secret", 1_000);
        assertThat(entry.sameAs(PasswordHash.create("secret", 1_000))).as("a fresh salt").isFalse();
        assertThat(entry.sameAs(PasswordHash.create("secret", 1_001))).isFalse();
        final PasswordHash scram = PasswordHash.createScram("secret", 4_096);
        assertThat(entry.sameAs(scram)).isFalse();
        assertThat(scram.sameAs(entry)).isFalse();
        assertThat(scram.sameAs(PasswordHash.createScram("secret", 4_096))).isFalse();
        for (final PasswordHash a : new PasswordHash[]{entry, scram})
        {
            for (final PasswordHash b : new PasswordHash[]{entry, scram})
            {
                assertThat(a.sameAs(b)).as("as their encodings say").isEqualTo(a.encode().equals(b.encode()));
            }
        }
    }
}
