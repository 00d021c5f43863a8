package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"wsgilab/bench/internal/toxic"
	"wsgilab/bench/internal/toxic/hop"
)

// runHop relays the hops spec gives (toxic.HopsEnv: a JSON array of
// toxic.Hop) through Toxiproxy until SIGTERM or an interrupt, each on its
// own listener (package hop). Every hop is checked before any listens, so
// a bad one starts nothing; one that stops with an error stops them all.
func runHop(spec string) error {
	if spec == "" {
		return fmt.Errorf("hop: %s is empty: want a JSON array of hops", toxic.HopsEnv)
	}
	var hops []toxic.Hop
	dec := json.NewDecoder(strings.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hops); err != nil {
		return fmt.Errorf("hop: %s: %w", toxic.HopsEnv, err)
	}
	if len(hops) == 0 {
		return fmt.Errorf("hop: %s holds no hop", toxic.HopsEnv)
	}
	for i, h := range hops {
		if err := h.Validate(); err != nil {
			return fmt.Errorf("hop %d: %w", i+1, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(hops))
	for _, h := range hops {
		go func() {
			err := hop.Serve(ctx, h, func(a net.Addr) { fmt.Fprintf(os.Stderr, "hop: %s -> %s, %d toxics\n", a, h.Upstream, len(h.Toxics)) })
			if err != nil {
				cancel() // one hop down is a broken path: stop the others
			}
			errs <- err
		}()
	}
	var all []error
	for range hops {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
