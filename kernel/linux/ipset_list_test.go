package linux

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestIPSetWriteDuringListReal: a member write completes while a listing is in progress
// (held open here by duringList): a full sync's listing of every set must not hold up a
// partial sync's writes.
func TestIPSetWriteDuringListReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	x := &IPSets{}
	t.Cleanup(x.Close)
	set := kernel.Set{Name: "TEST-WRITE-DURING-LIST", Type: kernel.HashIPPort, Family: kernel.IPv4, MaxElem: 1024}
	if err := x.EnsureSet(set); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = DestroySets([]string{set.Name}) }) // the netns is shared with other tests
	inList, release := make(chan struct{}), make(chan struct{})
	saved := duringList
	t.Cleanup(func() { duringList = saved })
	duringList = func() { close(inList); <-release }
	listed := make(chan error, 1)
	go func() {
		_, err := x.ListEntries(set.Name)
		listed <- err
	}()
	<-inList
	wrote := make(chan []error, 1)
	go func() {
		wrote <- x.WriteEntries([]kernel.SetOp{{Set: set.Name, Entry: kernel.SetEntry{IP: netip.MustParseAddr("10.96.0.1"), Protocol: kernel.TCP, Port: 80}}})
	}()
	select {
	case errs := <-wrote:
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	case <-time.After(30 * time.Second): // a hang, not a speed limit: the write takes milliseconds
		t.Error("a member write waited for a listing in progress")
	}
	close(release)
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
}
