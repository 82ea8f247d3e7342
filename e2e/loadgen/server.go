package loadgen

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// ServeHTTP answers every request on l with "name\n": the server behind the measured
// Service. It returns when l is closed.
func ServeHTTP(l net.Listener, name string) error {
	body := []byte(name + "\n")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})}
	return srv.Serve(l)
}

// ServeSink reads each connection on l to its end, discarding what it reads, then
// writes the byte count on a line and closes: the far end of a stream. It returns when l
// is closed.
func ServeSink(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			n, _ := io.Copy(io.Discard, c)
			fmt.Fprintf(c, "%d\n", n)
		}()
	}
}
