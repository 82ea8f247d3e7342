// Package compact keeps cached objects small: an Arena copies the strings of one object
// into a single allocation, a table of interned values points equal values of many
// objects at one shared copy, and NoMeta is the part of metav1.Object a cached object
// does not keep. The translation's Service form (proxier.NewService) and the informer
// caches' EndpointSlices (package source) use them; what they return is shared and
// read-only.
package compact

// Arena copies the strings of one cached object into a single allocation. The decoder
// allocates every string of an object on its own (a name, a resourceVersion, each
// address): a dozen small allocations, each rounded up to a size class. The compact
// objects point into one string instead. Add the strings, then Seal: only then do the
// destinations hold their values, sharing its bytes. The zero Arena is ready to use.
type Arena struct {
	buf  []byte
	refs []arenaRef
}

type arenaRef struct {
	dst      *string
	off, end int
}

// Add copies s and has *dst point at the copy once sealed. dst must stay where it is
// until then (an element of a slice allocated at its final length, a struct field).
func (a *Arena) Add(dst *string, s string) {
	if s == "" {
		*dst = ""
		return
	}
	a.refs = append(a.refs, arenaRef{dst, len(a.buf), len(a.buf) + len(s)})
	a.buf = append(a.buf, s...)
}

// Strings copies ss into the arena: the returned slice's elements hold their values once
// sealed (nil for none).
func (a *Arena) Strings(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		a.Add(&out[i], s)
	}
	return out
}

// Seal makes the one string and points every added destination into it.
func (a *Arena) Seal() {
	all := string(a.buf)
	for _, r := range a.refs {
		*r.dst = all[r.off:r.end]
	}
	a.buf, a.refs = nil, nil
}
