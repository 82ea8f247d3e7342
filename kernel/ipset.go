package kernel

import (
	"net/netip"
	"strconv"
)

// SetType is an ipset type, spelled as `ipset create` takes it.
type SetType string

// The set types kube-proxy's IPVS mode uses.
const (
	HashIP        SetType = "hash:ip"
	HashIPPort    SetType = "hash:ip,port"
	HashIPPortIP  SetType = "hash:ip,port,ip"
	HashIPPortNet SetType = "hash:ip,port,net"
	BitmapPort    SetType = "bitmap:port"
)

// Set describes an ipset to create.
type Set struct {
	Name   string
	Type   SetType
	Family Family
	// MaxElem and HashSize apply to hash types. MaxElem is how many members the set
	// holds: kube-proxy's fixed 65,536 (pkg/proxy/ipvs/ipset/ipset.go, setIPSetDefaults)
	// makes its adds fail at scale, and it only logs them; ours grows (EnsureSet).
	MaxElem  uint32
	HashSize uint32
	// Comment is used only in iptables rule comments, as kube-proxy does.
	Comment string
}

// RemakeSet says whether a hash set made with maxelem have, holding count members, is
// remade with maxelem want: when want is larger, or when it is smaller and the members
// fill at most half of it, so that a count near want does not remake the set back and
// forth. 0 on either side (a bitmap set; a maxelem not asked) remakes nothing.
func RemakeSet(have, want uint32, count int) bool {
	if have == 0 || want == 0 {
		return false
	}
	return want > have || want < have && count >= 0 && count <= int(want/2)
}

// SetEntry is one member of a set. Which fields matter depends on the set type:
// hash:ip uses IP; bitmap:port uses Port; hash:ip,port uses IP, Protocol and Port;
// hash:ip,port,ip adds IP2; hash:ip,port,net adds Net. SetEntry is comparable.
type SetEntry struct {
	IP       netip.Addr
	Protocol Protocol
	Port     uint16
	IP2      netip.Addr
	Net      netip.Prefix
}

// String prints the entry as `ipset save` does ("10.0.0.1,tcp:80", "30080", ...).
func (e SetEntry) String() string {
	if !e.IP.IsValid() {
		return strconv.Itoa(int(e.Port))
	}
	if e.Protocol == 0 {
		return e.IP.String()
	}
	s := e.IP.String() + "," + e.Protocol.Lower() + ":" + strconv.Itoa(int(e.Port))
	switch {
	case e.IP2.IsValid():
		s += "," + e.IP2.String()
	case e.Net.IsValid() && e.Net.IsSingleIP():
		// As `ipset save` prints a hash:net entry of one address: no /32 or /128.
		s += "," + e.Net.Addr().String()
	case e.Net.IsValid():
		s += "," + e.Net.String()
	}
	return s
}

// Member is an entry of a named set; it is the unit the sync layer adds and deletes.
type Member struct {
	Set   string
	Entry SetEntry
}
