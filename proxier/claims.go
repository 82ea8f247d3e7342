package proxier

import "strings"

// claims are the Services that claim one virtual server. It is nearly always one, so
// the first is held inline: a map per virtual server cost ~380 bytes each, about 11 MiB
// of the syncer's heap at 30,000 Services (BenchmarkRetainedHeap30k).
type claims struct {
	key   ServiceKey
	state *VirtualServerState
	// more holds the other claimants of a conflict (two Services, one address and port).
	more map[ServiceKey]*VirtualServerState
}

func (c *claims) len() int {
	if c.state == nil {
		return 0
	}
	return 1 + len(c.more)
}

func (c *claims) set(k ServiceKey, st *VirtualServerState) {
	switch {
	case c.state == nil || c.key == k:
		c.key, c.state = k, st
	default:
		if c.more == nil {
			c.more = map[ServiceKey]*VirtualServerState{}
		}
		c.more[k] = st
	}
}

func (c *claims) remove(k ServiceKey) {
	if c.state != nil && c.key == k {
		c.key, c.state = ServiceKey{}, nil
		for mk, ms := range c.more { // promote any other claimant
			c.key, c.state = mk, ms
			delete(c.more, mk)
			break
		}
	} else {
		delete(c.more, k)
	}
	if len(c.more) == 0 {
		c.more = nil
	}
}

// winner is the claimant that is programmed. A claim on an allocated address (a
// ClusterIP, a NodePort: the apiserver keeps them unique) beats one on a user-chosen
// address (an external IP, a load-balancer ingress), so a Service cannot take another's
// ClusterIP or NodePort by naming it (CVE-2020-8554 is this class of attack). Between
// claims of one kind the first Service in name order wins, so the choice does not depend
// on which Service was seen first.
func (c *claims) winner() (*VirtualServerState, ServiceKey) {
	best, st := c.key, c.state
	for k, s := range c.more {
		if outranks(s, k, st, best) {
			best, st = k, s
		}
	}
	return st, best
}

// outranks reports whether claim a of Service ak beats claim b of Service bk.
func outranks(a *VirtualServerState, ak ServiceKey, b *VirtualServerState, bk ServiceKey) bool {
	if a.UserChosen != b.UserChosen {
		return !a.UserChosen
	}
	return strings.Compare(ak.String(), bk.String()) < 0
}

// keys returns every claimant.
func (c *claims) keys() []ServiceKey {
	if c.state == nil {
		return nil
	}
	out := []ServiceKey{c.key}
	for k := range c.more {
		out = append(out, k)
	}
	return out
}
