package linux

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

// nlMsg builds one netlink request by appending to a buffer, for the batched writes a
// cold start sends by the hundred thousand (45,000 virtual servers, 120,000 real servers
// and 228,000 set members at 30,000 Services). nl.RtAttr allocates every attribute,
// and serializing one allocates it again, its children each once more: building the
// messages took 12.8 s of the daemon's CPU in the first minute of a 30,000-Service cold
// start in the emulated VM, much of the rest the collections that garbage caused
// (`make bench-scale`'s cold-start CPU profile). The bytes are those nl.NetlinkRequest
// serializes (TestNlMsgIsNetlinkRequest): a leaf attribute's length is its header and
// data, unpadded; a nest's covers its children, each padded to 4 bytes.
type nlMsg struct {
	b     []byte
	start int
}

// beginMsg starts a request of type typ with flags and sequence number seq at the end
// of b.
func beginMsg(b []byte, typ, flags uint16, seq uint32) nlMsg {
	m := nlMsg{b: b, start: len(b)}
	m.b = binary.NativeEndian.AppendUint32(m.b, 0) // length, set by done
	m.b = binary.NativeEndian.AppendUint16(m.b, typ)
	m.b = binary.NativeEndian.AppendUint16(m.b, flags)
	m.b = binary.NativeEndian.AppendUint32(m.b, seq)
	m.b = binary.NativeEndian.AppendUint32(m.b, 0) // port id: the kernel's to fill
	return m
}

// header appends a family header of four bytes (genlmsghdr: cmd, version, reserved;
// nfgenmsg: family, version, resource id).
func (m *nlMsg) header(a, b byte, c uint16) {
	m.b = append(m.b, a, b)
	m.b = binary.NativeEndian.AppendUint16(m.b, c)
}

// attr appends an attribute with data, padded to 4 bytes.
func (m *nlMsg) attr(typ uint16, data []byte) {
	m.attrHeader(typ, len(data))
	m.b = append(m.b, data...)
	m.pad()
}

// attrHeader appends an attribute's header for n bytes of data.
func (m *nlMsg) attrHeader(typ uint16, n int) {
	m.b = binary.NativeEndian.AppendUint16(m.b, uint16(unix.SizeofRtAttr+n))
	m.b = binary.NativeEndian.AppendUint16(m.b, typ)
}

func (m *nlMsg) pad() {
	for (len(m.b)-m.start)%4 != 0 {
		m.b = append(m.b, 0)
	}
}

// u8, u16 and u32 append an attribute holding v in host order; be16 in network order.
func (m *nlMsg) u8(typ uint16, v uint8) {
	m.attrHeader(typ, 1)
	m.b = append(m.b, v)
	m.pad()
}

func (m *nlMsg) u16(typ uint16, v uint16) {
	m.attrHeader(typ, 2)
	m.b = binary.NativeEndian.AppendUint16(m.b, v)
	m.pad()
}

func (m *nlMsg) u32(typ uint16, v uint32) {
	m.attrHeader(typ, 4)
	m.b = binary.NativeEndian.AppendUint32(m.b, v)
}

func (m *nlMsg) be16(typ uint16, v uint16) {
	m.attrHeader(typ, 2)
	m.b = binary.BigEndian.AppendUint16(m.b, v)
	m.pad()
}

// addr appends a's 4 or 16 bytes (an IPv4-mapped address as IPv4).
func (m *nlMsg) addr(typ uint16, a netip.Addr) {
	if a = a.Unmap(); a.Is4() {
		b := a.As4()
		m.attr(typ, b[:])
		return
	}
	b := a.As16()
	m.attr(typ, b[:])
}

// str appends s, zero-terminated.
func (m *nlMsg) str(typ uint16, s string) {
	m.attrHeader(typ, len(s)+1)
	m.b = append(m.b, s...)
	m.b = append(m.b, 0)
	m.pad()
}

// nest begins a nested attribute; end closes it.
func (m *nlMsg) nest(typ uint16) int {
	at := len(m.b)
	m.b = binary.NativeEndian.AppendUint16(m.b, 0)
	m.b = binary.NativeEndian.AppendUint16(m.b, typ)
	return at
}

func (m *nlMsg) end(at int) {
	binary.NativeEndian.PutUint16(m.b[at:], uint16(len(m.b)-at))
}

// done sets the request's length and returns the buffer.
func (m *nlMsg) done() []byte {
	binary.NativeEndian.PutUint32(m.b[m.start:], uint32(len(m.b)-m.start))
	return m.b
}
