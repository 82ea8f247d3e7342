package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// outcome is everything the soak measured, for the verdicts and the report.
type outcome struct {
	Set      settings
	Machine  string
	Samples  []sample
	Faults   []faultRecord
	Loops    []loopResult
	Compare  compareResult
	Drain    drainResult
	Applied  int64 // churn changes written
	Refused  int64 // churn changes the API did not take (most while it was down)
	Kinds    map[string]int
	Started  time.Time
	Finished time.Time
}

// loopResult is one traffic loop's totals, its failures by the fault window they fell
// in ("" outside every window).
type loopResult struct {
	Name, Proto, From, Target string
	OK, Failed                int64
	ByWindow                  map[string]int
	Switches                  int
	FirstErrors               []string
}

// compareResult is the final comparison of the kernel with plan.
type compareResult struct {
	Attempts           int
	Lines              int
	OnlyPlan, OnlyNode []string
	Err                string
}

// drainResult is the longest a real server stayed at weight 0.
type drainResult struct {
	Longest time.Duration
	Which   string
	Scans   int
}

// verdict is one assertion of the soak.
type verdict struct {
	Name   string
	Pass   bool
	Detail string
}

// gracefulTimeout is the daemon's --graceful-termination-timeout default (15 min, as
// kube-proxy's IPVS mode's).
const gracefulTimeout = 15 * time.Minute

// growthShare is the growth per hour, as a share of the level, that a verdict calls
// growth: 5 % an hour doubles a daemon's memory within a day, the kind of leak that
// takes a node down in production; a smaller drift in a run of an hour or two cannot be
// told from the garbage collector's swings around a live heap that moves with the
// churned objects.
const growthShare = 0.05

// eventsPerChange and eventsPerFault bound the Events: a valid change is no reason for
// an Event; a fault may be (a start, conntrack pressure and its end).
const (
	eventsPerChange = 0.01
	eventsPerFault  = 3
)

// growthFit fits one column of the samples over the growth window (fromMinute to
// toMinute, of the last process only) against hours. The sample taken once the churn
// and the faults stopped is past toMinute: a daemon at rest is not the level under load.
func growthFit(ss []sample, fromMinute, toMinute float64, col func(sample) float64, skip func(sample) bool) (fit, int) {
	if len(ss) == 0 {
		return fit{SlopeErr: math.Inf(1)}, 0
	}
	pid := ss[len(ss)-1].PID
	var xs, ys []float64
	for _, s := range ss {
		if s.Minute < fromMinute || s.Minute > toMinute || s.PID != pid || math.IsNaN(col(s)) || skip != nil && skip(s) {
			continue
		}
		xs, ys = append(xs, s.Minute/60), append(ys, col(s))
	}
	return fitLine(xs, ys), len(xs)
}

// growthVerdict passes when the fitted slope is within the larger of twice its
// standard error (noise) and growthShare of the level an hour.
func growthVerdict(name, unit string, f fit, n int) verdict {
	limit := math.Max(2*f.SlopeErr, growthShare*math.Abs(f.MeanY))
	v := verdict{Name: "no growth: " + name, Pass: n >= 3 && f.Slope <= limit,
		Detail: fmt.Sprintf("slope %+.3g %s/h over %d samples (level %.4g %s, standard error %.3g); limit %.3g %s/h", f.Slope, unit, n, f.MeanY, unit, f.SlopeErr, limit, unit)}
	if n < 3 {
		v.Detail = fmt.Sprintf("%d samples in the window: too few to fit", n)
	}
	return v
}

// shortWindow is the growth window under which the RSS is not fitted a slope an hour:
// the heap in use is judged in its place, on its growth over the window
// (shortGrowthVerdict). A run under an hour has one; the 10-minute form's is 5 minutes.
const shortWindow = 30 * time.Minute

