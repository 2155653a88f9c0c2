package io.ringmq.transport;

import io.ringmq.persistence.RocksDbSettings;
import io.ringmq.persistence.RocksDbStoreOpener;
import io.ringmq.pipeline.AuthSettings;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.persistence.StoreException;

import java.io.IOException;

/**
 * What a broker opens from its configuration before it binds a port: the password file, read into the
 * {@link Authenticator} the auth stage checks credentials with, and the data directory of the {@link DurableStore}.
 * It keeps nothing: what it opens is the caller's to close. Runs on the thread that launches the broker.
 */
final class StartupFiles
{
    private StartupFiles()
    {
    }

    /**
     * @return the authenticator of the context's anonymous policy, {@code --user}/{@code --pass} and password file.
     * @throws IOException when the password file cannot be read, with a one-line reason.
     */
    static Authenticator authenticator(final BrokerContext context) throws IOException
    {
        final AuthSettings auth = context.auth();
        PasswordFile passwordFile = null;
        if (null != auth.passwordFile())
        {
            try
            {
                passwordFile = PasswordFile.load(auth.passwordFile());
            }
            catch (final IOException ex)
            {
                throw new IOException("cannot read password file " + auth.passwordFile() + ": " + ex, ex);
            }
        }
        return new Authenticator(auth.anonymous(), auth.user(), auth.password(), passwordFile,
            auth.credentialSettings().cacheSize());
    }

    /**
     * Opens the store {@code --persistence} asks for: RocksDB under {@code --data-dir} (created and opened at the
     * first record to keep when the directory is missing or empty), or nothing kept.
     *
     * @throws IOException when it cannot be opened (in use by another broker, not a directory, damaged under
     *                     {@code --strict-recovery}), with a one-line reason.
     */
    static DurableStore openStore(final BrokerContext context) throws IOException
    {
        if (!context.persistence().persistent())
        {
            return MemoryStore.none();
        }
        try
        {
            return RocksDbStoreOpener.open(RocksDbSettings.defaults(context.persistence().dataDir())
                .withDurability(context.persistence().durability())
                .withFsyncIntervalMs(context.persistence().fsyncIntervalMs())
                .withBlockCacheLength(context.persistence().cacheBytes())
                .withWriteBufferLength(context.persistence().writeBufferBytes())
                .withStrict(context.persistence().strictRecovery()));
        }
        catch (final StoreException ex)
        {
            throw new IOException(ex.getMessage(), ex);
        }
    }
}
