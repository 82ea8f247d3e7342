package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Go's net package has no SCTP, so the agent speaks it through one-to-one style
// (SOCK_STREAM) sockets, which read and write like TCP.

// sctpConn wraps a connected SCTP socket as a file.
func sctpConn(fd int) *os.File { return os.NewFile(uintptr(fd), "sctp") }

func sockaddr(addr string) (unix.Sockaddr, error) {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	sa := &unix.SockaddrInet4{Port: ua.Port}
	copy(sa.Addr[:], ua.IP.To4())
	return sa, nil
}

// askSCTP connects to target over SCTP and reads the reply line.
func askSCTP(target string) (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP)
	if err != nil {
		return "", fmt.Errorf("sctp socket: %w", err)
	}
	f := sctpConn(fd)
	defer f.Close()
	sa, err := sockaddr(target)
	if err != nil {
		return "", err
	}
	tv := unix.Timeval{Sec: 3}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Connect(fd, sa); err != nil {
		return "", fmt.Errorf("sctp connect %s: %w", target, err)
	}
	buf := make([]byte, 256)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return "", fmt.Errorf("sctp read: %w", err)
	}
	return string(buf[:n]), nil
}

// serveSCTP answers "NAME CLIENT-ADDR" on SCTP port 80.
func serveSCTP(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP)
	if err != nil {
		return err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: 80}); err != nil {
		return err
	}
	if err := unix.Listen(fd, 64); err != nil {
		return err
	}
	go func() {
		for {
			nfd, from, err := unix.Accept(fd)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			peer := ""
			if in4, ok := from.(*unix.SockaddrInet4); ok {
				peer = fmt.Sprintf("%s:%d", net.IP(in4.Addr[:]), in4.Port)
			}
			_, _ = unix.Write(nfd, []byte(name+" "+peer+"\n"))
			go func() { // keep it open until the client closes, like the TCP server
				buf := make([]byte, 64)
				for {
					if n, err := unix.Read(nfd, buf); n <= 0 || err != nil {
						_ = unix.Close(nfd)
						return
					}
				}
			}()
		}
	}()
	return nil
}
