package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// HTTPResult is an HTTP answer seen from inside the VM.
type HTTPResult struct {
	Code   int         `json:"code"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

func (n *Node) agentGet(path string, q url.Values) (string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s?%s", n.agentPort, path, q.Encode()))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", path, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// Get makes an HTTP GET from netns ns in the VM ("" for the VM itself).
func (n *Node) Get(ns, u string) (HTTPResult, error) {
	var r HTTPResult
	body, err := n.agentGet("/get", url.Values{"ns": {ns}, "url": {u}})
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal([]byte(body), &r)
}

// Hold opens n TCP connections from netns ns to target and keeps them open.
func (n *Node) Hold(ns, target string, count int) error {
	_, err := n.agentGet("/hold", url.Values{"ns": {ns}, "target": {target}, "n": {fmt.Sprint(count)}})
	return err
}

// HoldGreeted is Hold that also returns each connection's first line from the server
// ("POD CLIENT-ADDR"), so a test knows which backend each one reached.
func (n *Node) HoldGreeted(ns, target string, count int) ([]string, error) {
	body, err := n.agentGet("/hold", url.Values{"ns": {ns}, "target": {target}, "n": {fmt.Sprint(count)}, "greeting": {"1"}})
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	return lines[1:], nil
}

// CheckHeld sends a line on every held connection and waits for its echo: an error
// means some held connection broke.
func (n *Node) CheckHeld() error {
	_, err := n.agentGet("/check", nil)
	return err
}

// Release closes every connection Hold opened.
func (n *Node) Release() error {
	_, err := n.agentGet("/release", nil)
	return err
}
