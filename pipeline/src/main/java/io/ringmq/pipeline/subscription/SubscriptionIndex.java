package io.ringmq.pipeline.subscription;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The subscription index: a trie over topic levels with a dedicated slot for '+' and for '#' at every node, so
 * matching a topic costs one hash lookup per level plus the wildcard branches, whatever the number of filters.
 * Topics starting with '$' are not matched by a '+' or '#' in the first level [MQTT-4.7.2-1].
 * <p>
 * Single writer: the routing stage owns it. Matching is iterative over a reused work stack, so a topic of any depth
 * costs no call stack, and allocates nothing in steady state; a subscriber that matches through
 * several filters is reported once per filter, and the caller folds those into one delivery.
 *
 * @param <S> the subscriber (a session).
 */
public final class SubscriptionIndex<S>
{
    /** Receives each match. */
    @FunctionalInterface
    public interface Matcher<S>
    {
        /**
         * @param subscriber who subscribed.
         * @param options    the subscription options byte (QoS in bits 0..1).
         */
        void onMatch(S subscriber, int options);
    }

    private static final byte[] PLUS = {'+'};
    private static final byte[] HASH = {'#'};
    private static final Object[] NO_SUBSCRIBERS = new Object[0];
    private static final int[] NO_OPTIONS = new int[0];

    private static final int INITIAL_STACK_CAPACITY = 32;
    private static final int MAX_KEPT_STACK_CAPACITY = 1024;

    private final Node<S> root = new Node<>(null, null);
    private int filterCount;

    // the match work stack: pairs of (trie node, offset in the topic of the level it is compared with), reused by
    // every match; an instance field because the index has one owner thread (the routing stage)
    private Object[] stackNodes = new Object[INITIAL_STACK_CAPACITY];
    private int[] stackPositions = new int[INITIAL_STACK_CAPACITY];
    private int stackSize;

    /**
     * Adds or replaces the subscription of {@code subscriber} to {@code filter}.
     *
     * @return true when it is new, false when it replaced an existing one [MQTT-3.8.4-3].
     */
    public boolean subscribe(final String filter, final S subscriber, final int options)
    {
        Node<S> node = root;
        for (final byte[] level : TopicLevels.split(filter))
        {
            node = node.childFor(level);
        }
        final boolean added = node.add(subscriber, options);
        if (added)
        {
            filterCount++;
        }
        return added;
    }

    /**
     * Removes the subscription of {@code subscriber} to {@code filter}.
     *
     * @return true when there was one.
     */
    public boolean unsubscribe(final String filter, final S subscriber)
    {
        Node<S> node = root;
        for (final byte[] level : TopicLevels.split(filter))
        {
            node = node.existingChild(level);
            if (null == node)
            {
                return false;
            }
        }
        if (!node.remove(subscriber))
        {
            return false;
        }
        filterCount--;
        node.pruneUpwards();
        return true;
    }

    /**
     * Reports every subscription whose filter matches the topic name. Iterative over an explicit work stack, so a
     * topic of any depth (up to 32,768 levels in a 65,535-byte topic, or 65,536 empty ones) costs no call stack;
     * allocates nothing unless the work stack has to grow. Each trie node is visited at most once per match,
     * because a node's depth fixes the topic level it is compared with.
     * <p>
     * Re-entrant: a matcher may call {@code match} again (it works above the caller's part of the stack), but
     * must not subscribe or unsubscribe while a match is under way.
     */
    public void match(final DirectBuffer topic, final int offset, final int length, final Matcher<S> matcher)
    {
        final int end = offset + length;
        final boolean dollar = length > 0 && topic.getByte(offset) == '$';
        final int base = stackSize;
        try
        {
            push(root, offset);
            while (stackSize > base)
            {
                final int top = --stackSize;
                @SuppressWarnings("unchecked")
                final Node<S> node = (Node<S>)stackNodes[top];
                final int pos = stackPositions[top];
                stackNodes[top] = null; // a pruned node must not stay reachable from the stack

                if (pos > end)
                {
                    // every level consumed: this node's filter ends here
                    node.emit(matcher);
                    if (null != node.hash)
                    {
                        node.hash.emit(matcher); // "a/#" also matches "a" [MQTT-4.7.1-2]
                    }
                    continue;
                }

                // '+' and '#' in the first level do not match a topic starting with '$' [MQTT-4.7.2-1]
                final boolean wildcards = !(dollar && pos == offset);
                if (wildcards && null != node.hash)
                {
                    node.hash.emit(matcher); // '#' matches this level and everything below [MQTT-4.7.1-2]
                }
                if (node.children.isEmpty() && !(wildcards && null != node.plus))
                {
                    continue; // nothing below this node can match: no need to find or hash the level
                }
                int levelEnd = pos;
                while (levelEnd < end && topic.getByte(levelEnd) != '/')
                {
                    levelEnd++;
                }
                final int next = levelEnd + 1;
                if (wildcards && null != node.plus)
                {
                    push(node.plus, next); // '+' matches exactly this one level [MQTT-4.7.1-3]
                }
                final Node<S> child = node.children.get(topic, pos, levelEnd - pos);
                if (null != child)
                {
                    push(child, next); // pushed last, so walked first: the same order as a recursive walk
                }
            }
        }
        finally
        {
            if (stackSize > base)
            {
                // a matcher threw: drop what this call left on the stack
                Arrays.fill(stackNodes, base, stackSize, null);
                stackSize = base;
            }
            if (0 == base && stackNodes.length > MAX_KEPT_STACK_CAPACITY)
            {
                // shrink back after a deep topic, so one odd client does not keep a large stack alive
                stackNodes = new Object[INITIAL_STACK_CAPACITY];
                stackPositions = new int[INITIAL_STACK_CAPACITY];
            }
        }
    }

