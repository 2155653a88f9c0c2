package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.StoreException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link DirectoryLock} against a second broker in this JVM (tests, embedding) and in another process: the OS lock
 * is one per process and file, and closing any descriptor of the file lets go of it, so a refused attempt here must
 * not open the file at all.
 */
class DirectoryLockTest
{
    private static final String LOCKER = String.join("\n",
        "import java.nio.channels.FileChannel;",
        "import java.nio.file.Path;",
        "import java.nio.file.StandardOpenOption;",
        "public class Locker {",
        "    public static void main(String[] args) throws Exception {",
        "        try (FileChannel c = FileChannel.open(Path.of(args[0]), StandardOpenOption.WRITE)) {",
        "            System.exit(null == c.tryLock() ? 1 : 0);",
        "        }",
        "    }",
        "}", "");

    @TempDir
    Path dir;

    @Test
    void aSecondLockInThisJvmIsRefusedAndTheFirstStillHoldsAgainstAnotherProcess() throws Exception
    {
        final Path data = dir.resolve("data");
        try (DirectoryLock first = DirectoryLock.acquire(data))
        {
            assertThatThrownBy(() -> DirectoryLock.acquire(data)).isInstanceOf(StoreException.class)
                .hasMessageContaining("in use by another broker");
            assertThatThrownBy(() -> DirectoryLock.acquire(dir.resolve("./data/../data")))
                .as("the same directory by another name").isInstanceOf(StoreException.class);
            assertThat(lockedByAnotherProcess(data.resolve(DirectoryLock.FILE)))
                .as("the refused attempt did not let go of the first broker's lock").isFalse();
        }
        try (DirectoryLock again = DirectoryLock.acquire(data))
        {
            assertThat(again).as("let go at close").isNotNull();
        }
    }

    /**
     * @return whether another process could take the lock (it lets go of it at once).
     */
    private boolean lockedByAnotherProcess(final Path file) throws Exception
    {
        final Path source = dir.resolve("Locker.java");
        Files.writeString(source, LOCKER);
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final Process process = new ProcessBuilder(java, source.toString(), file.toString())
            .redirectErrorStream(true).redirectOutput(dir.resolve("locker.out").toFile()).start();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("locker finished").isTrue();
        assertThat(process.exitValue()).as(Files.readString(dir.resolve("locker.out"))).isIn(0, 1);
        return 0 == process.exitValue();
    }
}
