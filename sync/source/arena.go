package source

// arena copies the strings of one cached object into a single allocation. The decoder
// allocates every string of an object on its own (a name, a resourceVersion, each
// address): a dozen small allocations, each rounded up to a size class. The compact
// objects point into one string instead. Add the strings, then seal: only then do the
// destinations hold their values, sharing its bytes.
type arena struct {
	buf  []byte
	refs []arenaRef
}

type arenaRef struct {
	dst      *string
	off, end int
}

// add copies s and has *dst point at the copy once sealed. dst must stay where it is
// until then (an element of a slice allocated at its final length, a struct field).
func (a *arena) add(dst *string, s string) {
	if s == "" {
		*dst = ""
		return
	}
	a.refs = append(a.refs, arenaRef{dst, len(a.buf), len(a.buf) + len(s)})
	a.buf = append(a.buf, s...)
}

// seal makes the one string and points every added destination into it.
func (a *arena) seal() {
	all := string(a.buf)
	for _, r := range a.refs {
		*r.dst = all[r.off:r.end]
	}
	a.buf, a.refs = nil, nil
}