// shortGrowthVerdict judges the heap in use over a window shorter than shortWindow: its
// fitted growth over the window (the slope times the window) within half its level. A
// restarted daemon's RSS climbs for tens of minutes as the runtime keeps the pages its
// heap grew into (the samples after each SIGKILL in bench/results/soak), which a window
// of minutes would fit as tens of MiB an hour with nothing leaked. The heap in use, the
// Go objects a leak adds, stays between the live heap and the collector's goal, the
// live heap and half again at the widest headroom the daemon sets (gcPercentColdStart,
// 50, in cmd/ipvs-proxier/gc.go): more than half its level over the window is the live
// heap grown.
func shortGrowthVerdict(name, unit string, f fit, n int, window time.Duration) verdict {
	grown, limit := f.Slope*window.Hours(), f.MeanY/2
	v := verdict{Name: "no growth: " + name, Pass: n >= 3 && grown <= limit,
		Detail: fmt.Sprintf("%+.3g %s over the %v window (slope %+.3g %s/h over %d samples, level %.4g %s); limit %.3g %s, half the level: a window under %v is judged on the heap's growth over it, not the RSS's slope an hour",
			grown, unit, window, f.Slope, unit, n, f.MeanY, unit, limit, unit, shortWindow)}
	if n < 3 {
		v.Detail = fmt.Sprintf("%d samples in the window: too few to fit", n)
	}
	return v
}

// growthColumns are the columns whose growth is judged; short marks the one that a
// window under shortWindow replaces with the heap in use (shortGrowthVerdict).
var growthColumns = []struct {
	name, unit string
	col        func(sample) float64
	short      bool
}{
	{"RSS", "MiB", func(s sample) float64 { return s.RSSMiB }, true},
	// A listening socket is an fd and an accept goroutine that the cluster asks for (a
	// healthCheckNodePort a ETP=Local Service), and the churn moves their number both
	// ways: they are taken out of both columns.
	{"goroutines beyond the listeners", "", func(s sample) float64 { return s.Goroutines - s.Listening }, false},
	{"open fds beyond the listeners", "", func(s sample) float64 { return s.OpenFDs - s.Listening }, false},
	{"netlink sockets", "", func(s sample) float64 { return s.NetlinkSockets }, false},
}

// underFault reports whether the sample was taken in a fault's window: the level then
// is the fault's (a relist has its watches' goroutines gone, a restart its process
// young), not the daemon's, and the growth fit leaves it out.
func (o outcome) underFault(s sample) bool {
	at := o.Started.Add(time.Duration(s.Minute * float64(time.Minute)))
	for _, r := range o.Faults {
		if from, to := faultWindow(r); !at.Before(from) && !at.After(to) {
			return true
		}
	}
	return false
}

// faultWindow is when a fault may disturb traffic: from its start to its recovery (to
// its bound when it did not recover), and 5 s more.
func faultWindow(r faultRecord) (from, to time.Time) {
	rec := r.Recovery
	if rec < 0 {
		rec = r.Bound
	}
	return r.Start.Add(-time.Second), r.End.Add(rec + 5*time.Second)
}

// byWindow counts failures by the fault whose window holds them ("" for none).
func byWindow(fails []time.Time, faults []faultRecord) map[string]int {
	out := map[string]int{}
	for _, t := range fails {
		kind := ""
		for _, r := range faults {
			if from, to := faultWindow(r); !t.Before(from) && !t.After(to) {
				kind = r.Kind
				break
			}
		}
		out[kind]++
	}
	return out
}

// allowedWindows are the faults in whose window a failed request is documented and
// allowed. None: the daemon keeps the kernel's state through each of them.
var allowedWindows = map[string]bool{}

