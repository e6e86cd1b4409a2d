package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/options"
)

// command is one of operator-sweeper's commands: the option groups it takes, its own flags and
// arguments, and what it runs. Each lives in a file of its own.
type command interface {
	// name is the word that selects the command; "" for the sweep, which needs none.
	name() string
	// usage is the command's usage line, after the binary's name.
	usage() string
	// groups are the option groups the command takes, in the order their flags are listed and
	// checked.
	groups(o *options.Options) []options.Group
	// addFlags binds the command's own flags, which belong to no group.
	addFlags(fs *pflag.FlagSet)
	// setArgs takes the command's arguments, those after its name.
	setArgs(args []string) error
	// run runs the command with its options, parsed and checked.
	run(ctx context.Context, o *options.Options, s streams) error
}

// commands are every command, the sweep first.
func commands() []command {
	return []command{&sweepCommand{}, &explainCommand{}, &preflightCommand{}, &restoreCommand{}, &mergeCommand{}}
}

// usage is every command's usage line.
func usage(binary string) string {
	var lines []string
	for i, c := range commands() {
		prefix := "Usage: "
		if i > 0 {
			prefix = "       "
		}
		lines = append(lines, prefix+binary+" "+c.usage())
	}
	return strings.Join(lines, "\n")
}

var errVersion = errors.New("version requested")

// parse finds the command of a command line, and parses its flags into the options of its groups:
// the --config file onto the defaults, the environment onto that, the flags on top. A flag of
// another command is an error that names it. The options are checked.
func parse(args []string) (command, *options.Options, *pflag.FlagSet, error) {
	cmd := commandOf(args)
	o := options.Default()
	fs, showVersion := newFlagSet(cmd, &o)
	if err := fs.Parse(args); err != nil {
		return cmd, &o, fs, notItsFlag(cmd, err)
	}
	if *showVersion {
		return cmd, &o, fs, errVersion
	}
	rest := fs.Args()
	if cmd.name() != "" {
		rest = rest[1:]
	}
	if err := cmd.setArgs(rest); err != nil {
		return cmd, &o, fs, err
	}
	return cmd, &o, fs, options.Complete(&o, fs, cmd.groups(&o))
}

// newFlagSet binds the command's groups and its own flags to o; the defaults shown are o's
// current values.
func newFlagSet(cmd command, o *options.Options) (*pflag.FlagSet, *bool) {
	fs := pflag.NewFlagSet("operator-sweeper", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by run
	fs.SortFlags = false
	cmd.addFlags(fs)
	for _, g := range cmd.groups(o) {
		g.AddFlags(fs)
	}
	fs.StringVar(&o.ConfigFile, options.FlagConfig, o.ConfigFile, "YAML config file, shared by every command; its keys are the flag names, plus \"rules\" and \"finalizers\". Flags override it.")
	showVersion := fs.Bool("version", false, "Print the version and exit.")
	return fs, showVersion
}

// commandOf is the command a command line selects by its first argument, flags anywhere: the
// sweep if none does. Every command's flags are known here, so that their values are not taken
// for the command's name.
func commandOf(args []string) command {
	fs := pflag.NewFlagSet("any", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolP("help", "h", false, "")
	o := options.Default()
	for _, c := range commands() {
		addFlagsOf(fs, c, &o)
	}
	_ = fs.Parse(args) // a bad flag is the command's parse's to report
	for _, c := range commands() {
		if c.name() != "" && c.name() == fs.Arg(0) {
			return c
		}
	}
	return commands()[0]
}

// addFlagsOf adds to fs the flags of c that fs does not have yet.
func addFlagsOf(fs *pflag.FlagSet, c command, o *options.Options) {
	own, _ := newFlagSet(c, o)
	own.VisitAll(func(f *pflag.Flag) {
		if fs.Lookup(f.Name) == nil && (f.Shorthand == "" || fs.ShorthandLookup(f.Shorthand) == nil) {
			fs.AddFlag(f)
		}
	})
}

// notItsFlag says, of a flag the command does not take, which commands do.
func notItsFlag(cmd command, err error) error {
	var missing *pflag.NotExistError
	if !errors.As(err, &missing) {
		return err
	}
	// A shorthand's error names the letter, and the group of letters it came in.
	name, shorthand := missing.GetSpecifiedName(), missing.GetSpecifiedShortnames() != ""
	var takers []string
	for _, c := range commands() {
		fs, _ := newFlagSet(c, new(options.Default()))
		if shorthand && fs.ShorthandLookup(name) != nil || !shorthand && fs.Lookup(name) != nil {
			takers = append(takers, commandTitle(c))
		}
	}
	if len(takers) == 0 {
		return err
	}
	flag := "--" + name
	if shorthand {
		flag = "-" + name
	}
	who := takers[len(takers)-1]
	if len(takers) > 1 {
		who = strings.Join(takers[:len(takers)-1], ", ") + " and " + who
	}
	return fmt.Errorf("%s does not take %s: it is a flag of %s", commandTitle(cmd), flag, who)
}

// commandTitle names a command in a message.
func commandTitle(c command) string {
	if c.name() == "" {
		return "the sweep"
	}
	return c.name()
}
