package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.auth.AddressKeys;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.collections.Object2IntHashMap;

/**
 * What the sessions of each limited client address ({@link AddressKeys}: loopback only with {@code --limit-loopback},
 * none that {@code --max-connections-per-address} exempts) hold together in one delivery shard's windows and queues:
 * those connected from it, and those whose client went from it with messages in flight, by what they have in flight
 * ({@link DeliverySession#goAway}). The share of {@code --max-message-memory} is judged per address as well as per
 * session ({@link DeliverySession#fairIn}), so the connections of one host that never acknowledge hold about three
 * quarters of it, seven eighths at most, however many they are: 24 of them took the whole share between them, each within its own half of
 * what was left, and an honest subscriber got none of its QoS 1 messages (review of 09ed1b1).
 * <p>
 * An address is charged a copy's bytes once however many of its sessions' entries name it, and
 * {@link SharedMessage.Pool#ENTRY_ALLOWANCE} for each further entry, as the share counts it: a thousand subscribers
 * behind one address that share a topic's copies hold them once, not a thousand times, whoever else holds them too.
 * The first address to hold a copy counts its entries on the copy itself ({@link SharedMessage#holder}), with no
 * look-up; any other address at the same time counts them in a table of its own (review of c670a19: charged whole
 * for each entry, 186 of 200 messages to 50 subscribers behind one address were dropped). Owned by its shard's
 * thread.
 */
final class AddressHolds
{
    /** A hold's table of copies this size or smaller is left as it is; a larger one shrinks when a sixteenth full. */
    static final int COMPACT_ABOVE = 256;

    private final Long2ObjectHashMap<Hold> byAddress = new Long2ObjectHashMap<>();
    /**
     * What every address holds together: each copy once however many addresses hold it, and each entry's allowance
     * (a copy counted for each address made one broadcast to readers on 8 addresses count 33 KiB of a 64 KiB share for
     * 4 KiB, review of 52577d81, helper-149).
     */
    private long allBytes;

    /**
     * @return the hold of a session connected from {@code addressKey}, counted as one more session of it; null for
     * {@link AddressKeys#NONE} (an address not limited, or not known).
     */
    Hold join(final long addressKey)
    {
        if (AddressKeys.NONE == addressKey)
        {
            return null;
        }
        Hold hold = byAddress.get(addressKey);
        if (null == hold)
        {
            hold = new Hold(addressKey);
            byAddress.put(addressKey, hold);
        }
        hold.sessions++;
        return hold;
    }

    /**
     * @return how many addresses have sessions counted in the shard (for tests).
     */
    int addresses()
    {
        return byAddress.size();
    }

    /**
     * What one address's sessions hold; forgotten when the last of them leaves.
     */
    final class Hold
    {
        private final long addressKey;
        private int sessions;
        /** What its sessions' window and queue entries hold, as charged. */
        private long bytes;
        /**
         * How many of its sessions' entries name each copy they hold whose {@link SharedMessage#holder} is another
         * address, or was when the first of them came (identity: a copy has no equals of its own).
         */
        private final Object2IntHashMap<SharedMessage> entries = new Object2IntHashMap<>(0);

        private Hold(final long addressKey)
        {
            this.addressKey = addressKey;
        }

        long bytes()
        {
            return bytes;
        }

        /**
         * @return what the connected sessions of every limited address hold together in this shard (each copy once).
         */
        long allAddressesBytes()
        {
            return allBytes;
        }

        /**
         * An entry of one of its sessions names {@code message}: its bytes, where the address holds it no other way
         * yet, else an entry's allowance.
         */
        void charge(final SharedMessage message)
        {
            if (this == message.holder)
            {
                message.holderEntries++;
                add(SharedMessage.Pool.ENTRY_ALLOWANCE);
                return;
            }
            final int named = entries.isEmpty() ? 0 : entries.getValue(message);
            if (null == message.holder && 0 == named)
            {
                message.holder = this; // while it is, this address's entries of it are counted there alone
                message.holderEntries = 1;
                holdCopy(message);
                return;
            }
            entries.put(message, named + 1);
            if (0 == named)
            {
                holdCopy(message);
            }
            else
            {
                add(SharedMessage.Pool.ENTRY_ALLOWANCE);
            }
        }

        /**
         * An entry of one of its sessions that names {@code message} is gone: what {@link #charge} added for one.
         */
        void discharge(final SharedMessage message)
        {
            if (this == message.holder)
            {
                if (--message.holderEntries == 0)
                {
                    message.holder = null;
                    letCopyGo(message);
                }
                else
                {
                    add(-SharedMessage.Pool.ENTRY_ALLOWANCE);
                }
                return;
            }
            final int named = entries.getValue(message);
            assert named > 0 : "an entry discharged that was never charged";
            if (1 == named)
            {
                entries.removeKey(message);
                letCopyGo(message);
                if (entries.capacity() > COMPACT_ABOVE && entries.size() < entries.capacity() >> 4)
                {
                    // what a burst grew is given back as it drains: an address that held 100,000 copies once and
                    // stays connected would otherwise keep 3 MB of table, and many addresses in turn the heap
                    entries.compact();
                }
            }
            else
            {
                entries.put(message, named - 1);
                add(-SharedMessage.Pool.ENTRY_ALLOWANCE);
            }
        }

        private void add(final long change)
        {
            bytes += change;
            allBytes += change;
        }

        /** The address holds {@code message} from now on: its bytes, and the total's when no other address holds it. */
        private void holdCopy(final SharedMessage message)
        {
            bytes += message.length();
            if (message.addresses++ == 0)
            {
                allBytes += message.length();
            }
        }

        private void letCopyGo(final SharedMessage message)
        {
            bytes -= message.length();
            if (--message.addresses == 0)
            {
                allBytes -= message.length();
            }
        }

        /**
         * @return how many copies its table counts (for tests): those another address held first.
         */
        int tabled()
        {
            return entries.size();
        }

        /**
         * @return the slots of its table of copies (for tests).
         */
        int tableCapacity()
        {
            return entries.capacity();
        }

        /**
         * A session leaves (it is resumed elsewhere, taken over, moved to another shard, ended, or went away with nothing
         * in flight), its entries discharged.
         */
        void leave()
        {
            if (--sessions == 0)
            {
                assert 0 == bytes : bytes + " bytes left held by an address with no session";
                byAddress.remove(addressKey);
            }
        }
    }
}
