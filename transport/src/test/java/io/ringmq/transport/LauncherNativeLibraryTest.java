package io.ringmq.transport;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code bin/ringmq}'s cache of RocksDB's native library, through {@code --dry-run} on a small stand-in jar: inflated
 * once per jar, found through {@code -Djava.library.path}, replaced when the jar changes, and never fatal (no cache,
 * no library in the jar, an empty file left there).
 */
@Timeout(60)
class LauncherNativeLibraryTest
{
    private static final String LIBRARY = "librocksdbjni-linux64.so";

    @TempDir
    Path directory;
    private Path cache;

    @BeforeEach
    void onX8664Linux()
    {
        LauncherDryRun.assumeLauncher();
        assumeTrue(System.getProperty("os.name").startsWith("Linux") &&
            List.of("amd64", "x86_64").contains(System.getProperty("os.arch")), "the launcher test runs on x86-64 Linux");
        cache = directory.resolve("cache");
    }

    @Test
    @DisplayName("inflated once per jar into the cache and put first on java.library.path; a new jar replaces it")
    void inflatedOncePerJar() throws Exception
    {
        final Path jar = jar("jar-1.jar", "library one");
        final String command = dryRun(jar, cache.toString());
        final Path library = onlyLibrary();
        assertThat(Files.readString(library)).isEqualTo("library one");
        assertThat(command).contains("-Djava.library.path=" + library.getParent() + ":/usr/java/packages/lib");
        final long modified = Files.getLastModifiedTime(library).toMillis();

        assertThat(dryRun(jar, cache.toString())).isEqualTo(command);
        assertThat(Files.getLastModifiedTime(library).toMillis()).as("not inflated again").isEqualTo(modified);

        final Path newer = jar("jar-1.jar", "library two, a longer one");
        assertThat(dryRun(newer, cache.toString())).doesNotContain(library.getParent().toString());
        assertThat(Files.readString(onlyLibrary())).isEqualTo("library two, a longer one");
        assertThat(library.getParent()).as("the old jar's copy is gone").doesNotExist();
    }

    @Test
    @DisplayName("a jar behind a symbolic link replaced where it points (the link unchanged) is inflated again: the " +
        "new jar's classes never meet the old jar's library")
    void aJarReplacedBehindItsLinkIsInflatedAgain() throws Exception
    {
        jar("ringmq-current.jar", "library one");
        final Path link = Files.createSymbolicLink(directory.resolve("ringmq.jar"), Path.of("ringmq-current.jar"));
        dryRun(link, cache.toString());
        assertThat(Files.readString(onlyLibrary())).isEqualTo("library one");

        jar("ringmq-current.jar", "library two, a longer one"); // an upgrade in place, the link kept
        dryRun(link, cache.toString());
        assertThat(Files.readString(onlyLibrary())).isEqualTo("library two, a longer one");
    }

    @Test
    @DisplayName("a cache directory whose name holds pattern characters keeps the library it just inflated")
    void aCacheNamedWithPatternCharactersKeepsItsLibrary() throws Exception
    {
        cache = directory.resolve("ca[c]he*");
        final Path jar = jar("jar.jar", "library");
        final String command = dryRun(jar, cache.toString());
        final Path library = onlyLibrary();
        assertThat(command).contains("-Djava.library.path=").contains(library.getParent().getFileName().toString());
        assertThat(dryRun(jar, cache.toString())).isEqualTo(command);
        assertThat(library).hasContent("library");
    }

    @Test
    @DisplayName("an empty file where the library should be is inflated again, never used")
    void anEmptyLibraryIsInflatedAgain() throws Exception
    {
        final Path jar = jar("jar.jar", "library");
        dryRun(jar, cache.toString());
        final Path library = onlyLibrary();
        Files.write(library, new byte[0]);
        dryRun(jar, cache.toString());
        assertThat(Files.readString(library)).isEqualTo("library");
    }

    @Test
    @DisplayName("a library cut short in the cache (a full disk, a crash) is inflated again, never mapped")
    void aTruncatedLibraryIsInflatedAgain() throws Exception
    {
        final Path jar = jar("jar.jar", "library, whole");
        dryRun(jar, cache.toString());
        final Path library = onlyLibrary();
        Files.writeString(library, "library"); // the first bytes only
        dryRun(jar, cache.toString());
        assertThat(library).hasContent("library, whole");
    }

    @Test
    @DisplayName("no library path, and a normal start, with --persistence memory, an unwritable cache or a jar without " +
        "the library; no temporary file is left")
    void neverFatal() throws Exception
    {
        final Path jar = jar("jar.jar", "library");
        assertThat(dryRun(jar, cache.toString(), "--persistence", "memory")).doesNotContain("java.library.path");
        final Path file = Files.writeString(directory.resolve("a-file"), "not a directory");
        assertThat(dryRun(jar, file.resolve("cache").toString())).doesNotContain("java.library.path");

        final Path empty = directory.resolve("empty.jar");
        try (ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(empty)))
        {
            zip.putNextEntry(new ZipEntry("META-INF/MANIFEST.MF"));
            zip.write("Manifest-Version: 1.0\n".getBytes(StandardCharsets.US_ASCII));
        }
        assertThat(dryRun(empty, cache.toString())).doesNotContain("java.library.path");
        try (Stream<Path> files = Files.walk(cache))
        {
            assertThat(files.filter(Files::isRegularFile)).as("nothing half-written left").isEmpty();
        }
    }

    private Path jar(final String name, final String library) throws IOException
    {
        final Path jar = directory.resolve(name);
        try (ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(jar)))
        {
            zip.putNextEntry(new ZipEntry(LIBRARY));
            zip.write(library.getBytes(StandardCharsets.US_ASCII));
        }
        return jar;
    }

    private Path onlyLibrary() throws IOException
    {
        try (Stream<Path> files = Files.walk(cache))
        {
            final List<Path> libraries = files.filter(p -> p.getFileName().toString().equals(LIBRARY)).toList();
            assertThat(libraries).hasSize(1);
            return libraries.get(0);
        }
    }

    private String dryRun(final Path jar, final String cacheDir, final String... args) throws Exception
    {
        return LauncherDryRun.run(List.of(), Map.of("RINGMQ_JAR", jar.toString(), "RINGMQ_CACHE_DIR", cacheDir), 0,
            args);
    }
}
