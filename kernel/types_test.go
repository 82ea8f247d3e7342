package kernel

import "testing"

// The writer's cache compares settings with Equal: the flags the kernel sets on every
// virtual server it reports (FlagHashed) must never make them differ, and every
// attribute of VSSettings must.
func TestVSSettingsEqual(t *testing.T) {
	base := VSSettings{Scheduler: "sh", Flags: FlagPersistent | FlagSched1, Timeout: 600}
	dumped := base
	dumped.Flags |= FlagHashed
	if !base.Equal(dumped) || base.Own() != dumped.Own() {
		t.Errorf("%+v and %+v differ only in a flag we do not own", base, dumped)
	}
	for _, other := range []VSSettings{
		{Scheduler: "rr", Flags: base.Flags, Timeout: base.Timeout},
		{Scheduler: base.Scheduler, Flags: FlagPersistent, Timeout: base.Timeout},
		{Scheduler: base.Scheduler, Flags: base.Flags, Timeout: 60},
	} {
		if base.Equal(other) {
			t.Errorf("%+v equals %+v", base, other)
		}
	}
}
