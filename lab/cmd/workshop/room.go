package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"example.com/walletlock/lab/workshop"
)

// serve runs the live room until Ctrl-C: the page on the address the
// facilitator chose, and the join line the laptops hand their documents
// in with.
func serve(ctx context.Context, opt *options, files []string, stdout, stderr io.Writer) int {
	addr := opt.addr
	if addr == "" {
		addr = net.JoinHostPort(ownAddr(), "8080")
	}
	room, err := workshop.OpenRoom(addr, ".", files)
	if err != nil {
		fmt.Fprintln(stderr, "workshop:", err)
		return 1
	}
	addr, _, _ = strings.Cut(room.Line, "/") // the port it got, if addr named none
	served := make(chan error, 1)
	go func() { served <- room.Serve() }()
	fmt.Fprintf(stdout, "The room's page: http://%s/ (open it here, or on any laptop of the room)\n", addr)
	fmt.Fprintf(stdout, "Each participant runs, in the repo's folder:\n\n    make workshop ROOM=%s\n\n", room.Line)
	fmt.Fprintf(stdout, "The room listens on %s only. Ctrl-C closes it; the documents stay in this folder.\n", addr)
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	room.Close()
	if err != nil {
		fmt.Fprintln(stderr, "workshop: the room stopped:", err)
		return 1
	}
	fmt.Fprintln(stdout, "The room is closed; make compare draws room.html from the documents in this folder.")
	return 0
}

// ownAddr is this machine's address on the network its default route
// leaves by, where a room's laptops reach it; 127.0.0.1 without one. A
// UDP "connection" sends nothing: it only picks the route.
func ownAddr() string {
	c, err := net.Dial("udp", "192.0.2.1:9") // TEST-NET-1: never answers, and needs not
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}
