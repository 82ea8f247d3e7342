// Command agent runs inside the test VM. The e2e tests reach it through a qemu hostfwd:
//
//	POST /exec       body: a shell command; answers its combined output, status in X-Exit-Code
//	GET  /ask?ns=&target=&proto=tcp|udp&source=   connects from a netns to target; answers the reply
//	GET  /get?ns=&url=   an HTTP GET from a netns; answers JSON {code, header, body}
//	GET  /hold?ns=&target=&n=&greeting=1   opens n TCP connections to target and keeps them
//	                     open; with greeting, reads and returns each server's first line
//	GET  /release        closes every held connection
//
// `agent serve NAME` is the pods' server: it answers "NAME CLIENT-ADDR" on TCP and UDP
// ports 80 and 53 and SCTP port 80; a TCP connection then echoes lines until the client
// closes it (so a held connection can be checked with /check).
//
//	GET  /check          sends a line on every held connection; answers "ok N" when all echo it
//
// For the data-plane benchmark (`make bench-dataplane`, package loadgen): `agent httpd
// NAME` serves HTTP on 8080 and a stream sink on 5201 in a bench pod, and `agent load
// MODE TARGET SECONDS WORKERS WARMUP` runs the load generator and prints its JSON result.
package main

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "serve" {
		serve(os.Args[2])
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "httpd" {
		benchServe(os.Args[2])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "load" {
		if err := benchLoad(os.Args[2:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "forward" {
		forward(os.Args[2], os.Args[3])
		return
	}
	http.HandleFunc("/exec", handleExec)
	http.HandleFunc("/ask", handleAsk)
	http.HandleFunc("/get", handleGet)
	http.HandleFunc("/hold", handleHold)
	http.HandleFunc("/check", handleCheck)
	http.HandleFunc("/release", handleRelease)
	log.Fatal(http.ListenAndServe(":7000", connectOr(http.DefaultServeMux)))
}

// readLine reads one line byte by byte, so nothing is buffered past it.
func readLine(c net.Conn) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := c.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
}

// held are the connections /hold keeps open.
var held struct {
	sync.Mutex
	conns []net.Conn
}

type getResult struct {
	Code   int         `json:"code"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

// inNetns runs fn on a thread in the named netns (the VM's own when empty). Sockets
// opened there stay in that netns after the thread leaves it.
func inNetns(ns string, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if ns != "" {
		orig, err := netns.Get()
		if err != nil {
			return err
		}
		defer orig.Close()
		defer func() { _ = netns.Set(orig) }()
		h, err := netns.GetFromName(ns)
		if err != nil {
			return err
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			return err
		}
	}
	return fn()
}

// ask dials target from the named netns (or the VM's own when empty), from source
// address when given.
func ask(ns, proto, source, target string) (string, error) {
	if proto == "" {
		proto = "tcp"
	}
	var answer string
	err := inNetns(ns, func() error {
		if proto == "sctp" {
			a, err := askSCTP(target)
			answer = a
			return err
		}
		d := net.Dialer{Timeout: 3 * time.Second}
		if source != "" { // "IP" or "IP:PORT"
			ip, port := source, 0
			if h, p, err := net.SplitHostPort(source); err == nil {
				ip = h
				port, _ = strconv.Atoi(p)
			}
			if proto == "udp" {
				d.LocalAddr = &net.UDPAddr{IP: net.ParseIP(ip), Port: port}
			} else {
				d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip), Port: port}
			}
			if port != 0 {
				// A test that names the port asks again from it: SO_REUSEADDR lets the
				// bind pass the port's TIME_WAIT sockets of earlier asks (theirs are
				// set too), as a busy client's kernel-chosen ports do.
				d.Control = func(_, _ string, c syscall.RawConn) error {
					var serr error
					if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1) }); err != nil {
						return err
					}
					return serr
				}
			}
		}
		c, err := d.Dial(proto, target)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if proto == "udp" {
			if _, err := c.Write([]byte("q")); err != nil {
				return err
			}
		}
		answer, err = bufio.NewReader(c).ReadString('\n')
		return err
	})
	return answer, err
}

func serve(name string) {
	for _, port := range []string{":53", ":80"} {
		pc, err := net.ListenPacket("udp", port)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			buf := make([]byte, 1500)
			for {
				_, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = pc.WriteTo([]byte(name+" "+from.String()+"\n"), from)
			}
		}()
	}
	if err := serveSCTP(name); err != nil {
		log.Printf("no SCTP: %v", err)
	}
	l, err := net.Listen("tcp", ":80")
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			fmt.Fprintf(c, "%s %s\n", name, c.RemoteAddr())
			_, _ = io.Copy(c, c) // echo until the client closes
		}()
	}
}
