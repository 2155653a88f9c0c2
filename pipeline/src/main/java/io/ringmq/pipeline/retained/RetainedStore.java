package io.ringmq.pipeline.retained;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.subscription.LevelTable;
import io.ringmq.pipeline.subscription.TopicLevels;
import org.agrona.DirectBuffer;

import java.util.function.Consumer;

/**
 * Retained messages in a trie over topic levels, so that a new subscription finds its retained messages by
 * walking its filter through the trie instead of scanning every retained message. A message with an empty
 * payload clears the topic [MQTT-3.3.1-10]. Single writer: the routing stage.
 */
public final class RetainedStore
{
    private final Node root = new Node(null, null);
    private int size;
    private long payloadBytes;

    /**
     * Stores, replaces, or (empty payload) clears the retained message of a topic.
     */
    public void put(final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final int qos)
    {
        final byte[] topicBytes = new byte[topicLength];
        topic.getBytes(topicOffset, topicBytes);
        if (payloadLength == 0)
        {
            clear(topicBytes);
            return;
        }
        Node node = root;
        for (final byte[] level : TopicLevels.split(topicBytes))
        {
            Node child = node.children.get(level);
            if (null == child)
            {
                child = new Node(node, level);
                node.children.put(level, child);
            }
            node = child;
        }
        final byte[] payloadBytesCopy = new byte[payloadLength];
        payload.getBytes(payloadOffset, payloadBytesCopy);
        if (null == node.message)
        {
            size++;
        }
        else
        {
            payloadBytes -= node.message.payload().length;
        }
        payloadBytes += payloadLength;
        node.message = new Message(topicBytes, payloadBytesCopy, qos, true);
    }

    /**
     * Visits every retained message whose topic matches the filter; '+' and '#' in the first level do not match
     * topics that start with '$'.
     */
    public void match(final String filter, final Consumer<Message> consumer)
    {
        final byte[][] levels = TopicLevels.split(filter);
        collect(root, levels, 0, consumer);
    }

    public int size()
    {
        return size;
    }

    public long payloadBytes()
    {
        return payloadBytes;
    }

    private void clear(final byte[] topic)
    {
        Node node = root;
        for (final byte[] level : TopicLevels.split(topic))
        {
            node = node.children.get(level);
            if (null == node)
            {
                return;
            }
        }
        if (null != node.message)
        {
            payloadBytes -= node.message.payload().length;
            node.message = null;
            size--;
            while (null != node.parent && null == node.message && node.children.isEmpty())
            {
                node.parent.children.remove(node.level);
                node = node.parent;
            }
        }
    }

    private static void collect(final Node node, final byte[][] levels, final int index,
        final Consumer<Message> consumer)
    {
        if (index == levels.length)
        {
            if (null != node.message)
            {
                consumer.accept(node.message);
            }
            return;
        }
        final byte[] level = levels[index];
        final boolean first = index == 0;
        if (level.length == 1 && level[0] == '#')
        {
            if (null != node.message)
            {
                consumer.accept(node.message); // "a/#" matches "a"
            }
            node.children.forEach(child -> collectAll(child, first, consumer));
        }
        else if (level.length == 1 && level[0] == '+')
        {
            node.children.forEach(child ->
            {
                if (!(first && isDollar(child.level)))
                {
                    collect(child, levels, index + 1, consumer);
                }
            });
        }
        else
        {
            final Node child = node.children.get(level);
            if (null != child)
            {
                collect(child, levels, index + 1, consumer);
            }
        }
    }

    private static void collectAll(final Node node, final boolean skipDollar, final Consumer<Message> consumer)
    {
        if (skipDollar && isDollar(node.level))
        {
            return;
        }
        if (null != node.message)
        {
            consumer.accept(node.message);
        }
        node.children.forEach(child -> collectAll(child, false, consumer));
    }

    private static boolean isDollar(final byte[] level)
    {
        return level.length > 0 && level[0] == '$';
    }

    private static final class Node
    {
        private final Node parent;
        private final byte[] level;
        private final LevelTable<Node> children = new LevelTable<>();
        private Message message;

        Node(final Node parent, final byte[] level)
        {
            this.parent = parent;
            this.level = level;
        }
    }
}
