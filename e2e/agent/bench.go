package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/loadgen"
)

// The data-plane benchmark's ports in a bench pod: HTTP and the stream sink.
const (
	benchHTTPPort = ":8080"
	benchSinkPort = ":5201"
)

// benchServe is `agent httpd NAME`: a bench pod's HTTP server and stream sink.
func benchServe(name string) {
	sink, err := net.Listen("tcp", benchSinkPort)
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(loadgen.ServeSink(sink)) }()
	web, err := net.Listen("tcp", benchHTTPPort)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(loadgen.ServeHTTP(web, name))
}

// benchLoad is `agent load MODE TARGET SECONDS WORKERS WARMUP-SECONDS`: it loads TARGET
// and prints the loadgen.Result as JSON.
func benchLoad(args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("usage: agent load MODE TARGET SECONDS WORKERS WARMUP-SECONDS")
	}
	var n [3]int
	for i, a := range args[2:] {
		v, err := strconv.Atoi(a)
		if err != nil {
			return fmt.Errorf("%q: %w", a, err)
		}
		n[i] = v
	}
	r, err := loadgen.Run(context.Background(), args[0], loadgen.Options{Target: args[1],
		Duration: time.Duration(n[0]) * time.Second, Workers: n[1], Warmup: time.Duration(n[2]) * time.Second})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}
