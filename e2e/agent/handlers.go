package main

// The agent's HTTP handlers, one per verb the harness sends.

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// handleExec runs the request body with sh and answers its output, the exit code in X-Exit-Code.
func handleExec(w http.ResponseWriter, r *http.Request) {
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
}

// handleAsk asks ?target over ?proto from netns ?ns (source address ?source) and answers what the server said.
func handleAsk(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	answer, err := ask(q.Get("ns"), q.Get("proto"), q.Get("source"), q.Get("target"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	_, _ = io.WriteString(w, answer)
}

// handleGet fetches ?url from netns ?ns and answers the status, headers and body as JSON.
func handleGet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var out getResult
	err := inNetns(q.Get("ns"), func() error {
		// https only reaches the test apiserver, whose certificate does not name the
		// ClusterIP it is reached through.
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := c.Get(q.Get("url"))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		out = getResult{Code: resp.StatusCode, Header: resp.Header, Body: string(b)}
		return err
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// handleHold opens ?n TCP connections to ?target from netns ?ns and keeps them; with ?greeting it answers the first line each server sent.
func handleHold(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, _ := strconv.Atoi(q.Get("n"))
	opened := 0
	var greetings []string
	err := inNetns(q.Get("ns"), func() error {
		for range n {
			c, err := net.DialTimeout("tcp", q.Get("target"), 3*time.Second)
			if err != nil {
				return err
			}
			if q.Get("greeting") != "" {
				line, err := readLine(c)
				if err != nil {
					return err
				}
				greetings = append(greetings, line)
			}
			held.Lock()
			held.conns = append(held.conns, c)
			held.Unlock()
			opened++
		}
		return nil
	})
	if err != nil {
		http.Error(w, fmt.Sprintf("opened %d: %v", opened, err), http.StatusBadGateway)
		return
	}
	fmt.Fprint(w, opened)
	for _, g := range greetings {
		fmt.Fprint(w, "\n"+g)
	}
}

// handleCheck pings every held connection and answers "ok N" when each echoed.
func handleCheck(w http.ResponseWriter, r *http.Request) {
	held.Lock()
	defer held.Unlock()
	for i, c := range held.conns {
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			http.Error(w, fmt.Sprintf("conn %d: %v", i, err), http.StatusBadGateway)
			return
		}
		for {
			line, err := readLine(c)
			if err != nil {
				http.Error(w, fmt.Sprintf("conn %d: %v", i, err), http.StatusBadGateway)
				return
			}
			if line == "ping" {
				break
			}
		}
	}
	fmt.Fprintf(w, "ok %d", len(held.conns))
}

// handleRelease closes the held connections and answers how many there were.
func handleRelease(w http.ResponseWriter, r *http.Request) {
	held.Lock()
	defer held.Unlock()
	for _, c := range held.conns {
		_ = c.Close()
	}
	fmt.Fprint(w, len(held.conns))
	held.conns = nil
}
