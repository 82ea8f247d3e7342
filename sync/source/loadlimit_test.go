package source

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// endlessReader repeats unit, counting what it gives, and ends after giveUp bytes so
// that a loader without a bound fails the test instead of filling memory.
type endlessReader struct {
	unit         string
	off          int
	read, giveUp int64
}

func (e *endlessReader) Read(p []byte) (int, error) {
	if e.read >= e.giveUp {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), e.giveUp-e.read)]
	for i := range p {
		p[i] = e.unit[e.off]
		e.off = (e.off + 1) % len(e.unit)
	}
	e.read += int64(len(p))
	return len(p), nil
}

// TestLoadStopsAtTheLimit: an endless input, whether one document without end or
// endless small documents, YAML or JSON, is refused once limit bytes are read: the
// loader reads limit+1 bytes of it and no more, so what it holds is bounded by limit.
func TestLoadStopsAtTheLimit(t *testing.T) {
	const limit = 1 << 20
	service := "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns}\nspec: {clusterIP: 10.96.8.1, ports: [{port: 80}]}\n---\n"
	for _, tt := range []struct{ name, unit string }{
		{"one YAML document without end", "a: b\n"},
		{"one line without end", "aaaaaaaa"},
		{"endless comment-only documents", "# c\n---\n"},
		{"endless Services", service},
		{"endless JSON string", `["xxxxxxxx`},
		{"endless JSON objects", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"ns"},"spec":{"clusterIP":"10.96.8.1","ports":[{"port":80}]}}` + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := &endlessReader{unit: tt.unit, giveUp: 64 * limit}
			_, err := loadObjects(in, NewStaticSource(), "n", limit)
			if !errors.Is(err, ErrInputTooLarge) || in.read != limit+1 {
				t.Errorf("read %d bytes (limit %d), error %v; want ErrInputTooLarge after limit+1", in.read, limit, err)
			}
		})
	}
	// Within the limit, the same input loads.
	src := NewStaticSource()
	if _, err := loadObjects(strings.NewReader(strings.Repeat(service, 100)), src, "n", limit); err != nil || len(src.ServiceKeys()) != 1 {
		t.Errorf("within the limit: %v", err)
	}
}
