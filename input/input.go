// Package input is the error that says the user's input is wrong: a flag, the config file, the
// kubeconfig, an object that does not exist. Nothing was done; the CLI exits 2 on it. Any layer
// may find bad input and return it (the options, the engine, preflight, restore), so it lives
// apart from the engine and the CLI, and imports nothing of the project.
package input

import (
	"errors"
	"fmt"
	"strings"
)

// Error is bad input from the user: a flag, the config file, the kubeconfig, an object that does
// not exist. Nothing was done. Its message names each problem on a line of its own; the CLI exits
// 2 on it.
type Error struct {
	Err error
}

// Error returns one line per problem, whatever the libraries underneath put in them.
func (e *Error) Error() string {
	var lines []string
	for _, p := range Problems(e.Err) {
		lines = append(lines, strings.Join(strings.Fields(p.Error()), " "))
	}
	return strings.Join(lines, "\n")
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error of one problem.
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Problems are the errors joined in err (errors.Join), at any depth; err itself if it joins none.
func Problems(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var all []error
	for _, e := range joined.Unwrap() {
		all = append(all, Problems(e)...)
	}
	return all
}

// Prefixed puts prefix before each problem of err; nil stays nil.
func Prefixed(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	for _, p := range Problems(err) {
		errs = append(errs, fmt.Errorf("%s%w", prefix, p))
	}
	return errors.Join(errs...)
}
