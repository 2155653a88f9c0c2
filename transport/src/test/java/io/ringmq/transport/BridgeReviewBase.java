package io.ringmq.transport;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What the bridge review tests open, closed after each: the sockets of the remotes they play first (a bridge writer
 * blocked on one is freed), then brokers and clients, the last opened first.
 */
abstract class BridgeReviewBase
{
    @TempDir
    Path directory;

    final List<AutoCloseable> closeables = new ArrayList<>();
    final List<Socket> sockets = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() throws Exception
    {
        for (final Socket socket : sockets)
        {
            socket.close();
        }
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
    }
}
