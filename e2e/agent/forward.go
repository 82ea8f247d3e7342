package main

import (
	"io"
	"log"
	"net"
)

// forward relays TCP connections from listen to target: `make demo` reaches the
// daemon's loopback-only metrics port through it (qemu's hostfwd connects to the
// guest's own address, not its loopback).
func forward(listen, target string) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer c.Close()
			t, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer t.Close()
			go func() { _, _ = io.Copy(t, c) }()
			_, _ = io.Copy(c, t)
		}()
	}
}
