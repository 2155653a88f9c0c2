package io.ringmq.transport;

import io.ringmq.pipeline.auth.AddressKeys;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link UnadmittedHeap}: a connection's heap buffers before admission count in {@link HeapShare#UNADMITTED} and,
 * once its address is known, in that address's sixteenth of it, all of the address's connections together; what
 * is given back leaves both; an address known late takes over what is held.
 */
class UnadmittedHeapTest
{
    private static long key(final String address) throws Exception
    {
        return AddressKeys.of(InetAddress.getByName(address));
    }

    @Test
    @DisplayName("one address's connections together hold at most a sixteenth of the share; past it the one that " +
        "would take more gets HeapShare.Spent, nothing counted; another address still takes")
    void oneAddressHoldsASixteenth() throws Exception
    {
        final long limit = HeapShare.UNADMITTED.limitBytes;
        final long shareBefore = HeapShare.UNADMITTED.held();
        HeapShare.UNADMITTED.limitBytes = shareBefore + 16 * 1_000; // an address's part: 1,000 bytes
        try
        {
            final long address = key("192.0.2.77");
            final UnadmittedHeap first = new UnadmittedHeap();
            final UnadmittedHeap second = new UnadmittedHeap();
            final UnadmittedHeap other = new UnadmittedHeap();
            first.address(address);
            second.address(address);
            other.address(key("192.0.2.78"));
            first.take(600);
            second.take(400);
            assertThat(UnadmittedHeap.heldBy(address)).isEqualTo(1_000);
            assertThatThrownBy(() -> second.take(1)).isInstanceOf(HeapShare.Spent.class);
            assertThat(second.held()).as("nothing more counted").isEqualTo(400);
            assertThat(HeapShare.UNADMITTED.held() - shareBefore).isEqualTo(1_000);
            other.take(1_000);
            assertThat(HeapShare.UNADMITTED.held() - shareBefore).isEqualTo(2_000);

            first.giveBack(600);
            second.take(600);
            second.giveBack(1_000);
            other.giveBack(1_000);
            assertThat(UnadmittedHeap.heldBy(address)).isZero();
            assertThat(HeapShare.UNADMITTED.held()).isEqualTo(shareBefore);
        }
        finally
        {
            HeapShare.UNADMITTED.limitBytes = limit;
        }
    }

    @Test
    @DisplayName("held before the address was known (a PROXY header's growth), the bytes count for the address " +
        "once it is, and leave it when given back; loopback without --limit-loopback counts in the share alone")
    void anAddressKnownLateTakesOverWhatIsHeld() throws Exception
    {
        final long shareBefore = HeapShare.UNADMITTED.held();
        final long address = key("2001:db8:77::1");
        final UnadmittedHeap heap = new UnadmittedHeap();
        heap.take(300);
        assertThat(UnadmittedHeap.heldBy(address)).isZero();
        heap.address(address);
        assertThat(UnadmittedHeap.heldBy(address)).isEqualTo(300);
        heap.address(AddressKeys.NONE);
        assertThat(UnadmittedHeap.heldBy(address)).isZero();
        heap.address(address);
        heap.giveBack(300);
        assertThat(UnadmittedHeap.heldBy(address)).isZero();
        assertThat(HeapShare.UNADMITTED.held()).isEqualTo(shareBefore);
    }
}
