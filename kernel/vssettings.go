package kernel

import (
	"fmt"
	"strconv"
	"strings"
)

// A virtual server's settings: every IPVS attribute but its key, with the flags they
// carry and their text in `ipvsadm -Ln` (which the fake kernel reads back). The codec of
// their netlink attributes is kernel/linux's ipvs_settings.go.

// IPVS service flags (include/uapi/linux/ip_vs.h).
const (
	// FlagPersistent is IP_VS_SVC_F_PERSISTENT: session affinity with a timeout.
	FlagPersistent uint32 = 0x1
	// FlagHashed is IP_VS_SVC_F_HASHED. The kernel sets it on every service it reports;
	// it must never take part in comparisons (kubernetes/kubernetes#53801).
	FlagHashed uint32 = 0x2
	// FlagSched1 is IP_VS_SVC_F_SCHED1: sh-fallback / mh-fallback.
	FlagSched1 uint32 = 0x8
	// FlagSched2 is IP_VS_SVC_F_SCHED2: sh-port / mh-port.
	FlagSched2 uint32 = 0x10
	// FlagSched3 is IP_VS_SVC_F_SCHED3 (unused by the in-tree schedulers).
	FlagSched3 uint32 = 0x20
)

// OwnFlags is the set of flags ipvs-proxier sets and compares; all other bits are the
// kernel's business.
const OwnFlags = FlagPersistent | FlagSched1 | FlagSched2 | FlagSched3

// VSSettings are a virtual server's settings: every IPVS attribute but its key. The
// translation sets them, the codec writes and reads them, and the writer's cache keeps
// them as they are (24 bytes, against 64 for a VirtualServer with its key).
type VSSettings struct {
	Scheduler string
	// Flags holds only the bits in OwnFlags.
	Flags uint32
	// Timeout is the persistence timeout in seconds; used only with FlagPersistent.
	Timeout uint32
}

// Own returns the settings with only the flags we own (OwnFlags): the form the writer
// keeps and compares.
func (s VSSettings) Own() VSSettings {
	s.Flags &= OwnFlags
	return s
}

// Equal reports whether two settings are the same, ignoring the flags we do not own.
func (s VSSettings) Equal(o VSSettings) bool { return s.Own() == o.Own() }

// format writes the settings as `ipvsadm -Ln` prints them after the address: the
// scheduler, its flags by name in parentheses, and "persistent TIMEOUT".
func (s VSSettings) format(b *strings.Builder) {
	b.WriteString(s.Scheduler)
	if f := schedFlagNames(s.Scheduler, s.Flags); len(f) > 0 {
		fmt.Fprintf(b, " (%s)", strings.Join(f, ","))
	}
	if s.Flags&FlagPersistent != 0 {
		fmt.Fprintf(b, " persistent %d", s.Timeout)
	}
}

// parseSettings reads what format wrote: the scheduler, then the flags in parentheses
// and "persistent TIMEOUT", as `ipvsadm -Ln` prints them.
func parseSettings(w []string) (VSSettings, error) {
	s := VSSettings{Scheduler: w[0]}
	for rest := w[1:]; len(rest) > 0; rest = rest[1:] {
		switch {
		case strings.HasPrefix(rest[0], "("):
			for _, name := range strings.Split(strings.Trim(rest[0], "()"), ",") {
				bit := schedFlagBit(s.Scheduler, name)
				if bit == 0 {
					return VSSettings{}, fmt.Errorf("flag %q", name)
				}
				s.Flags |= bit
			}
		case rest[0] == "persistent" && len(rest) > 1:
			t, err := strconv.ParseUint(rest[1], 10, 32)
			if err != nil {
				return VSSettings{}, err
			}
			s.Flags, s.Timeout, rest = s.Flags|FlagPersistent, uint32(t), rest[1:]
		default:
			return VSSettings{}, fmt.Errorf("unknown %q", rest[0])
		}
	}
	return s, nil
}

// schedFlagNames gives ipvsadm's names for the scheduler flag bits.
func schedFlagNames(sched string, flags uint32) []string {
	prefix := "flag-"
	names := [3]string{"1", "2", "3"}
	if sched == "sh" || sched == "mh" {
		prefix = sched + "-"
		names = [3]string{"fallback", "port", "3"}
	}
	var out []string
	for i, bit := range []uint32{FlagSched1, FlagSched2, FlagSched3} {
		if flags&bit != 0 {
			out = append(out, prefix+names[i])
		}
	}
	return out
}

// schedFlagBit is the inverse of schedFlagNames for one name.
func schedFlagBit(sched, name string) uint32 {
	for _, bit := range []uint32{FlagSched1, FlagSched2, FlagSched3} {
		if n := schedFlagNames(sched, bit); len(n) == 1 && n[0] == name {
			return bit
		}
	}
	return 0
}