// verdicts judges the outcome.
func verdicts(o outcome) []verdict {
	var vs []verdict
	c := o.Compare
	vs = append(vs, verdict{Name: "the kernel equals the cluster", Pass: c.Err == "" && len(c.OnlyPlan)+len(c.OnlyNode) == 0,
		Detail: fmt.Sprintf("%d lines of plan compared with the node (attempt %d): %d only in plan, %d only in the node %s",
			c.Lines, c.Attempts, len(c.OnlyPlan), len(c.OnlyNode), c.Err)})
	from := o.Set.windowStart().Minutes()
	for _, g := range growthColumns {
		if window := o.Set.Duration - o.Set.windowStart(); g.short && window < shortWindow {
			f, n := growthFit(o.Samples, from, o.Set.Duration.Minutes()+0.5, func(s sample) float64 { return s.HeapInuseMiB }, o.underFault)
			vs = append(vs, shortGrowthVerdict("heap in use", "MiB", f, n, window))
			continue
		}
		f, n := growthFit(o.Samples, from, o.Set.Duration.Minutes()+0.5, g.col, o.underFault)
		vs = append(vs, growthVerdict(g.name, g.unit, f, n))
	}
	limit := gracefulTimeout + 2*syncPeriod + o.Set.DrainScan
	vs = append(vs, verdict{Name: "no real server at weight 0 past the graceful-termination timeout", Pass: o.Drain.Longest <= limit,
		Detail: fmt.Sprintf("longest seen at weight 0: %v (%s) in %d scans; limit %v (timeout, two sync periods, a scan interval)",
			o.Drain.Longest.Round(time.Second), o.Drain.Which, o.Drain.Scans, limit)})
	events := 0.0
	if len(o.Samples) > 0 {
		events = o.Samples[len(o.Samples)-1].Events
	}
	evLimit := eventsPerChange*float64(o.Applied) + eventsPerFault*float64(len(o.Faults))
	vs = append(vs, verdict{Name: "Events per change bounded", Pass: !math.IsNaN(events) && events <= evLimit,
		Detail: fmt.Sprintf("%.0f Events for %d changes and %d faults (%.4f a change); limit %.0f (%.2f a change, %d a fault)",
			events, o.Applied, len(o.Faults), events/math.Max(1, float64(o.Applied)), evLimit, eventsPerChange, eventsPerFault)})
	var sent, failed, outside int64
	var where []string
	for _, l := range o.Loops {
		sent += l.OK + l.Failed
		failed += l.Failed
		for k, n := range l.ByWindow {
			if !allowedWindows[k] {
				outside += int64(n)
				where = append(where, fmt.Sprintf("%s %d in %s", l.Name, n, windowName(k)))
			}
		}
	}
	sort.Strings(where)
	vs = append(vs, verdict{Name: "zero failed requests on the untouched Services", Pass: sent > 0 && outside == 0,
		Detail: fmt.Sprintf("%d sent, %d failed, %d outside the documented windows (none documented) %s", sent, failed, outside, strings.Join(where, ", "))})
	var late []string
	for _, r := range o.Faults {
		if !r.recovered() {
			late = append(late, fmt.Sprintf("%s at %.1f min", r.Kind, r.At.Minutes()))
		}
	}
	vs = append(vs, verdict{Name: "every fault recovered within its bound", Pass: len(o.Faults) > 0 && len(late) == 0,
		Detail: fmt.Sprintf("%d faults, %d not recovered in time %s", len(o.Faults), len(late), strings.Join(late, ", "))})
	restarts := unplannedRestarts(o.Samples)
	vs = append(vs, verdict{Name: "the daemon never restarted on its own", Pass: len(restarts) == 0,
		Detail: fmt.Sprintf("process changes without a SIGKILL fault: %v", restarts)})
	switches := 0
	for _, l := range o.Loops {
		switches += l.Switches
	}
	vs = append(vs, verdict{Name: "session affinity held", Pass: switches == 0,
		Detail: fmt.Sprintf("%d answers from another pod than the one before on the ClientIP-affinity Service", switches)})
	return vs
}

// windowName names a fault window for a reader.
func windowName(k string) string {
	if k == "" {
		return "no fault's window"
	}
	return k + "'s window"
}

// unplannedRestarts lists the minutes at which the daemon's PID changed with no
// SIGKILL fault begun in the minute or the one before: a sample taken as the fault
// begins reads the PID before the kill, and the new one shows in the next sample.
func unplannedRestarts(ss []sample) []string {
	var out []string
	for i := 1; i < len(ss); i++ {
		killed := strings.Contains(ss[i].Faults, faultDaemonKill) || strings.Contains(ss[i-1].Faults, faultDaemonKill)
		if ss[i].PID != 0 && ss[i-1].PID != 0 && ss[i].PID != ss[i-1].PID && !killed {
			out = append(out, fmt.Sprintf("%.1f", ss[i].Minute))
		}
	}
	return out
}
