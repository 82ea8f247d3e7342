package proxier

import "testing"

// TestClaims: the winner is the smallest name whatever the order of claims, and any
// removal (inline or not) keeps the others.
func TestClaims(t *testing.T) {
	st := map[string]*VirtualServerState{"a": {}, "b": {}, "c": {}}
	key := func(n string) ServiceKey { return ServiceKey{Namespace: "ns", Name: n} }
	var c claims
	for _, n := range []string{"c", "a", "b"} {
		c.set(key(n), st[n])
	}
	c.set(key("c"), st["c"]) // again: no duplicate
	if s, k := c.winner(); k.Name != "a" || s != st["a"] || c.len() != 3 {
		t.Fatalf("winner %v len %d", k, c.len())
	}
	c.remove(key("c")) // the inline one
	if _, k := c.winner(); k.Name != "a" || c.len() != 2 {
		t.Fatalf("after removing c: winner %v len %d", k, c.len())
	}
	c.remove(key("a"))
	if s, k := c.winner(); k.Name != "b" || s != st["b"] || c.len() != 1 {
		t.Fatalf("after removing a: winner %v len %d", k, c.len())
	}
	c.remove(key("x")) // not a claimant
	c.remove(key("b"))
	if c.len() != 0 || c.more != nil {
		t.Fatalf("len %d more %v after removing all", c.len(), c.more)
	}
}
