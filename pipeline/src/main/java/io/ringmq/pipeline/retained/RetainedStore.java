package io.ringmq.pipeline.retained;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.subscription.LevelTable;
import io.ringmq.pipeline.subscription.TopicLevels;
import org.agrona.DirectBuffer;

import java.util.Arrays;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Retained messages in a trie over topic levels, so that a new subscription finds its retained messages by
 * walking its filter through the trie instead of scanning every retained message. A message with an empty
 * payload clears the topic [MQTT-3.3.1-10].
 * <p>
 * Bounded: at most {@code maxCount} messages and {@code maxBytes} of topic plus payload bytes; a message that
 * would pass either limit is refused and the one already retained on its topic, if any, is kept. Storing,
 * clearing and matching are loops over the levels and an explicit, reused work stack, never recursion, so a
 * topic of 32,768 levels costs no call stack.
 * <p>
 * Single writer: the routing stage. A consumer given to {@link #match(String, Consumer)} must not put into the
 * store while the match is under way.
 */
public final class RetainedStore
{
    /** {@link #put} result: the topic had no retained message and now has this one [MQTT-3.3.1-5]. */
    public static final int STORED = 0;

    /** {@link #put} result: the message replaced the one retained on its topic [MQTT-3.3.1-5]. */
    public static final int REPLACED = 1;

    /**
     * {@link #put} result: the payload was empty, so the topic holds no retained message any more, whether it held
     * one before or not [MQTT-3.3.1-10].
     */
    public static final int CLEARED = 2;

    /** {@link #put} result: refused, a new topic would pass the maximum count of retained messages. */
    public static final int REFUSED_COUNT = -1;

    /** {@link #put} result: refused, the message would pass the maximum of retained topic and payload bytes. */
    public static final int REFUSED_BYTES = -2;

    /** The default maximum count of retained messages. */
    public static final int DEFAULT_MAX_COUNT = 100_000;

    /** The default maximum of retained bytes, topics and payloads together: 256 MiB. */
    public static final long DEFAULT_MAX_BYTES = 256L * 1024 * 1024;

    private static final int INITIAL_STACK_CAPACITY = 32;
    private static final int MAX_KEPT_STACK_CAPACITY = 1024;
    // a frame's filter index for a frame under a '#': it collects the node and everything below it
    private static final int ALL = -1;
    // a frame's state before the frame's node has been looked at
    private static final int UNVISITED = -1;
    // a frame's state once it hands out its node's children ({@code Walk#next})
    private static final int ITERATING = 0;

    private int maxCount;
    private long maxBytes;
    private final Node root = new Node(null, null);
    private int size;
    private long bytes;
    /**
     * What the trie's nodes hold of the heap (their objects, level copies and tables, {@link #NODE_BYTES} and the
     * level's length each): counted toward {@code maxBytes} with the messages, or a flood of retained messages on
     * deep topics (128 one-byte levels, about 18 KiB of nodes for 256 bytes of topic) fills the heap well within the
     * byte bound.
     */
    private long nodeBytes;
    /** What of {@link #nodeBytes} the nodes made for the broker's own (exempt) messages hold: not clients'. */
    private long exemptNodeBytes;
    /**
     * The nodes whose client message has an expiry, soonest first: a sweep takes only those whose time has passed,
     * never a walk of the whole trie.
     */
    private final java.util.TreeSet<Node> expiring = new java.util.TreeSet<>((a, b) ->
    {
        final int byTime = Long.compare(a.message.expiresAtMs(), b.message.expiresAtMs());
        return byTime != 0 ? byTime : Long.compare(a.sequence, b.sequence);
    });
    private long nextNodeSequence;
    private final boolean countNodes;
    /** When expired messages may be swept again: at most once a {@link #SWEEP_INTERVAL_MS}, and only at a bound. */
    private long nextSweepMs;
    /** How often a store at its bounds looks for expired messages to let go of. */
    static final long SWEEP_INTERVAL_MS = 1_000;

    /** The heap one trie node holds besides its level's bytes: the node, its level array and its child table. */
    static final int NODE_BYTES = 160;
    private long payloadBytes;

    /** The walk every {@link #matchWhile} reuses, as the store has one owner thread; null while one is under way. */
    private Walk scratch = new Walk();
    /**
     * The paused walks' frames, by the child each hands out next: a child taken out of the trie hands its frames on to
     * the child after it, so a paused walk holds only nodes in the trie (and its own frames' nodes), never a chain of
     * nodes taken out since it paused (a million cleared topics behind one paused walk held 160 MiB, review of
     * a3054d0).
     */
    private final java.util.HashMap<Node, Anchor> pins = new java.util.HashMap<>();
    private int exemptCount;
    private long exemptBytes;

    /**
     * A store with the default limits: {@value #DEFAULT_MAX_COUNT} messages and 256 MiB.
     */
    public RetainedStore()
    {
        this(DEFAULT_MAX_COUNT, DEFAULT_MAX_BYTES);
    }

    /**
     * A store whose byte bound counts the messages alone (the models of the unit tests); the broker's counts the
     * trie's nodes too.
     *
     * @param maxCount the most retained messages held, at least 1.
     * @param maxBytes the most topic plus payload bytes held, all messages together, at least 1.
     */
    public RetainedStore(final int maxCount, final long maxBytes)
    {
        this(maxCount, maxBytes, false);
    }

    /**
     * @param maxCount   the most retained messages held, at least 1.
     * @param maxBytes   the most bytes held, all messages together, at least 1.
     * @param countNodes whether the trie's nodes ({@link #NODE_BYTES} and the level's length each) count toward
     *                   {@code maxBytes} too, as the broker's store does: the heap they hold is bounded with the
     *                   messages.
     */
    public RetainedStore(final int maxCount, final long maxBytes, final boolean countNodes)
    {
        this.countNodes = countNodes;
        if (maxCount < 1)
        {
            throw new IllegalArgumentException("maxCount must be at least 1: " + maxCount);
        }
        if (maxBytes < 1)
        {
            throw new IllegalArgumentException("maxBytes must be at least 1: " + maxBytes);
        }
        this.maxCount = maxCount;
        this.maxBytes = maxBytes;
    }

    /**
     * Stores, replaces, or (empty payload) clears the retained message of a topic [MQTT-3.3.1-5]
     * [MQTT-3.3.1-10]. A message that would pass the count or the byte limit is refused, and the message retained
     * before on that topic, if any, stays; a replacement counts only the difference in bytes.
     *
     * @return {@link #STORED}, {@link #REPLACED}, {@link #CLEARED}, {@link #REFUSED_COUNT} or
     * {@link #REFUSED_BYTES}.
     */
    public int put(final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final int qos)
    {
        return put(topic, topicOffset, topicLength, payload, payloadOffset, payloadLength, qos, false);
    }

    /**
     * As {@link #put(DirectBuffer, int, int, DirectBuffer, int, int, int)}; an {@code exempt} message (the
     * broker's own, $SYS) is neither refused by the limits nor counted against what clients may retain.
     */
    public int put(final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final int qos,
        final boolean exempt)
    {
        return put(topic, topicOffset, topicLength, payload, payloadOffset, payloadLength, qos, exempt, null, 0, 0,
            Message.NEVER);
    }

    /**
     * As {@link #put(DirectBuffer, int, int, DirectBuffer, int, int, int, boolean)}, keeping the message's MQTT 5.0
     * properties (raw, as {@link io.ringmq.protocol.MessageProperties#copyForwardable} leaves them) and when it
     * expires; an expired message is no longer sent to new subscribers [MQTT-3.3.2-5].
     */
    public int put(final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final int qos,
        final boolean exempt, final DirectBuffer properties, final int propertiesOffset, final int propertiesLength,
        final long expiresAtMs)
    {
        return put(topic, topicOffset, topicLength, payload, payloadOffset, payloadLength, qos, exempt, properties,
            propertiesOffset, propertiesLength, expiresAtMs, null);
    }

    /**
     * As {@link #put(DirectBuffer, int, int, DirectBuffer, int, int, int, boolean, DirectBuffer, int, int, long)},
     * keeping who published it ({@link Message#source()}, null for none), whose bytes count with the message's.
     */
    public int put(final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final int qos,
        final boolean exempt, final DirectBuffer properties, final int propertiesOffset, final int propertiesLength,
        final long expiresAtMs, final io.ringmq.pipeline.MessageSource source)
    {
        if (payloadLength == 0)
        {
            clear(topic, topicOffset, topicLength);
            return CLEARED;
        }
        final long messageBytes = (long)topicLength + payloadLength + propertiesLength +
            (null == source ? 0 : source.bytes());
        if (!exempt && (size - exemptCount >= maxCount ||
            bytes - exemptBytes + (countNodes ? nodeBytes - exemptNodeBytes : 0) + messageBytes > maxBytes))
        {
            // at a bound: messages whose Message Expiry Interval has passed are never sent again [MQTT-3.3.2-5],
            // so they give their places to this one rather than hold them until their topics are cleared
            sweepExpired(System.currentTimeMillis());
        }

        // walk the levels that exist already, so that a refused message leaves no empty nodes behind
        final int end = topicOffset + topicLength;
        Node node = root;
        int pos = topicOffset;
        while (pos <= end)
        {
            final int levelEnd = levelEnd(topic, pos, end);
            final Node child = node.children.get(topic, pos, levelEnd - pos);
            if (null == child)
            {
                break;
            }
            node = child;
            pos = levelEnd + 1;
        }

        final long newNodeBytes = pos > end ? 0 : newNodeBytes(topic, pos, end);
        final Message old = pos > end ? node.message : null;
        final long oldBytes = null == old ? 0 : bytesOf(old);
        final boolean oldExempt = null != old && node.exempt;
        if (!exempt)
        {
            final long limitedOld = oldExempt ? 0 : oldBytes;
            if ((null == old || oldExempt) && size - exemptCount >= maxCount)
            {
                return REFUSED_COUNT;
            }
            if (bytes - exemptBytes - limitedOld + messageBytes +
                (countNodes ? nodeBytes - exemptNodeBytes + newNodeBytes : 0) > maxBytes)
            {
                return REFUSED_BYTES;
            }
        }

        while (pos <= end)
        {
            final int levelEnd = levelEnd(topic, pos, end);
            final byte[] level = new byte[levelEnd - pos];
            topic.getBytes(pos, level);
            final Node child = new Node(node, level);
            child.exemptNode = exempt;
            child.sequence = ++nextNodeSequence;
            node.children.put(level, child);
            node.append(child);
            node = child;
            pos = levelEnd + 1;
        }

        final byte[] topicBytes = new byte[topicLength];
        topic.getBytes(topicOffset, topicBytes);
        final byte[] payloadBytesCopy = new byte[payloadLength];
        payload.getBytes(payloadOffset, payloadBytesCopy);
        final byte[] propertyBytes = new byte[propertiesLength];
        if (propertiesLength > 0)
        {
            properties.getBytes(propertiesOffset, propertyBytes);
        }
        if (null != old && node.expiring)
        {
            expiring.remove(node); // its place is the old message's expiry
            node.expiring = false;
        }
        node.message = new Message(topicBytes, payloadBytesCopy, qos, true, propertyBytes, expiresAtMs, source);
        if (!exempt && expiresAtMs != Message.NEVER)
        {
            node.expiring = true;
            expiring.add(node);
        }
        bytes += messageBytes - oldBytes;
        nodeBytes += newNodeBytes;
        if (exempt)
        {
            exemptNodeBytes += newNodeBytes;
        }
        if (oldExempt)
        {
            exemptCount--;
            exemptBytes -= oldBytes;
        }
        if (exempt)
        {
            exemptCount++;
            exemptBytes += messageBytes;
        }
        node.exempt = exempt;
        if (null == old)
        {
            size++;
            payloadBytes += payloadLength;
            return STORED;
        }
        payloadBytes += payloadLength - old.payload().length;
        return REPLACED;
    }

    /**
     * Visits every retained message whose topic matches the filter: '+' matches one level, '#' the level above
     * it and everything below [MQTT-4.7.1-2]; '+' and '#' in the first level do not match topics that start with
     * '$' [MQTT-4.7.2-1]. Iterative over a reused work stack as deep as the filter or the trie.
     */
    public void match(final String filter, final Consumer<Message> consumer)
    {
        matchWhile(filter, message ->
        {
            consumer.accept(message);
            return true;
        });
    }

    /**
     * As {@link #match(String, Consumer)}, stopping as soon as the visitor returns false, so a caller with a
     * budget (the bytes one SUBSCRIBE may carry) never walks more of the store than it can use.
     */
    public void matchWhile(final String filter, final Predicate<Message> visitor)
    {
        matchWhile(filter, visitor, Long.MAX_VALUE);
    }

    /**
     * As {@link #matchWhile(String, Predicate)}, also stopping after {@code maxSteps} steps of the walk, so a
     * filter that matches little but explores much ('+/+/+/x' over a large store) has a bounded cost too.
     *
     * @return the steps taken; more than {@code maxSteps} means the walk was cut short.
     */
    public long matchWhile(final String filter, final Predicate<Message> visitor, final long maxSteps)
    {
        // a visitor that matches again (nothing does in the broker) gets a walk of its own
        final Walk walk = null == scratch ? new Walk() : scratch;
        scratch = null;
        try
        {
            walk.start(TopicLevels.split(filter), root);
            return run(walk, visitor, maxSteps);
        }
        finally
        {
            walk.clear(); // a pruned node must not stay reachable from the stack
            scratch = walk.nodes.length > MAX_KEPT_STACK_CAPACITY ? new Walk() : walk; // shrunk after a deep one
        }
    }

    /**
     * A walk along {@code filter} that may stop and go on later ({@link #resume}): the routing stage sends a large
     * SUBSCRIBE's retained messages a part at a time.
     */
    public Walk walk(final String filter)
    {
        return walk(filter, null);
    }

    /**
     * As {@link #walk(String)}, reusing {@code ended} (a walk that is done, or null) where it can.
     */
    public Walk walk(final String filter, final Walk ended)
    {
        final Walk walk = null != ended && ended.done() && ended.nodes.length <= MAX_KEPT_STACK_CAPACITY ?
            ended : new Walk();
        walk.clear();
        walk.start(TopicLevels.split(filter), root);
        return walk;
    }

    /**
     * Goes on with a walk until it ends, the visitor returns false (the message it refused is visited again next
     * time) or {@code maxSteps} steps are taken. What changes in the store between its parts neither repeats nor
     * skips a topic that was there all along: a level's children are visited in the order they were made, along links
     * a child taken out keeps ({@code Node#next}), so a walk that stopped on one goes on from it to those after it. A
     * message replaced since is visited as it is now, one cleared since is not; a topic added since is visited unless
     * the walk is past its place (its subscriber had it live too).
     *
     * @return the steps taken; more than {@code maxSteps} means the walk was cut short.
     */
    public long resume(final Walk walk, final Predicate<Message> visitor, final long maxSteps)
    {
        unpin(walk); // under way: nothing changes in the trie until it pauses again
        final long steps;
        try
        {
            steps = run(walk, visitor, maxSteps);
        }
        catch (final RuntimeException visitorThrew)
        {
            walk.clear(); // it ends here: unpinned, it would not be handed on as children leave the trie
            throw visitorThrew;
        }
        if (walk.done())
        {
            walk.clear();
        }
        else
        {
            pin(walk);
        }
        return steps;
    }

    /**
     * A paused walk that will not go on (its subscription gone, its connection ended): the store lets go of it.
     */
    public void release(final Walk walk)
    {
        unpin(walk);
        walk.clear();
    }

    /**
     * Registers a walk that paused by the child each of its frames hands out next.
     */
    private void pin(final Walk walk)
    {
        for (int i = 0; i < walk.size; i++)
        {
            final Node next = walk.next[i];
            if (null != next)
            {
                Anchor anchor = pins.get(next);
                if (null == anchor)
                {
                    anchor = new Anchor(next);
                    pins.put(next, anchor);
                }
                anchor.add(walk.pin(i));
                walk.next[i] = null; // its anchor holds it, and hands it on: the walk holds no node taken out
            }
        }
        walk.pinned = true;
    }

    /**
     * Takes a walk's frames out of the registry, each in constant time however many walks a child holds; each frame
     * hands out next the child its anchor was handed on to meanwhile.
     */
    private void unpin(final Walk walk)
    {
        if (!walk.pinned)
        {
            return;
        }
        walk.pinned = false;
        // a frame past the pins made is one that handed out nothing next when it paused (a deep walk's)
        for (int i = 0; null != walk.pins && i < Math.min(walk.size, walk.pins.length); i++)
        {
            final Pin pin = walk.pins[i];
            final Anchor anchor = null == pin ? null : pin.anchor;
            if (null == anchor)
            {
                continue;
            }
            walk.next[i] = anchor.node;
            anchor.remove(pin);
            if (0 == anchor.count && null != anchor.node)
            {
                pins.remove(anchor.node); // no frame hands that child out next any more
            }
        }
    }

    /**
     * A child leaves the trie: the paused frames that hand it out next hand out the child after it instead, in
     * constant time when no frame holds that one yet, else by moving the smaller list of frames into the larger.
     */
    private void handOn(final Node child)
    {
        if (pins.isEmpty())
        {
            return;
        }
        final Anchor moved = pins.remove(child);
        if (null == moved)
        {
            return;
        }
        final Node after = child.next;
        if (null == after)
        {
            moved.node = null; // none after it: its frames end when their walks go on
            return;
        }
        final Anchor there = pins.get(after);
        if (null == there)
        {
            moved.node = after;
            pins.put(after, moved);
            return;
        }
        final Anchor larger = there.count >= moved.count ? there : moved;
        final Anchor smaller = larger == there ? moved : there;
        for (Pin pin = smaller.head, following; null != pin; pin = following)
        {
            following = pin.after;
            larger.add(pin); // a frame moves at most log2(frames) times: each time into a list twice its list's size
        }
        smaller.head = null;
        smaller.count = 0;
        larger.node = after;
        pins.put(after, larger);
    }

    /**
     * @return the paused walks' frames the store keeps by a child in the trie (tests).
     */
    public int pinCount()
    {
        int count = 0;
        for (final Anchor anchor : pins.values())
        {
            count += anchor.count;
        }
        return count;
    }

    private long run(final Walk walk, final Predicate<Message> visitor, final long maxSteps)
    {
        walk.refused = false;
        long steps = 0;
        while (walk.size > 0 && !walk.refused)
        {
            if (++steps > maxSteps)
            {
                break;
            }
            step(walk, visitor);
        }
        return steps;
    }

    /**
     * @return the number of retained messages.
     */
    public int size()
    {
        return size;
    }

    /**
     * @return the topic plus payload bytes of every retained message, the quantity bounded by the byte limit.
     */
    public long bytes()
    {
        return bytes;
    }

    /**
     * @return the payload bytes of every retained message.
     */
    public long payloadBytes()
    {
        return payloadBytes;
    }

    /**
     * @return the most retained messages held.
     */
    public int maxCount()
    {
        return maxCount;
    }

    /**
     * @return the most topic plus payload bytes held.
     */
    public long maxBytes()
    {
        return maxBytes;
    }

    /**
     * @return the current capacity of the match work stack (for tests: it shrinks back after a deep match).
     */
    int stackCapacity()
    {
        return null == scratch ? 0 : scratch.nodes.length;
    }

    /**
     * One step of a walk on the frame on top of its stack: look at its node on the first visit, then hand out one
     * child per step, so the stack stays as deep as the trie and never as wide as a node. A message the visitor
     * refuses leaves the frame as it was: it is looked at again when the walk goes on.
     */
    private static void step(final Walk walk, final Predicate<Message> visitor)
    {
        final byte[][] levels = walk.levels;
        final int top = walk.size - 1;
        final Node node = walk.nodes[top];
        final int index = walk.indexes[top];

        if (UNVISITED == walk.cursors[top])
        {
            // under a '#' every message below it matches, every filter level matched, "a/#" matches "a" too
            // [MQTT-4.7.1-2]
            if ((ALL == index || index == levels.length || isHash(levels[index])) && !emit(walk, node, visitor))
            {
                return;
            }
            if (ALL != index && index == levels.length)
            {
                walk.pop();
                return;
            }
            if (ALL != index && !isHash(levels[index]) && !isPlus(levels[index]))
            {
                // an exact level: one child at most, so this frame is replaced rather than kept
                final Node child = node.children.get(levels[index]);
                walk.pop();
                if (null != child)
                {
                    walk.push(child, index + 1);
                }
                return;
            }
        }

        // a '#' or '+' frame, or a frame under a '#': hand out the next child, if any is left, in the order the
        // children were made
        final Node child = UNVISITED == walk.cursors[top] ? node.first : walk.next[top];
        walk.cursors[top] = ITERATING;
        if (null == child)
        {
            walk.pop();
            return;
        }
        walk.next[top] = child.next;
        // '+' and '#' in the first level skip topics that start with '$' [MQTT-4.7.2-1], a step each: 100,000 such
        // topics cost one step before, and a SUBSCRIBE of 10,000 '+/x' filters over them held routing for 12 s
        if (!(0 == index && isDollar(child.level)))
        {
            walk.push(child, ALL == index || isHash(levels[index]) ? ALL : index + 1);
        }
    }

    private void clear(final DirectBuffer topic, final int topicOffset, final int topicLength)
    {
        final int end = topicOffset + topicLength;
        Node node = root;
        int pos = topicOffset;
        while (pos <= end)
        {
            final int levelEnd = levelEnd(topic, pos, end);
            node = node.children.get(topic, pos, levelEnd - pos);
            if (null == node)
            {
                return;
            }
            pos = levelEnd + 1;
        }
        final Message old = node.message;
        if (null != old)
        {
            bytes -= bytesOf(old);
            payloadBytes -= old.payload().length;
            if (node.exempt)
            {
                exemptCount--;
                exemptBytes -= bytesOf(old);
                node.exempt = false;
            }
            if (node.expiring)
            {
                expiring.remove(node);
                node.expiring = false;
            }
            node.message = null;
            size--;
            // prune the branch that holds nothing any more, bottom up in a loop
            while (null != node.parent && null == node.message && node.children.isEmpty())
            {
                node.parent.children.remove(node.level);
                handOn(node);
                node.parent.unlink(node);
                nodeBytes -= NODE_BYTES + node.level.length;
                if (node.exemptNode)
                {
                    exemptNodeBytes -= NODE_BYTES + node.level.length;
                }
                node = node.parent;
            }
        }
    }

    /**
     * @return what the nodes for the levels of {@code topic} from {@code pos} to {@code end} would hold.
     */
    private static long newNodeBytes(final DirectBuffer topic, final int pos, final int end)
    {
        long total = 0;
        int at = pos;
        while (at <= end)
        {
            final int levelEnd = levelEnd(topic, at, end);
            total += NODE_BYTES + (levelEnd - at);
            at = levelEnd + 1;
        }
        return total;
    }

    /**
     * @return what the trie's nodes hold of the heap, counted toward the byte bound.
     */
    public long nodeBytes()
    {
        return nodeBytes;
    }

    /**
     * @return how many clients' messages have an expiry: what a sweep looks at.
     */
    int expiringCount()
    {
        return expiring.size();
    }

    /**
     * Clears every message (but the broker's own) whose expiry has passed, at most once a
     * {@link #SWEEP_INTERVAL_MS}: those whose time has passed, soonest first, never a walk of the trie.
     *
     * @return how many were cleared.
     */
    int sweepExpired(final long nowMs)
    {
        if (nowMs < nextSweepMs)
        {
            return 0;
        }
        nextSweepMs = nowMs + SWEEP_INTERVAL_MS;
        final org.agrona.concurrent.UnsafeBuffer view = new org.agrona.concurrent.UnsafeBuffer(0, 0);
        int cleared = 0;
        while (!expiring.isEmpty() && expiring.first().message.isExpired(nowMs))
        {
            final Message message = expiring.first().message;
            view.wrap(message.topic());
            clear(view, 0, message.topic().length); // takes it out of expiring
            cleared++;
        }
        return cleared;
    }

    /**
     * @return false when the visitor refused the node's message.
     */
    private static boolean emit(final Walk walk, final Node node, final Predicate<Message> visitor)
    {
        if (null != node.message && !visitor.test(node.message))
        {
            walk.refused = true;
            return false;
        }
        return true;
    }

    /**
     * @return what a stored message counts against the byte bound: its topic, payload and properties, and its
     * source's names.
     */
    private static long bytesOf(final Message message)
    {
        return (long)message.topic().length + message.payload().length + message.properties().length +
            (null == message.source() ? 0 : message.source().bytes());
    }

    private static int levelEnd(final DirectBuffer topic, final int pos, final int end)
    {
        int levelEnd = pos;
        while (levelEnd < end && topic.getByte(levelEnd) != '/')
        {
            levelEnd++;
        }
        return levelEnd;
    }

    private static boolean isHash(final byte[] level)
    {
        return level.length == 1 && level[0] == '#';
    }

    private static boolean isPlus(final byte[] level)
    {
        return level.length == 1 && level[0] == '+';
    }

    private static boolean isDollar(final byte[] level)
    {
        return level.length > 0 && level[0] == '$';
    }

    /**
     * Where a walk of the store along one filter is: its work stack, one frame per trie level under way (the node,
     * the index of the filter level it is compared with or {@link #ALL}, whether it hands out children yet, and the
     * child it hands out next). It holds a reference per level of the trie it is in, nothing per child. Owned by
     * the store's thread.
     */
    public static final class Walk
    {
        private byte[][] levels;
        private Node[] nodes = new Node[INITIAL_STACK_CAPACITY];
        private int[] indexes = new int[INITIAL_STACK_CAPACITY];
        private int[] cursors = new int[INITIAL_STACK_CAPACITY];
        /** Per frame handing out children: the one it hands out next (null: none left). */
        private Node[] next = new Node[INITIAL_STACK_CAPACITY];
        private int size;
        /** The visitor refused a message: the walk stopped on it. */
        private boolean refused;
        /** Paused, its frames registered in the store's {@link #pins}. */
        private boolean pinned;
        /** Its frames' pins, made the first time each pauses. */
        private Pin[] pins;

        Walk()
        {
        }

        /**
         * @return whether every matching message has been visited.
         */
        public boolean done()
        {
            return 0 == size;
        }

        private Pin pin(final int frame)
        {
            if (null == pins || pins.length < nodes.length)
            {
                pins = null == pins ? new Pin[nodes.length] : Arrays.copyOf(pins, nodes.length);
            }
            Pin pin = pins[frame];
            if (null == pin)
            {
                pin = new Pin();
                pins[frame] = pin;
            }
            return pin;
        }

        private void start(final byte[][] levels, final Node root)
        {
            this.levels = levels;
            push(root, 0);
        }

        private void push(final Node node, final int index)
        {
            if (size == nodes.length)
            {
                final int capacity = nodes.length * 2;
                nodes = Arrays.copyOf(nodes, capacity);
                indexes = Arrays.copyOf(indexes, capacity);
                cursors = Arrays.copyOf(cursors, capacity);
                next = Arrays.copyOf(next, capacity);
            }
            nodes[size] = node;
            indexes[size] = index;
            next[size] = null;
            cursors[size++] = UNVISITED;
        }

        private void pop()
        {
            nodes[--size] = null; // a pruned node must not stay reachable from the stack
            next[size] = null;
        }

        private void clear()
        {
            Arrays.fill(nodes, 0, size, null);
            Arrays.fill(next, 0, size, null);
            size = 0;
            levels = null;
        }
    }

    /**
     * The paused frames that hand out one child next ({@link #node}; null once it left the trie with none after it):
     * a list, each frame unlinked in constant time, and handed on as a whole when the child leaves.
     */
    private static final class Anchor
    {
        private Node node;
        private Pin head;
        private int count;

        private Anchor(final Node node)
        {
            this.node = node;
        }

        private void add(final Pin pin)
        {
            pin.anchor = this;
            pin.before = null;
            pin.after = head;
            if (null != head)
            {
                head.before = pin;
            }
            head = pin;
            count++;
        }

        private void remove(final Pin pin)
        {
            if (null != pin.after)
            {
                pin.after.before = pin.before;
            }
            if (null != pin.before)
            {
                pin.before.after = pin.after;
            }
            else
            {
                head = pin.after;
            }
            pin.anchor = null;
            pin.before = null;
            pin.after = null;
            count--;
        }
    }

    /**
     * A paused walk's frame, in the list of the {@link Anchor} of the child it hands out next.
     */
    private static final class Pin
    {
        private Anchor anchor;
        private Pin before;
        private Pin after;
    }

    private static final class Node
    {
        private final Node parent;
        private final byte[] level;
        private final LevelTable<Node> children = new LevelTable<>();
        private Message message;
        /** The message is the broker's own: not counted against the limits. */
        private boolean exempt;
        /** Made for one of the broker's own messages: its bytes are not counted against clients'. */
        private boolean exemptNode;
        /** Its place among {@link #expiring} nodes of the same expiry. */
        private long sequence;
        /** Whether it is among {@link #expiring}. */
        private boolean expiring;
        /**
         * Its children in the order they were made, for walks ({@link Walk}): the first and last, and each child's
         * neighbours. A paused walk's frame holds the child it hands out next; when that child is taken out, the frame
         * is handed on to the child after it ({@link #pins}), so it still reaches every child there all along.
         */
        private Node first;
        private Node last;
        private Node previous;
        private Node next;

        Node(final Node parent, final byte[] level)
        {
            this.parent = parent;
            this.level = level;
        }

        private void append(final Node child)
        {
            child.previous = last;
            if (null == last)
            {
                first = child;
            }
            else
            {
                last.next = child;
            }
            last = child;
        }

        /**
         * Takes a child out of the order (the paused walks that would hand it out next were handed on first). Its
         * links go, so no chain of nodes taken out stays reachable from one a walk's frame holds.
         */
        private void unlink(final Node child)
        {
            if (null == child.previous)
            {
                first = child.next;
            }
            else
            {
                child.previous.next = child.next;
            }
            if (null == child.next)
            {
                last = child.previous;
            }
            else
            {
                child.next.previous = child.previous;
            }
            child.previous = null;
            child.next = null;
        }
    }

    /**
     * New bounds (a reload; the owner's thread): messages held beyond them stay until replaced or cleared, and
     * further ones are refused as any beyond the bounds are.
     */
    public void limits(final int maxCount, final long maxBytes)
    {
        this.maxCount = maxCount;
        this.maxBytes = maxBytes;
    }
}
