package proxier

import (
	"encoding/binary"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// CheckListed counts the members of listing l, a listing of set, that some Service
// wants, and calls unwanted with each other one. It is the heavy round's repair: every
// member of every set (228,004 at 30,000 Services x 4), with the syncer's lock held, so
// a partial sync waits for it. An IPv4 member without a net (all but the source-range
// sets' members) is looked up from its packed bytes as they are; decoding each to a
// kernel.Member (104 bytes, a set name to look up) and packing it again for the lookup
// was most of that time.
func (d *Desired) CheckListed(set string, l MemberList, unwanted func(kernel.SetEntry)) int {
	c := d.members[set]
	var names []string
	wanted := 0
	for b := l.b; len(b) > 0; {
		if flags := b[1]; flags&(ip6|ip2is6|hasNet) == 0 {
			k := entryKey4{proto: kernel.Protocol(b[2]), port: binary.BigEndian.Uint16(b[3:5])}
			b = b[5:]
			if flags&hasIP != 0 {
				k.ip, k.valid, b = [4]byte(b[:4]), k.valid|keyIP, b[4:]
			}
			if flags&hasIP2 != 0 {
				k.ip2, k.valid, b = [4]byte(b[:4]), k.valid|keyIP2, b[4:]
			}
			if c != nil && c.v4[k] > 0 {
				wanted++
			} else {
				unwanted(k.entry())
			}
			continue
		}
		if names == nil {
			names = *setNames.Load()
		}
		var m kernel.Member
		m, b = decodeMember(names, b)
		if c.has(m.Entry) {
			wanted++
		} else {
			unwanted(m.Entry)
		}
	}
	return wanted
}
