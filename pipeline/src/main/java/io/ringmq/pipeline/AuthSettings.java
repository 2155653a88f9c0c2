package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.CredentialSettings;

import java.nio.file.Path;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * Who may connect and what each client may do, a part of {@link BrokerContext} (the {@code --anonymous},
 * {@code --user}, {@code --pass}, {@code --password-file}, {@code --acl-file}, {@code --use-username-as-clientid}
 * and {@code --check-retain-source} flags, and password checking's own part). The files are read again at a reload,
 * and {@code --anonymous} is live; the rest is fixed at start.
 */
public final class AuthSettings extends LiveSettings<AuthSettings>
{
    private Authenticator.AnonymousPolicy anonymous = Authenticator.AnonymousPolicy.LOOPBACK;
    private String user;
    private String password;
    private Path passwordFile;
    private Path aclFile;
    private boolean useUserNameAsClientId;
    private boolean checkRetainSource = true;
    /** Password checking: credential workers, per-address back-off, cache of verified credentials. */
    private final CredentialSettings credentialSettings = new CredentialSettings();

    /**
     * Checks these settings (the files are read by the auth stage, not here).
     *
     * @throws IllegalArgumentException naming the flag whose value cannot work.
     */
    AuthSettings conclude()
    {
        check((null == user) == (null == password), "--user and --pass go together");
        credentialSettings.conclude();
        return this;
    }

    public Authenticator.AnonymousPolicy anonymous()
    {
        return anonymous;
    }

    public AuthSettings anonymous(final Authenticator.AnonymousPolicy anonymous)
    {
        this.anonymous = anonymous;
        return this;
    }

    public String user()
    {
        return user;
    }

    public String password()
    {
        return password;
    }

    public AuthSettings credentials(final String user, final String password)
    {
        this.user = user;
        this.password = password;
        return this;
    }

    /**
     * @return the settings of password checking (threads, queue, back-off, cache), to change in place.
     */
    public CredentialSettings credentialSettings()
    {
        return credentialSettings;
    }

    public Path passwordFile()
    {
        return passwordFile;
    }

    public AuthSettings passwordFile(final Path passwordFile)
    {
        this.passwordFile = passwordFile;
        return this;
    }

    /**
     * @return the ACL file (Mosquitto's acl_file format), or null: everything open but writes to {@code $SYS}.
     */
    public Path aclFile()
    {
        return aclFile;
    }

    public AuthSettings aclFile(final Path aclFile)
    {
        this.aclFile = aclFile;
        return this;
    }

    /**
     * @return whether a client's id is its user name (Mosquitto's use_username_as_clientid); a client without one
     * is then refused.
     */
    public boolean useUserNameAsClientId()
    {
        return useUserNameAsClientId;
    }

    public AuthSettings useUserNameAsClientId(final boolean useUserNameAsClientId)
    {
        this.useUserNameAsClientId = useUserNameAsClientId;
        return this;
    }

    /**
     * @return whether a retained message goes out to a new subscription only while its publisher (kept with every
     * retained message, whatever this says) may still write its topic under the ACL file in force (Mosquitto's
     * {@code check_retain_source}, on by default there too).
     */
    public boolean checkRetainSource()
    {
        return checkRetainSource;
    }

    public AuthSettings checkRetainSource(final boolean checkRetainSource)
    {
        this.checkRetainSource = checkRetainSource;
        return this;
    }

    @Override
    public String toString()
    {
        return "anonymous=" + anonymous.name().toLowerCase() + (null != user ? " user=" + user : "") +
            (null != passwordFile ? " password-file=" + passwordFile : "") +
            (null != aclFile ? " acl-file=" + aclFile : "") +
            (useUserNameAsClientId ? " use-username-as-clientid" : "") +
            (checkRetainSource ? "" : " check-retain-source=false") + " " + credentialSettings;
    }
}
