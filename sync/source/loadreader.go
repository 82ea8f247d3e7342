package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// MaxDocumentBytes bounds one document of the input of `plan -f`: past it the input is
// refused, not read until memory runs out (`plan -f /dev/zero`). The apiserver takes at
// most 3 MiB per request; a document here may be a List of a whole cluster (`kubectl get
// svc,endpointslices -A -o yaml`, about 2 KB per object), hence the larger bound.
const MaxDocumentBytes = 512 << 20

// errBinary says the input holds a NUL byte, which neither YAML nor JSON text has.
var errBinary = errors.New("the input holds NUL bytes: it is not YAML or JSON text (UTF-16 without a byte-order mark?)")

// textReader decodes the input to UTF-8: UTF-16 with a byte-order mark (what PowerShell's
// `>` writes) is transcoded, a UTF-8 byte-order mark dropped, anything else passed as it
// is. kubectl reads such files; read as bytes they would lose every document after the
// first.
func textReader(r io.Reader) io.Reader {
	return transform.NewReader(r, unicode.BOMOverride(transform.Nop))
}

// docLimit counts the bytes read since the last document ended and fails past max, and
// fails on a NUL byte.
type docLimit struct {
	r    io.Reader
	n    int64
	max  int64
	doc  int
	fail error
}

func (d *docLimit) Read(p []byte) (int, error) {
	if d.fail != nil {
		return 0, d.fail
	}
	n, err := d.r.Read(p)
	if bytes.IndexByte(p[:n], 0) >= 0 {
		d.fail = errBinary
		return 0, d.fail
	}
	if d.n += int64(n); d.n > d.max {
		d.fail = fmt.Errorf("document %d is larger than %d MiB: refused", d.doc, d.max>>20)
		return 0, d.fail
	}
	return n, err
}

// next marks the start of the next document.
func (d *docLimit) next() { d.n, d.doc = 0, d.doc+1 }
