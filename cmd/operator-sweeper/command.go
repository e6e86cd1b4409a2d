package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
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
	// short says in a line what the command does, for help and completion.
	short() string
	// groups are the option groups the command takes, in the order their flags are listed and
	// checked.
	groups(o *options.Options) []options.Group
	// addFlags binds the command's own flags, which belong to no group.
	addFlags(fs *pflag.FlagSet)
	// setArgs takes the command's arguments, those after its name.
	setArgs(args []string) error
	// run runs the command with its options, parsed and checked: its action, whose result it
	// prints.
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

// parsed is a command line's command with its options, parsed from its flags, the --config file
// and the environment, and checked.
type parsed struct {
	cmd  command
	opts *options.Options
	// flags are the command's flags, as given.
	flags *pflag.FlagSet
}

// newRoot is the command tree of a command line, as cobra runs it: the sweep at its root, the
// other commands under it, each with the flags of its groups and its own bound to options of its
// own, and completion. A command line that names a command, parsed and checked, is handed to
// then; --version prints the version instead. Its errors are to be printed by the caller:
// the tree prints nothing but help, the version and completions. name is how the user called the
// binary.
func newRoot(name string, s streams, then func(ctx context.Context, p parsed) error) *cobra.Command {
	var root *cobra.Command
	ours := map[*cobra.Command]command{}
	for _, c := range commands() {
		o := new(options.Options)
		*o = options.Default()
		fs, showVersion := newFlagSet(c, o)
		cc := &cobra.Command{
			Use:   c.name(),
			Short: c.short(),
			// The command takes its arguments itself, once its flags are read: --version wins
			// over a missing argument, as --help does.
			Args:              cobra.ArbitraryArgs,
			ValidArgsFunction: completeArgs(c, o),
			SilenceErrors:     true,
			SilenceUsage:      true,
			RunE: func(cc *cobra.Command, args []string) error {
				if *showVersion {
					fmt.Fprintf(s.out, "operator-sweeper %s (commit %s)\n", version, commit)
					return nil
				}
				if err := c.setArgs(args); err != nil {
					return err
				}
				if err := options.Complete(o, cc.Flags(), c.groups(o)); err != nil {
					return err
				}
				return then(cc.Context(), parsed{cmd: c, opts: o, flags: cc.Flags()})
			},
		}
		cc.Flags().SortFlags = false
		cc.Flags().AddFlagSet(fs)
		registerFlagCompletions(cc)
		ours[cc] = c
		if c.name() == "" {
			// One word, for completion's functions; the usage shows "kubectl sweeper" as typed.
			cc.Use = strings.ReplaceAll(name, " ", "-")
			cc.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
			root = cc
			continue
		}
		root.AddCommand(cc)
	}
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(cc *cobra.Command, err error) error {
		if c, ok := ours[cc]; ok {
			return notItsFlag(c, err)
		}
		return err
	})
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(cc *cobra.Command, args []string) {
		c, ok := ours[cc]
		if !ok { // completion and help
			cobraHelp(cc, args)
			return
		}
		lines := "Usage: " + name + " " + c.usage() + "\n\n" + c.short() + "."
		if c.name() == "" {
			lines = usage(name) + "\n       " + name + " completion bash|zsh|fish|powershell" +
				"\n\nThe sweep's flags (a command's: " + name + " COMMAND --help):"
		}
		fmt.Fprintf(cc.OutOrStdout(), "%s\n\n%s", lines, cc.Flags().FlagUsages())
	})
	return root
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

// nameFirst moves the name of the command a command line selects, its first argument (flags
// anywhere), to the front, where cobra looks for it: a flag of another command before it, unknown
// to the sweep, must not take it for its value. A line that selects the sweep, or cobra's
// completion, is left as it is.
func nameFirst(args []string) []string {
	fs := pflag.NewFlagSet("any", pflag.ContinueOnError)
	fs.BoolP("help", "h", false, "")
	o := options.Default()
	for _, c := range commands() {
		addFlagsOf(fs, c, &o)
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return args
		case strings.HasPrefix(arg, "--"):
			if f := fs.Lookup(strings.TrimPrefix(arg, "--")); f != nil && f.NoOptDefVal == "" {
				i++ // its value
			}
		case strings.HasPrefix(arg, "-") && len(arg) == 2:
			if f := fs.ShorthandLookup(arg[1:]); f != nil && f.NoOptDefVal == "" {
				i++
			}
		case strings.HasPrefix(arg, "-"):
			// -ojson, --flag=value: the value is in the argument
		default:
			if !slices.ContainsFunc(commands(), func(c command) bool { return c.name() != "" && c.name() == arg }) {
				return args
			}
			return append([]string{arg}, slices.Delete(slices.Clone(args), i, i+1)...)
		}
	}
	return args
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
