package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.List;

import static io.ringmq.transport.Main.DEFAULTS;

/**
 * The {@code ringmq} options of the network edge (a picocli mixin of {@link Main}): the default listener, the other
 * listeners, and the limits a connection meets before it has connected.
 */
final class NetworkOptions
{
    @Option(names = {"-b", "--bind"}, paramLabel = "ADDRESS", description = "Address of the default listener "
        + "(default: 0.0.0.0).", order = 20)
    String bind;

    @Option(names = {"-p", "--port"}, description = "Port of the default listener; 0 picks a free one (default: "
        + "1883; with --listener and no --port or --bind, no default listener).", order = 30)
    Integer port;

    @Option(names = "--listener", paramLabel = "SPEC", description = "Another listener: PORT[@ADDRESS][,name=value]..."
        + " with the names of a mosquitto.conf listener section: protocol=mqtt|websockets, certfile, keyfile, cafile, "
        + "capath, require_certificate, use_identity_as_username, use_subject_as_username, crlfile, tls_version, "
        + "ciphers, ciphers_tls1.3, max_connections, max_qos, accept_protocol_versions=3|4|5, mount_point, "
        + "proxy_protocol=v1|v2|any, websocket_path; repeatable.", order = 40)
    List<String> listenerSpecs = new ArrayList<>();

    // the network edge's limits
    @Option(names = "--max-connect-size", paramLabel = "BYTES",
        description = "Largest first packet (a CONNECT) before a client has connected, judged from its fixed header "
            + "(default: ${DEFAULT-VALUE}).", order = 550)
    int maxConnectSize = 64 * 1024;

    @Option(names = "--max-connections-per-address", paramLabel = "N",
        description = "Connections held at once from one remote address; loopback is exempt unless "
            + "--limit-loopback (default: ${DEFAULT-VALUE}).", order = 560)
    int maxConnectionsPerAddress = 1_000;

    @Option(names = "--limit-loopback", description = "Apply --max-connections-per-address, and the shares one "
        + "address may hold (of the CONNECTs kept for SCRAM exchanges, of --max-message-memory, of the retained walks), "
        + "to loopback too.", order = 570)
    boolean limitLoopback;

    /**
     * Copies these options into {@code context}, with the config file's listeners.
     *
     * @param fromFile what the config file said beyond options (its listeners), or null without one.
     */
    void applyTo(final BrokerContext context, final ConfigFile.Parsed fromFile)
    {
        context.bindAddress(null == bind ? DEFAULTS.bindAddress() : bind)
            .port(null == port ? DEFAULTS.port() : port)
            .maxConnectSize(maxConnectSize)
            .maxConnectionsPerAddress(maxConnectionsPerAddress)
            .limitLoopback(limitLoopback);
        listeners(context, fromFile);
    }

    /**
     * The listeners: the default one (kept unless listeners are given and neither --port nor --bind is, as
     * Mosquitto does), the config file's {@code listener} sections, then {@code --listener}.
     */
    private void listeners(final BrokerContext context, final ConfigFile.Parsed fromFile)
    {
        final List<ListenerSettings> extra = new ArrayList<>();
        if (null != fromFile)
        {
            for (final String[] directive : fromFile.defaultListener)
            {
                ConfigFile.applyListener(context.defaultListener(), directive[0], directive[1], directive[2]);
            }
            extra.addAll(fromFile.listeners);
            fromFile.bridges.forEach(context::addBridge);
        }
        for (final String spec : listenerSpecs)
        {
            extra.add(ConfigFile.parseListener(spec));
        }
        extra.forEach(context::addListener);
        context.hasDefaultListener(extra.isEmpty() || null != port || null != bind);
    }
}
