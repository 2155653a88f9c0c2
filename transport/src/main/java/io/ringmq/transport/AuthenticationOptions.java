package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The {@code ringmq} options that say who may connect and to what (a picocli mixin of {@link Main}): the
 * {@code --user} and its password's source, the password and ACL files, and anonymous clients.
 */
final class AuthenticationOptions
{
    @Option(names = "--user", description = "A user name clients may connect with (with --pass).", order = 50)
    String user;

    @Option(names = "--pass", description = "The password of --user (shows in 'ps': prefer --pass-file or "
        + "--pass-env).", order = 60)
    String pass;

    @Option(names = "--pass-file", paramLabel = "FILE",
        description = "Read the password of --user from the first line of FILE.", order = 70)
    Path passFile;

    @Option(names = "--pass-env", paramLabel = "VAR",
        description = "Read the password of --user from the environment variable VAR.", order = 80)
    String passEnv;

    @Option(names = "--password-file", paramLabel = "FILE",
        description = "user:hash lines (PBKDF2-SHA512, as written by 'ringmq passwd' or mosquitto_passwd).",
        order = 190)
    Path passwordFile;

    @Option(names = "--acl-file", paramLabel = "FILE",
        description = "Access control in Mosquitto's acl_file format (user, topic, pattern lines); reloaded with "
            + "the password file. Without it every topic is open but $SYS, which clients may only read.", order = 200)
    Path aclFile;

    @Option(names = "--use-username-as-clientid",
        description = "A client's id is its user name (Mosquitto's use_username_as_clientid): no user can take "
            + "over another's session; clients without a user name are refused.", order = 210)
    boolean useUserNameAsClientId;

    @Option(names = "--check-retain-source", paramLabel = "true|false", arity = "1",
        description = "A retained message goes out to a new subscription only while its publisher may still write "
            + "its topic under the ACL file (Mosquitto's check_retain_source; default: ${DEFAULT-VALUE}).",
        order = 215)
    boolean checkRetainSource = true;

    @Option(names = "--anonymous", paramLabel = "WHO",
        description = "Who may connect without a user name: loopback, all or none (default: ${DEFAULT-VALUE}).",
        order = 220)
    String anonymous = "loopback";

    /**
     * Copies these options into {@code context}, reading the password of {@code --user} from where it is given.
     */
    void applyTo(final BrokerContext context)
    {
        context.auth(a -> a
            .anonymous(OptionValues.parseEnum(Authenticator.AnonymousPolicy.class, anonymous, "--anonymous"))
            .credentials(user, password())
            .passwordFile(passwordFile)
            .aclFile(aclFile)
            .useUserNameAsClientId(useUserNameAsClientId)
            .checkRetainSource(checkRetainSource));
    }

    /**
     * @return the password of --user from --pass, --pass-file or --pass-env (at most one), or null.
     */
    String password()
    {
        final int given = (null != pass ? 1 : 0) + (null != passFile ? 1 : 0) + (null != passEnv ? 1 : 0);
        if (given > 1)
        {
            throw new IllegalArgumentException("--pass, --pass-file and --pass-env exclude each other");
        }
        if (null != passFile)
        {
            try
            {
                final List<String> lines = Files.readAllLines(passFile, StandardCharsets.UTF_8);
                if (lines.isEmpty() || lines.get(0).isEmpty())
                {
                    throw new IllegalArgumentException("--pass-file " + passFile + " is empty");
                }
                return lines.get(0);
            }
            catch (final IOException ex)
            {
                throw new IllegalArgumentException("--pass-file: cannot read " + passFile + ": " + ex.getMessage());
            }
        }
        if (null != passEnv)
        {
            final String value = System.getenv(passEnv);
            if (null == value || value.isEmpty())
            {
                throw new IllegalArgumentException("--pass-env: " + passEnv + " is not set");
            }
            return value;
        }
        return pass;
    }
}
