package sweeper

import (
	"errors"
	"fmt"
	"strings"
)

// InputError is bad input from the user: a flag, the config file, the kubeconfig, an object that
// does not exist. Nothing was done. Its message names each problem on a line of its own; the CLI
// exits 2 on it.
type InputError struct {
	Err error
}

// Error returns one line per problem, whatever the libraries underneath put in them.
func (e *InputError) Error() string {
	var lines []string
	for _, p := range Problems(e.Err) {
		lines = append(lines, strings.Join(strings.Fields(p.Error()), " "))
	}
	return strings.Join(lines, "\n")
}

func (e *InputError) Unwrap() error { return e.Err }

// InputErrorf is an InputError of one problem.
func InputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
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
