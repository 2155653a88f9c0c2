package io.ringmq.loadtest;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A broker started fresh for one run of a matrix, on a free loopback port, and stopped with SIGTERM after it:
 * ringmq from its jar, Mosquitto from the Debian package (with {@code set_tcp_nodelay true}, its fastest
 * setting), Moquette from Maven Central (resolved with Maven, telemetry off), or any broker given as a command
 * line with {@code {port}} in it.
 */
final class BrokerProcess implements AutoCloseable
{
    static final String MOQUETTE_VERSION = "0.17";

    final String name;
    final int port;
    final Process process;

    private BrokerProcess(final String name, final int port, final Process process)
    {
        this.name = name;
        this.port = port;
        this.process = process;
    }

    static BrokerProcess start(final String name, final Path folder, final Path ringmqJar,
        final Map<String, String> commands, final List<String> ringmqArgs) throws IOException, InterruptedException
    {
        final int port = freePort();
        Files.createDirectories(folder);
        final List<String> command = new ArrayList<>();
        if (commands.containsKey(name))
        {
            for (final String part : commands.get(name).split("\\s+"))
            {
                command.add(part.replace("{port}", Integer.toString(port)));
            }
        }
        else if ("ringmq".equals(name))
        {
            if (!Files.isReadable(ringmqJar))
            {
                throw new IOException("ringmq jar not found at " + ringmqJar + " (build it: mvn -B package -DskipTests)");
            }
            command.addAll(List.of(ProcessHandle.current().info().command().orElse("java"), "-jar",
                ringmqJar.toString(), "--bind", "127.0.0.1", "--port", Integer.toString(port),
                "--data-dir", folder.resolve("ringmq-data").toString())); // a store of its own per run
            command.addAll(ringmqArgs);
        }
        else if ("mosquitto".equals(name))
        {
            final Path config = folder.resolve("mosquitto.conf");
            Files.writeString(config, "listener " + port + " 127.0.0.1\nallow_anonymous true\n" +
                "set_tcp_nodelay true\nmax_queued_messages 1000\n");
            command.addAll(List.of("mosquitto", "-c", config.toString()));
        }
        else if ("moquette".equals(name))
        {
            final Path config = folder.resolve("config");
            Files.createDirectories(config);
            // telemetry off: it would call out to the internet; persistence off, as for the other brokers
            Files.writeString(config.resolve("moquette.conf"), "port " + port + "\nhost 127.0.0.1\n" +
                "allow_anonymous true\npersistence_enabled false\ntelemetry_enabled false\n" +
                "allow_zero_byte_client_id true\n");
            command.addAll(List.of(ProcessHandle.current().info().command().orElse("java"),
                "-Dmoquette.path=" + folder.toAbsolutePath(), "-cp", moquetteClasspath(folder.getParent()),
                "io.moquette.broker.Server"));
        }
        else
        {
            throw new IOException("unknown broker '" + name + "': give its command in the matrix's \"commands\"");
        }
        final Process process = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(folder.resolve(name + ".log").toFile()).start();
        final BrokerProcess broker = new BrokerProcess(name, port, process);
        broker.awaitListening();
        return broker;
    }

    private void awaitListening() throws IOException, InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline)
        {
            if (!process.isAlive())
            {
                throw new IOException(name + " exited with " + process.exitValue() + " before listening");
            }
            try (Socket socket = new Socket())
            {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            }
            catch (final IOException notYet)
            {
                Thread.sleep(100);
            }
        }
        close();
        throw new IOException(name + " did not listen on " + port + " within 30 s");
    }

    /**
     * Resolves Moquette and its dependencies from Maven Central with the machine's Maven, once per folder.
     */
    private static String moquetteClasspath(final Path work) throws IOException, InterruptedException
    {
        final Path pom = work.resolve("moquette-pom.xml");
        final Path classpath = work.resolve("moquette.classpath");
        if (!Files.exists(classpath))
        {
            Files.writeString(pom, "<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0" +
                "</modelVersion><groupId>bench</groupId><artifactId>moquette-runner</artifactId><version>1" +
                "</version><dependencies><dependency><groupId>io.moquette</groupId><artifactId>moquette-broker" +
                "</artifactId><version>" + MOQUETTE_VERSION + "</version></dependency></dependencies></project>");
            final Process mvn = new ProcessBuilder("mvn", "-q", "-B", "-f", pom.toString(),
                "dependency:build-classpath", "-Dmdep.outputFile=" + classpath.toAbsolutePath())
                .redirectErrorStream(true).redirectOutput(work.resolve("moquette-mvn.log").toFile()).start();
            if (!mvn.waitFor(10, TimeUnit.MINUTES) || mvn.exitValue() != 0 || !Files.exists(classpath))
            {
                throw new IOException("could not resolve io.moquette:moquette-broker:" + MOQUETTE_VERSION +
                    " with Maven (see " + work.resolve("moquette-mvn.log") + ")");
            }
        }
        return Files.readString(classpath).strip();
    }

    long pid()
    {
        return process.pid();
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
    }

    public void close()
    {
        process.destroy(); // SIGTERM
        try
        {
            if (!process.waitFor(15, TimeUnit.SECONDS))
            {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
        catch (final InterruptedException ex)
        {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
