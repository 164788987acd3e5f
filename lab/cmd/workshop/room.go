package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"example.com/walletlock/lab/internal/charts"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/workshop"
)

// serve runs the live room until Ctrl-C: the page on the address the
// facilitator chose, the join line the laptops hand their documents in
// with and, with -race, the race, whose rounds start on Enter.
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
	defer room.Close()
	if opt.race {
		fmt.Fprintln(stderr, "workshop: starting the race's Redis and PostgreSQL")
		if err := room.StartRace(ctx, opt.round, workshop.HouseLocks); err != nil {
			fmt.Fprintln(stderr, "workshop:", err)
			return 1
		}
	}
	addr, _, _ = strings.Cut(room.Line, "/") // the port it got, if addr named none
	served := make(chan error, 1)
	go func() { served <- room.Serve() }()
	fmt.Fprintf(stdout, "The room's page: http://%s/ (open it here, or on any laptop of the room)\n", addr)
	fmt.Fprintf(stdout, "Each participant runs, in the repo's folder:\n\n    make workshop ROOM=%s\n", room.Line)
	if opt.race {
		fmt.Fprintf(stdout, "    make race ROOM=%s\n", room.Line)
	}
	fmt.Fprintf(stdout, "\nThe room listens on these addresses only:\n    %s\n", strings.Join(room.Listen, "\n    "))
	if opt.race {
		for _, h := range workshop.HouseLocks { // the house's locks race beside the laptops'
			go func() {
				if err := workshop.Race(ctx, room.Line, h.Name, h.Lock, io.Discard, io.Discard); err != nil && ctx.Err() == nil {
					fmt.Fprintf(stderr, "workshop: the house's %s left the race: %v\n", h.Name, err)
				}
			}()
		}
		go rounds(ctx, room, os.Stdin, stdout, stderr)
	}
	fmt.Fprintln(stdout, "Ctrl-C closes the room; the documents stay in this folder.")
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	room.Close()
	if err != nil {
		fmt.Fprintln(stderr, "workshop: the room stopped:", err)
		return 1
	}
	fmt.Fprintln(stdout, "The room is closed, its race's servers removed with their keys and rows; make compare draws room.html from the documents in this folder.")
	return 0
}

// rounds starts each round of the race when the facilitator presses
// Enter, and prints its table.
func rounds(ctx context.Context, room *workshop.Room, stdin io.Reader, stdout, stderr io.Writer) {
	in := bufio.NewScanner(stdin)
	for n := 1; n <= 2; n++ {
		fmt.Fprintf(stdout, "Press Enter to start round %d of the race.\n", n)
		if !in.Scan() || ctx.Err() != nil {
			return
		}
		fmt.Fprintf(stdout, "Round %d: running\n", n)
		round, err := room.RunRound(ctx, n)
		if err != nil {
			fmt.Fprintln(stderr, "workshop:", err)
			n--
			continue
		}
		printRound(stdout, round)
	}
	fmt.Fprintln(stdout, "The race is over; the page keeps both rounds.")
}

func printRound(w io.Writer, r charts.Round) {
	fmt.Fprintln(w, r.Title)
	if r.Check != "" {
		fmt.Fprintln(w, "The one wallet:", r.Check)
	}
	t := harness.NewTable(w, "  ")
	t.Row("LOCK", "WRITES", "ACCEPTED", "STOPPED", "CHECK", "WHAT WENT WRONG")
	for _, row := range r.Rows {
		t.Row(row.Lock, row.Spends, row.Accepted, cmp.Or(row.Stops, "-"), cmp.Or(row.Check, "-"), cmp.Or(row.Verdict, "nothing"))
	}
	t.Flush()
	for _, s := range r.Story {
		fmt.Fprintln(w, "  -", s)
	}
}

// race is a laptop's part of the race: make race ROOM=<join line>.
func race(ctx context.Context, opt *options, stdout, stderr io.Writer) int {
	// A host name is a good name in the race once lower-cased, its dots
	// and the like dashes: ANA_Laptop.local is ana-laptop-local.
	name := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(strings.TrimSpace(opt.host))), "-")
	name = name[:min(len(name), 24)]
	if err := workshop.Race(ctx, opt.room, name, opt.lock, stdout, stderr); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "workshop: the race stopped by %s; this laptop's spenders are gone\n", harness.Why(ctx))
			return harness.ExitInterrupted
		}
		fmt.Fprintln(stderr, "workshop:", err)
		return 1
	}
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