    /**
     * @return the number of (filter, subscriber) subscriptions held.
     */
    public int size()
    {
        return filterCount;
    }

    /**
     * @return the current capacity of the match work stack (for tests: it grows for a deep topic and shrinks
     * back after).
     */
    int stackCapacity()
    {
        return stackNodes.length;
    }

    private void push(final Node<S> node, final int pos)
    {
        if (stackSize == stackNodes.length)
        {
            final int capacity = stackNodes.length * 2;
            stackNodes = Arrays.copyOf(stackNodes, capacity);
            stackPositions = Arrays.copyOf(stackPositions, capacity);
        }
        stackNodes[stackSize] = node;
        stackPositions[stackSize++] = pos;
    }

    /**
     * @return the topic as a buffer view (allocates; for tests and set-up).
     */
    public static UnsafeBuffer bufferOf(final String topic)
    {
        return new UnsafeBuffer(topic.getBytes(StandardCharsets.UTF_8));
    }

    private static final class Node<S>
    {
        private final Node<S> parent;
        private final byte[] level;
        private final LevelTable<Node<S>> children = new LevelTable<>();
        private Node<S> plus;
        private Node<S> hash;
        private Object[] subscribers = NO_SUBSCRIBERS;
        private int[] options = NO_OPTIONS;
        private int count;

        Node(final Node<S> parent, final byte[] level)
        {
            this.parent = parent;
            this.level = level;
        }

        Node<S> childFor(final byte[] level)
        {
            if (Arrays.equals(level, PLUS))
            {
                if (null == plus)
                {
                    plus = new Node<>(this, PLUS);
                }
                return plus;
            }
            if (Arrays.equals(level, HASH))
            {
                if (null == hash)
                {
                    hash = new Node<>(this, HASH);
                }
                return hash;
            }
            Node<S> child = children.get(level);
            if (null == child)
            {
                child = new Node<>(this, level);
                children.put(level, child);
            }
            return child;
        }

        Node<S> existingChild(final byte[] level)
        {
            if (Arrays.equals(level, PLUS))
            {
                return plus;
            }
            if (Arrays.equals(level, HASH))
            {
                return hash;
            }
            return children.get(level);
        }

        boolean add(final S subscriber, final int subscriptionOptions)
        {
            for (int i = 0; i < count; i++)
            {
                if (subscribers[i] == subscriber)
                {
                    options[i] = subscriptionOptions;
                    return false;
                }
            }
            if (count == subscribers.length)
            {
                final int capacity = Math.max(2, count * 2);
                subscribers = Arrays.copyOf(subscribers, capacity);
                options = Arrays.copyOf(options, capacity);
            }
            subscribers[count] = subscriber;
            options[count++] = subscriptionOptions;
            return true;
        }

        boolean remove(final S subscriber)
        {
            for (int i = 0; i < count; i++)
            {
                if (subscribers[i] == subscriber)
                {
                    count--;
                    subscribers[i] = subscribers[count];
                    options[i] = options[count];
                    subscribers[count] = null;
                    return true;
                }
            }
            return false;
        }

        @SuppressWarnings("unchecked")
        void emit(final Matcher<S> matcher)
        {
            for (int i = 0; i < count; i++)
            {
                matcher.onMatch((S)subscribers[i], options[i]);
            }
        }

        boolean isEmpty()
        {
            return count == 0 && null == plus && null == hash && children.isEmpty();
        }

        void pruneUpwards()
        {
            Node<S> node = this;
            while (null != node.parent && node.isEmpty())
            {
                final Node<S> p = node.parent;
                if (p.plus == node)
                {
                    p.plus = null;
                }
                else if (p.hash == node)
                {
                    p.hash = null;
                }
                else
                {
                    p.children.remove(node.level);
                }
                node = p;
            }
        }
    }
}
