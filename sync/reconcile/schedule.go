package reconcile

import "time"

// fullState is the schedule of full syncs: when they run, why, and which round this is
// (whose turn in the rotation of deep checks, whether the heavy one).
type fullState struct {
	needFull bool
	// fullRunning is set while a full sync runs (its reads release mu); fullAgain asks
	// for another after it, for a change to every Service that came during its reads.
	fullRunning, fullAgain bool
	lastFull               time.Time
	// fullBegan is when the running (or last) full sync began or was started.
	fullBegan time.Time
	// fullWhy says what asked for the running or last full sync, for its log line.
	fullWhy string
	// criticalDone: the critical Services were programmed ahead of the first full sync
	// (critical.go), once.
	criticalDone bool
	// dumpFailed is set when the last full sync's read of the virtual servers failed.
	dumpFailed bool
	// fullRound counts full syncs, to rotate the real-server checks. lastHeavy is the
	// round of the last heavy one (heavyDue), heavy says the running one is.
	fullRound, lastHeavy int
	heavy                bool
	// background is set while a full sync runs in the background (backgroundFull).
	background bool
}

// whyFull names what asks for a full sync now: the first one, one needed (after a
// failed dump or iptables-save, or a change to every Service during the last one's
// reads), a change to every Service (the Node, ServiceCIDRs, node addresses), or
// syncPeriod. Only a periodic one runs in the background (BackgroundFull): the others
// hold the runner, and with it every change, until they end. first: no sync succeeded
// yet.
func (f *fullState) whyFull(first, all bool) string {
	switch {
	case first:
		return "first"
	case f.needFull:
		return "needed"
	case all:
		return "allChanged"
	}
	return "syncPeriod"
}

// heavyDue reports whether this full sync is the heavy round: CheckEvery full syncs
// after the last one, it dumps every virtual server and lists every set. Where periodic
// full syncs run in the background (BackgroundFull) and CheckEvery > 1, only such a one
// takes it: a full sync run inline (for a change to every Service, or one needed) holds
// the runner, and every change with it, and the heavy round took 18-20 s at 30,000
// Services in the emulated VM (an endpoint removal waited 20.2 s behind one, `make
// bench-scale`); the next
// background one takes it instead, unless it is overdue by another CheckEvery (changes
// to every Service coming faster than syncPeriod leave no periodic full sync to the
// background).
// checkEvery and backgroundFull are Options.CheckEvery and Options.BackgroundFull.
func (f *fullState) heavyDue(checkEvery int, backgroundFull bool) bool {
	every := max(checkEvery, 1)
	since := f.fullRound + 1 - f.lastHeavy
	if backgroundFull && !f.background && every > 1 {
		return since >= 2*every
	}
	return since >= every
}

// fullDue is when the next periodic full sync is due: syncPeriod after the last one
// began, or after the running one began; at once (zero) when one is needed.
func (f *fullState) fullDue(syncPeriod time.Duration) time.Time {
	switch {
	case f.fullRunning:
		return f.fullBegan.Add(syncPeriod)
	case f.needFull:
		return time.Time{}
	}
	return f.lastFull.Add(syncPeriod)
}
