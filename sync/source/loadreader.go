package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// MaxInputBytes bounds one input of `plan -f` (a file, or stdin), counted as it is
// read: past it the input is refused, not read until memory runs out (`yes | plan -f -`,
// or an endless stream of small documents). A cluster's dump is one document, a List
// (`kubectl get svc,endpointslices -A -o yaml`): about 1.7 KB per Service with one
// two-endpoint EndpointSlice in YAML, so some 170 MB at 100,000 Services; `-o json` is
// larger (indented, quoted). 1 GiB holds that with room for larger slices.
// Decoding holds a few times what was read of a document meanwhile (line and document
// buffers; typed objects after), so the bound on bytes read is the bound on memory.
const MaxInputBytes = 1 << 30

// ErrInputTooLarge says an input went past its bound (MaxInputBytes).
var ErrInputTooLarge = errors.New("input too large")

// errBinary says the input holds a NUL byte, which neither YAML nor JSON text has.
var errBinary = errors.New("the input holds NUL bytes: it is not YAML or JSON text (UTF-16 without a byte-order mark?)")

// textReader decodes the input to UTF-8: UTF-16 with a byte-order mark (what PowerShell's
// `>` writes) is transcoded, a UTF-8 byte-order mark dropped, anything else passed as it
// is. kubectl reads such files; read as bytes they would lose every document after the
// first. It fails on a NUL byte in what it decoded.
func textReader(r io.Reader) io.Reader {
	return &noNUL{r: transform.NewReader(r, unicode.BOMOverride(transform.Nop))}
}

// noNUL fails on a NUL byte.
type noNUL struct {
	r    io.Reader
	fail error
}

func (t *noNUL) Read(p []byte) (int, error) {
	if t.fail != nil {
		return 0, t.fail
	}
	n, err := t.r.Read(p)
	if bytes.IndexByte(p[:n], 0) >= 0 {
		t.fail = errBinary
		return 0, t.fail
	}
	return n, err
}

// inputLimit reads at most max bytes of r, and fails with ErrInputTooLarge when r has
// more: it never asks r for more than max+1 bytes in all, whatever the caller's buffer.
type inputLimit struct {
	r    io.Reader
	n    int64 // bytes read so far
	max  int64
	fail error
}

func (l *inputLimit) Read(p []byte) (int, error) {
	if l.fail != nil {
		return 0, l.fail
	}
	if left := l.max - l.n + 1; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := l.r.Read(p)
	if l.n += int64(n); l.n > l.max {
		l.fail = fmt.Errorf("%w: more than %d MiB: refused", ErrInputTooLarge, l.max>>20)
		return 0, l.fail
	}
	return n, err
}
