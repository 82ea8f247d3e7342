// Command agent runs inside the test VM. The e2e tests reach it through a qemu hostfwd:
//
//	POST /exec       body: a shell command; answers its combined output, status in X-Exit-Code
//	GET  /ask?ns=&target=&proto=tcp|udp&source=   connects from a netns to target; answers the reply
//
// `agent serve NAME` is the pods' server: it answers "NAME CLIENT-ADDR" on TCP and UDP
// ports 80 and 53 (TCP connections stay open until the client closes them).
package main

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/vishvananda/netns"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "serve" {
		serve(os.Args[2])
		return
	}
	http.HandleFunc("/exec", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Debian's static busybox sh runs its own `ip` applet first; use iproute2's.
		cmd := exec.Command("sh", "-c", `ip() { /usr/sbin/ip "$@"; }; `+string(body))
		// Output goes to a file, not a pipe: a command that starts a background process
		// would otherwise hold the pipe open and the request would never end.
		f, err := os.CreateTemp("", "exec-")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer os.Remove(f.Name())
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		err = cmd.Run()
		out, _ := os.ReadFile(f.Name())
		code := 0
		if err != nil {
			code = 1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		w.Header().Set("X-Exit-Code", fmt.Sprint(code))
		_, _ = w.Write(out)
	})
	http.HandleFunc("/ask", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		answer, err := ask(q.Get("ns"), q.Get("proto"), q.Get("source"), q.Get("target"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, answer)
	})
	log.Fatal(http.ListenAndServe(":7000", nil))
}

// ask dials target from the named netns (or the VM's own when empty), from source
// address when given.
func ask(ns, proto, source, target string) (string, error) {
	if proto == "" {
		proto = "tcp"
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if ns != "" {
		orig, err := netns.Get()
		if err != nil {
			return "", err
		}
		defer orig.Close()
		defer func() { _ = netns.Set(orig) }()
		h, err := netns.GetFromName(ns)
		if err != nil {
			return "", err
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			return "", err
		}
	}
	d := net.Dialer{Timeout: 3 * time.Second}
	if source != "" {
		if proto == "udp" {
			d.LocalAddr = &net.UDPAddr{IP: net.ParseIP(source)}
		} else {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
		}
	}
	c, err := d.Dial(proto, target)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if proto == "udp" {
		if _, err := c.Write([]byte("q")); err != nil {
			return "", err
		}
	}
	return bufio.NewReader(c).ReadString('\n')
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
			_, _ = io.Copy(io.Discard, c)
		}()
	}
}
