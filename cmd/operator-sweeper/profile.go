package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"

	"github.com/operator-sweeper/operator-sweeper/options"
)

// startProfile starts the profile --profile asks for, as kubectl's --profile does; the function
// it returns ends it and writes it to --profile-output.
func startProfile(o options.LogOptions) (stop func() error, err error) {
	if o.Profile == "none" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(o.ProfileOutput)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", options.FlagProfileOutput, err)
	}
	if o.Profile == "cpu" {
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("--%s=cpu: %w", options.FlagProfile, err)
		}
		return func() error {
			pprof.StopCPUProfile()
			return f.Close()
		}, nil
	}
	return func() error {
		if o.Profile == "heap" {
			runtime.GC() // the heap as the run leaves it, not its garbage
		}
		return errors.Join(pprof.Lookup(o.Profile).WriteTo(f, 0), f.Close())
	}, nil
}

// writingGCPercent is the collector's target in a run that writes. Such a run holds its view and
// every finding to the end, and makes the garbage of thousands of requests meanwhile; its pace is
// the API server's, not the CPU's, so collecting twice as often as Go's default costs it no time
// and keeps its peak near what it holds (docs/performance.md#repair). GOGC, when set, wins.
const writingGCPercent = 50

// collectOftenWhileWriting sets the collector's target for a run that writes.
func collectOftenWhileWriting() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(writingGCPercent)
	}
}
