package linux

import (
	"encoding/binary"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// A virtual server's settings as IPVS netlink carries them (include/uapi/linux/ip_vs.h):
// the attributes of an IPVS_CMD_ATTR_SERVICE the translation sets (the scheduler, the
// flags, the persistence timeout; the netmask follows the family), not its key, its
// counters or a fwmark. The batch writes them and the dump reads them here, so a new
// IPVS attribute the translation sets is coded in this file.
const (
	ipvsSvcAttrSched   = 6
	ipvsSvcAttrFlags   = 7
	ipvsSvcAttrTimeout = 8
	ipvsSvcAttrNetmask = 9
)

// appendSettings appends the settings of a new or changed virtual server, as moby/ipvs
// sends them (fillService in its netlink_linux.go): the scheduler, the flags we own with a
// full mask, the persistence timeout and the netmask (all ones for IPv4, the prefix
// length 128 for IPv6).
func appendSettings(m *nlMsg, s kernel.VSSettings, v6 bool) {
	mask := uint32(0xffffffff)
	if v6 {
		mask = 128
	}
	m.str(ipvsSvcAttrSched, s.Scheduler)
	m.attrHeader(ipvsSvcAttrFlags, 8) // struct ip_vs_flags {flags, mask}, host order
	m.b = binary.NativeEndian.AppendUint32(m.b, s.Flags&kernel.OwnFlags)
	m.b = binary.NativeEndian.AppendUint32(m.b, 0xffffffff)
	m.u32(ipvsSvcAttrTimeout, s.Timeout)
	m.u32(ipvsSvcAttrNetmask, mask)
}

// readSetting reads attribute t of a dumped service into s; it reports false for an
// attribute that is not a setting.
func readSetting(t uint16, v []byte, s *kernel.VSSettings) bool {
	switch t {
	case ipvsSvcAttrSched:
		s.Scheduler = schedulerName(v)
	case ipvsSvcAttrFlags:
		s.Flags = u32(v) // struct ip_vs_flags: the flags, then the mask
	case ipvsSvcAttrTimeout:
		s.Timeout = u32(v)
	default:
		return false
	}
	return true
}

// schedulerName is the scheduler of an IPVS_SVC_ATTR_SCHED_NAME value (NUL-terminated),
// without allocating for the kernel's own schedulers: a dump has one per virtual server.
func schedulerName(v []byte) string {
	for i, c := range v {
		if c == 0 {
			v = v[:i]
			break
		}
	}
	for _, s := range kernel.InTreeSchedulers {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}
