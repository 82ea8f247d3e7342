package linux

import (
	"errors"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// frame is one netlink message of a dump's answer.
func frame(typ, flags uint16, seq uint32, body []byte) []byte {
	b := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body)+3)
	e := nl.NativeEndian()
	e.PutUint32(b[0:4], uint32(unix.SizeofNlMsghdr+len(body)))
	e.PutUint16(b[4:6], typ)
	e.PutUint16(b[6:8], flags)
	e.PutUint32(b[8:12], seq)
	b = append(b, body...)
	for len(b)%unix.NLMSG_ALIGNTO != 0 {
		b = append(b, 0)
	}
	return b
}

// TestReadDump: the answers of a dump are read across receives and several messages a
// receive, a stale answer to an earlier request is skipped, and the dump ends at
// NLMSG_DONE, at an error answer (the kernel's errno), at NLM_F_DUMP_INTR, or with the
// receive timeout as a socket failure.
func TestReadDump(t *testing.T) {
	genl := func(b byte) []byte { return []byte{4, 1, 0, 0, b, b, b, b} } // genl header + 4 bytes
	errAnswer := func(errno int32) []byte { return nl.Uint32Attr(uint32(-errno)) }
	recvs := func(datagrams ...[]byte) func([]byte) (int, error) {
		return func(buf []byte) (int, error) {
			if len(datagrams) == 0 {
				return 0, unix.EAGAIN
			}
			d := datagrams[0]
			datagrams = datagrams[1:]
			return copy(buf, d), nil
		}
	}
	join := func(parts ...[]byte) (out []byte) {
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	multi := uint16(unix.NLM_F_MULTI)
	for _, tc := range []struct {
		name         string
		recv         func([]byte) (int, error)
		seen         string
		answer, sock error
	}{
		{"two receives, a stale answer", recvs(join(frame(30, multi, 7, genl('a')), frame(30, multi, 6, genl('x')), frame(30, multi, 7, genl('b'))),
			join(frame(30, multi, 7, genl('c')), frame(unix.NLMSG_DONE, multi, 7, nil))), "abc", nil, nil},
		{"error answer", recvs(join(frame(30, multi, 7, genl('a')), frame(unix.NLMSG_ERROR, 0, 7, errAnswer(int32(unix.ENOENT))))), "a", syscall.ENOENT, nil},
		{"failed part-way", recvs(join(frame(30, multi, 7, genl('a')), frame(unix.NLMSG_DONE, multi, 7, errAnswer(int32(unix.EMSGSIZE))))), "a", syscall.EMSGSIZE, nil},
		{"done with no error", recvs(join(frame(30, multi, 7, genl('a')), frame(unix.NLMSG_DONE, multi, 7, errAnswer(0)))), "a", nil, nil},
		{"interrupted", recvs(join(frame(30, multi|unix.NLM_F_DUMP_INTR, 7, genl('a')), frame(unix.NLMSG_DONE, multi, 7, nil))), "a", netlink.ErrDumpInterrupted, nil},
		{"stalled", recvs(frame(30, multi, 7, genl('a'))), "a", nil, ErrTimeout},
		{"truncated", recvs(frame(30, multi, 7, genl('a'))[:20]), "", nil, errors.New("malformed")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := ""
			answer, sock := readDump(tc.recv, 7, func(body []byte) { seen += string(body[4]) })
			if seen != tc.seen || !errors.Is(answer, tc.answer) || (sock == nil) != (tc.sock == nil) || (tc.sock == ErrTimeout && sock != ErrTimeout) {
				t.Errorf("saw %q, answer %v, socket %v; want %q, %v, %v", seen, answer, sock, tc.seen, tc.answer, tc.sock)
			}
		})
	}
}
