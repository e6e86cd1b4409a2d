package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/operator-sweeper/operator-sweeper/action"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// targetCompleter is a command whose argument is TYPE/NAME, which the shell may complete: its
// types, then the names of the objects of one.
type targetCompleter interface {
	// completion is what completes its argument, with the options parsed so far.
	completion(o *options.Options) (types func(context.Context) []string, names func(ctx context.Context, typ string) []string)
}

// completeArgs completes a command's arguments: TYPE/NAME for a targetCompleter, files for merge,
// nothing for the others.
func completeArgs(c command, o *options.Options) cobra.CompletionFunc {
	switch c := c.(type) {
	case targetCompleter:
		return func(cc *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			ctx := cc.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			types, names := c.completion(o)
			typ, _, typed := strings.Cut(toComplete, "/")
			if !typed {
				// TYPE/, then the name: no space after the slash.
				return withPrefix(types(ctx), "", "/", toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
			}
			return withPrefix(names(ctx, typ), typ+"/", "", toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	case *mergeCommand:
		return nil // report files
	}
	return cobra.NoFileCompletions
}

// registerFlagCompletions completes the values of a command's flags: those that take one of a few
// (options.Choices), kubeconfig contexts, and rules. The others complete as files, which many
// are.
func registerFlagCompletions(cc *cobra.Command) {
	register := func(flag string, fn cobra.CompletionFunc) {
		if cc.Flags().Lookup(flag) != nil {
			_ = cc.RegisterFlagCompletionFunc(flag, fn) // each flag once
		}
	}
	for flag, choices := range options.Choices() {
		register(flag, cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp))
	}
	register(options.FlagContext, completeContexts(false))
	register(options.FlagContexts, completeContexts(true))
	register(options.FlagRules, func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		names := append([]string{"*"}, options.RuleNames()...)
		for _, name := range options.RuleNames() {
			names = append(names, "-"+name) // disables it
		}
		return list(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// completeContexts completes the contexts of the kubeconfig --kubeconfig (or $KUBECONFIG, or
// ~/.kube/config) names; of a list, its last item.
func completeContexts(isList bool) cobra.CompletionFunc {
	return func(cc *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		kubeconfig, _ := cc.Flags().GetString(options.FlagKubeconfig)
		names, err := sweeper.Contexts(kubeconfig, nil, true)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if isList {
			return list(names, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return withPrefix(names, "", "", toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// list completes the last item of a comma-separated list.
func list(values []string, toComplete string) []cobra.Completion {
	done := ""
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done = toComplete[:i+1]
	}
	return withPrefix(values, done, "", toComplete)
}

// withPrefix is prefix+value+suffix of each value that starts what toComplete starts.
func withPrefix(values []string, prefix, suffix, toComplete string) []cobra.Completion {
	var out []cobra.Completion
	for _, v := range values {
		if s := prefix + v + suffix; strings.HasPrefix(s, toComplete) {
			out = append(out, s)
		}
	}
	return out
}

// completion completes explain's TYPE/NAME: the server's types, and the objects of one in -n.
func (c *explainCommand) completion(o *options.Options) (func(context.Context) []string, func(context.Context, string) []string) {
	at := action.Completion{Options: o, Namespace: c.namespace}
	return at.ExplainTypes, at.ExplainNames
}

// completion completes preflight's TYPE/NAME: its types, and what could be uninstalled as one in
// -n.
func (c *preflightCommand) completion(o *options.Options) (func(context.Context) []string, func(context.Context, string) []string) {
	at := action.Completion{Options: o, Namespace: c.namespace}
	return func(context.Context) []string { return at.PreflightTypes() }, at.PreflightNames
}
