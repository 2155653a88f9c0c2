package io.ringmq.transport;

import org.agrona.concurrent.Agent;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThatThrownBy;

class CorePinningTest
{
    @Test
    void aPinThatTookIsReportedWithTheAffinity()
    {
        final BitSet one = new BitSet();
        one.set(3);

        assertThat(CorePinning.pinned(3, one)).isTrue();
        assertThat(CorePinning.pinReport("io-0", 3, one)).isEqualTo("pinned io-0 to core 3; thread affinity now {3}");
    }

    @Test
    void aPinThatDidNotTakeIsSaidToHaveFailed()
    {
        // what OpenHFT's library answers when its native part cannot load: nothing set, and no error
        final BitSet none = new BitSet();
        final BitSet unchanged = new BitSet();
        unchanged.set(0, 8);
        final BitSet elsewhere = new BitSet();
        elsewhere.set(1);

        assertThat(CorePinning.pinned(3, none)).isFalse();
        assertThat(CorePinning.pinned(3, unchanged)).isFalse();
        assertThat(CorePinning.pinned(3, elsewhere)).isFalse();
        assertThat(CorePinning.pinReport("route", 3, none))
            .startsWith("could not pin route to core 3 (thread affinity {})");
    }

    @Test
    void sharedThreadingsOneThreadIsPinnedAsPipelineOrIo()
    {
        // --pin pipeline=0 was ignored in shared threading, where the one thread was pinned as io only
        assertThat(new CorePinning("pipeline=0").sharedThreadRole()).isEqualTo("pipeline");
        assertThat(new CorePinning("io=1").sharedThreadRole()).isEqualTo("io");
        assertThat(new CorePinning("").sharedThreadRole()).isEqualTo("io");
    }

    @Test
    void anUnknownRoleOrAMalformedSpecIsRefused()
    {
        assertThatThrownBy(() -> new CorePinning("router=1")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("unknown role 'router'");
        assertThatThrownBy(() -> new CorePinning("io")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("expected role=cores");
    }

    @Test
    void aCoreThatCannotBeHadLeavesTheAgentRunning() throws Exception
    {
        // sched_setaffinity answers EINVAL for a core outside the process's cpuset, and the affinity library throws:
        // thrown out of onStart, that stopped the pipeline thread before its first cycle (a broker that accepted
        // connections and never answered them)
        final List<String> calls = new ArrayList<>();
        final Agent agent = new Agent()
        {
            public void onStart()
            {
                calls.add("start");
            }

            public int doWork()
            {
                calls.add("work");
                return 1;
            }

            public String roleName()
            {
                return "pipeline";
            }
        };
        final int missing = 1_023; // the last core of the library's 1,024-core set: on no machine these tests run on
        final Agent pinned = new CorePinning("pipeline=" + missing).pin("pipeline", 0, agent);
        final BitSet before = net.openhft.affinity.Affinity.getAffinity();

        try
        {
            // the premise: where the library's native part loads (Linux), such a pin throws; elsewhere it does nothing
            assumeThatThrownBy(() -> net.openhft.affinity.Affinity.setAffinity(missing))
                .isInstanceOf(IllegalStateException.class);
            pinned.onStart();
            assertThat(pinned.doWork()).isEqualTo(1);
        }
        finally
        {
            net.openhft.affinity.Affinity.setAffinity(before); // this thread runs other tests next
        }

        assertThat(calls).containsExactly("start", "work");
    }
}
