package linux

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// batchBytes bounds one sendmsg of a batch (~80 messages). The kernel handles every
// message of a sendmsg before the call returns and, as asked, answers only failures
// and the last message; a failure echoes its request (~1 KiB of receive buffer each),
// so a chunk stays far below the 208 KiB default receive buffer even if all of it fails.
const batchBytes = 8 << 10

// openSocket opens a netlink socket of protocol in the current namespace whose sends
// and receives give up after timeout, so a lost answer never stalls the sync loop.
func openSocket(protocol int, timeout time.Duration) (*nl.NetlinkSocket, error) {
	sock, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), protocol)
	if err != nil {
		return nil, err
	}
	tv := unix.NsecToTimeval(int64(timeout))
	if err := errors.Join(sock.SetReceiveTimeout(&tv), sock.SetSendTimeout(&tv)); err != nil {
		sock.Close()
		return nil, err
	}
	return sock, nil
}

// sendBatch sends n requests over sh as streams of netlink messages, batchBytes per
// sendmsg, where one call per request costs a send and a receive each. msg appends
// request i to b with the given sequence number and no NLM_F_ACK; the last of each sendmsg
// gets NLM_F_ACK, and its answer ends the chunk (the kernel answers in order). answer
// turns a non-zero error code of request i into its error (nil: a success after all).
// It returns one error per request and, separately, a socket failure: then the
// requests not answered are reported failed and the socket should be replaced.
func sendBatch(sh *nl.SocketHandle, n int, msg func(b []byte, i int, seq uint32) []byte, answer func(i int, en syscall.Errno) error) (errs []error, sockErr error) {
	errs = make([]error, n)
	for start := 0; start < n; {
		end, err := sendChunk(sh, start, n, msg, answer, errs)
		if err != nil {
			for i := start; i < n; i++ {
				if errs[i] == nil {
					errs[i] = fmt.Errorf("request %d of a netlink batch: %w", i, err)
				}
			}
			return errs, err
		}
		start = end
	}
	return errs, nil
}

func sendChunk(sh *nl.SocketHandle, start, n int, msg func([]byte, int, uint32) []byte, answer func(int, syscall.Errno) error, errs []error) (end int, err error) {
	var buf []byte
	var first, last uint32
	lastOff := 0
	for end = start; end < n && len(buf) < batchBytes; end++ {
		sh.Seq++
		if end == start {
			first = sh.Seq
		}
		last, lastOff = sh.Seq, len(buf)
		buf = msg(buf, end, sh.Seq)
	}
	flags := buf[lastOff+6 : lastOff+8] // nlmsghdr: len u32, type u16, flags u16
	nl.NativeEndian().PutUint16(flags, nl.NativeEndian().Uint16(flags)|unix.NLM_F_ACK)
	for {
		err := unix.Sendto(sh.Socket.GetFd(), buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err == nil {
			break
		}
		if err != unix.EAGAIN && err != unix.EINTR {
			return end, err
		}
	}
	for {
		msgs, _, err := sh.Socket.Receive()
		if err != nil {
			return end, err
		}
		for _, m := range msgs {
			seq := m.Header.Seq
			if m.Header.Type != unix.NLMSG_ERROR || seq < first || seq > last || len(m.Data) < 4 {
				continue // not ours: a stale answer to an earlier, timed-out request
			}
			i := start + int(seq-first)
			if code := -int32(nl.NativeEndian().Uint32(m.Data[0:4])); code != 0 {
				errs[i] = answer(i, syscall.Errno(code))
			}
			if seq == last {
				return end, nil
			}
		}
	}
}
