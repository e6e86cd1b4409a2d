package input_test

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"testing"

	"github.com/operator-sweeper/operator-sweeper/input"
)

func TestError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			name: "one problem",
			err:  input.Errorf("--%s: %q is not a name", "contexts", "a b"),
			want: `--contexts: "a b" is not a name`,
		},
		{
			name: "the libraries' newlines and runs of spaces become one space",
			err:  input.Errorf("kubeconfig: %w", errors.New("yaml: line 3:\n\tmapping values  are not allowed")),
			want: "kubeconfig: yaml: line 3: mapping values are not allowed",
		},
		{
			name: "one line per problem, at any depth",
			err: &input.Error{Err: errors.Join(
				errors.New("--timeout: must be positive"),
				errors.Join(errors.New("--output:\n  unknown format"), errors.New("--namespace: empty")),
			)},
			want: "--timeout: must be positive\n--output: unknown format\n--namespace: empty",
		},
		{
			name: "prefixed problems",
			err:  &input.Error{Err: input.Prefixed("config file a.yaml: ", errors.Join(errors.New("x: bad"), errors.New("y: bad")))},
			want: "config file a.yaml: x: bad\nconfig file a.yaml: y: bad",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			var in *input.Error
			if !errors.As(fmt.Errorf("wrapped: %w", tt.err), &in) {
				t.Errorf("errors.As finds no *input.Error in %v", tt.err)
			}
		})
	}
}

func TestErrorUnwraps(t *testing.T) {
	err := input.Errorf("--config: %w", fs.ErrNotExist)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false, want true", err)
	}
	inner := errors.New("inner")
	if got := (&input.Error{Err: inner}).Unwrap(); got != inner {
		t.Errorf("Unwrap() = %v, want %v", got, inner)
	}
}

func TestProblems(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	wrapped := fmt.Errorf("x: %w", a)
	tests := []struct {
		name string
		err  error
		want []error
	}{
		{name: "nil is one problem: itself", err: nil, want: []error{nil}},
		{name: "an error that joins none is itself", err: a, want: []error{a}},
		{name: "a wrapped error is not taken apart", err: wrapped, want: []error{wrapped}},
		{name: "joined", err: errors.Join(a, b), want: []error{a, b}},
		{name: "joined at any depth, in order", err: errors.Join(a, errors.Join(b, errors.Join(c))), want: []error{a, b, c}},
		{name: "fmt.Errorf with two %w joins both", err: fmt.Errorf("%w and %w", a, b), want: []error{a, b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := input.Problems(tt.err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Problems(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestPrefixed(t *testing.T) {
	a, b := errors.New("a: bad"), errors.New("b: bad")
	tests := []struct {
		name     string
		err      error
		want     string // "" for a nil error
		problems int
	}{
		{name: "nil stays nil", err: nil},
		{name: "one problem", err: a, want: "config: a: bad", problems: 1},
		{name: "each problem", err: errors.Join(a, b), want: "config: a: bad\nconfig: b: bad", problems: 2},
		{name: "each problem at any depth", err: errors.Join(errors.Join(a), errors.Join(b)), want: "config: a: bad\nconfig: b: bad", problems: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := input.Prefixed("config: ", tt.err)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("Prefixed(nil) = %v, want nil", got)
				}
				return
			}
			if got == nil || got.Error() != tt.want {
				t.Fatalf("Prefixed = %v, want %q", got, tt.want)
			}
			if n := len(input.Problems(got)); n != tt.problems {
				t.Errorf("Prefixed has %d problems, want %d", n, tt.problems)
			}
			if !errors.Is(got, a) {
				t.Errorf("Prefixed(%v) does not wrap %v", tt.err, a)
			}
		})
	}
}
