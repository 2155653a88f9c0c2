package io.ringmq.transport;

import org.junit.jupiter.api.Test;

import java.util.BitSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
}
