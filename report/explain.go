package sweeper

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// Target is the object `operator-sweeper explain` is asked about: TYPE/NAME as kubectl takes it
// (namespace/logging, syslogngconfig.logging.banzaicloud.io/s1, apiservice/v1.packages.operators.coreos.com),
// and, for a namespaced type, its namespace.
type Target struct {
	Type, Name, Namespace string
}

// ParseTarget parses TYPE/NAME.
func ParseTarget(arg, namespace string) (Target, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
		return Target{}, inputErrorf("explain %q: give the object as TYPE/NAME, such as namespace/logging or apiservice/v1.packages.operators.coreos.com", arg)
	}
	return Target{Type: typ, Name: name, Namespace: namespace}, nil
}

func (t Target) String() string { return t.Type + "/" + t.Name }

// Explain sweeps the cluster without changing anything, whatever --dry-run says, and prints what
// the sweep says about target: its findings, what keeps it stuck and what it keeps stuck, down to
// the root causes, with all their evidence, and what --dry-run=none would do. -o json and yaml
// print the same findings as a SweepReport; table and markdown, the text. A target that does not
// exist is an InputError. A webhook that would refuse a write is only known once the write is
// tried: explain does not show it.
func Explain(ctx context.Context, opts Options, target Target, streams Streams) error {
	opts.DryRun, opts.PushgatewayURL, opts.ReportFile = DryRunClient, "", ""
	opts.NotifyOptions = DefaultOptions().NotifyOptions // nor does it notify (nor read the URL's file)
	engine, runCtx, cancel, err := connect(ctx, &opts, streams)
	if err != nil {
		return err
	}
	defer cancel()
	uid, what, err := engine.resolve(runCtx, target)
	if err != nil {
		return err
	}
	report := engine.Run(runCtx)
	chain := report.only(report.chainOf(uid))
	if opts.Output == OutputJSON || opts.Output == OutputYAML {
		if err := chain.Print(streams.Out, opts.Output); err != nil {
			return err
		}
	} else {
		chain.printExplanation(streams.Out, what)
	}
	if report.Failed() {
		return fmt.Errorf("%w: %s", ErrIncomplete, report.failure())
	}
	return nil
}

// resolve finds the target's resource as kubectl would (plural, singular, kind or short name,
// with an optional group), and the object's UID, with a name for it: "Namespace logging".
func (e *Engine) resolve(ctx context.Context, t Target) (types.UID, string, error) {
	cached := memory.NewMemCacheClientWithContext(e.Clients.Discovery)
	mapper := restmapper.NewShortcutExpanderWithContext(restmapper.NewDeferredDiscoveryRESTMapperWithContext(cached), cached, nil)
	gvr, err := resourceFor(ctx, mapper, t.Type)
	switch {
	case meta.IsNoMatchError(err):
		return "", "", inputErrorf("explain %s: the server has no resource type %q (%w)", t, t.Type, err)
	case err != nil:
		return "", "", fmt.Errorf("explain %s: discover the resource type %q: %w", t, t.Type, err)
	}
	gvk, err := mapper.KindForWithContext(ctx, gvr)
	if err != nil {
		return "", "", inputErrorf("explain %s: %w", t, err)
	}
	mapping, err := mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", "", inputErrorf("explain %s: %w", t, err)
	}
	namespace := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if t.Namespace == "" {
			return "", "", inputErrorf("explain %s: %s is namespaced: give its namespace with -n", t, gvr.GroupResource())
		}
		namespace = t.Namespace
	}
	// A list by name, as the sweep's confirmation reads: the shipped RBAC grants list, not get.
	list, err := resourceClient(e.Clients.Metadata, gvr, namespace).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + t.Name})
	switch {
	case err != nil:
		return "", "", fmt.Errorf("explain %s: read it: %w", t, err)
	case len(list.Items) == 0:
		where := ""
		if namespace != "" {
			where = " in namespace " + namespace
		}
		return "", "", inputErrorf("explain %s: %s %q not found%s", t, gvr.GroupResource(), t.Name, where)
	}
	obj := list.Items[0]
	what := gvk.Kind + " " + t.Name
	if namespace != "" {
		what = gvk.Kind + " " + namespace + "/" + t.Name
	}
	return obj.UID, what, nil
}

// resourceFor maps TYPE to a resource: "resource.version.group" if it parses as one, else
// "resource.group" or "resource".
func resourceFor(ctx context.Context, mapper meta.RESTMapperWithContext, typ string) (schema.GroupVersionResource, error) {
	full, partial := schema.ParseResourceArg(strings.ToLower(typ))
	if full != nil {
		if gvr, err := mapper.ResourceForWithContext(ctx, *full); err == nil {
			return gvr, nil
		}
	}
	return mapper.ResourceForWithContext(ctx, partial.WithVersion(""))
}

// chainOf returns the findings about an object, about what keeps it stuck (down to the root
// causes) and about what it keeps stuck (up to the top), in table order.
func (r *Report) chainOf(uid types.UID) []row {
	c := r.chains()
	keep := map[types.UID]bool{}
	var down, up func(types.UID)
	down = func(u types.UID) {
		if !keep[u] {
			keep[u] = true
			for _, b := range c.blockers[u] {
				down(b)
			}
		}
	}
	up = func(u types.UID) {
		for blocked, blockers := range c.blockers {
			if slices.Contains(blockers, u) && !keep[blocked] {
				keep[blocked] = true
				up(blocked)
			}
		}
	}
	down(uid)
	up(uid)
	return slices.DeleteFunc(r.rows(), func(rw row) bool { return !keep[r.Findings[rw.finding].Object.UID] })
}

// only is the report with only the findings of rows, in their order, and the summary counted
// again.
func (r *Report) only(rows []row) *Report {
	out := *r
	out.Findings = make([]FindingResult, 0, len(rows))
	out.Summary = Summary{Resources: r.Summary.Resources, Scanned: r.Summary.Scanned}
	for _, rw := range rows {
		f := r.Findings[rw.finding]
		out.Findings = append(out.Findings, f)
		out.Summary.Findings++
		switch f.Outcome {
		case OutcomePlanned, OutcomeDryRun:
			out.Summary.Planned++
		case OutcomeApplied:
			out.Summary.Applied++
		case OutcomeFailed:
			out.Summary.Failed++
		case OutcomeSkipped:
			out.Summary.Skipped++
		}
	}
	out.countStuckNamespaces(everyNamespace)
	return &out
}

// printExplanation prints the chain as text: each object once, what blocks it indented below it,
// each finding with what --dry-run=none would do and its evidence.
func (r *Report) printExplanation(w io.Writer, what string) {
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "%s: no rule has anything to say about it (unless --include-*/--exclude-* kept it from being walked).\n", what)
		return
	}
	var last types.UID
	depth := 0
	for i, rw := range r.rows() {
		f := r.Findings[rw.finding]
		pad := strings.Repeat("    ", rw.depth)
		if i == 0 || f.Object.UID != last {
			if rw.depth > depth {
				fmt.Fprintf(w, "%s  blocked by:\n", strings.Repeat("    ", rw.depth-1))
			}
			fmt.Fprintf(w, "%s%s %s\n", pad, f.Object.Kind, f.Object.namespacedName())
			last, depth = f.Object.UID, rw.depth
		}
		fmt.Fprintf(w, "%s  %s (%s): %s\n", pad, f.Rule, f.Severity, f.Reason)
		if f.Action != nil {
			fmt.Fprintf(w, "%s    with --dry-run=none: %s, %s\n", pad, f.Action.Type, wouldDo(f))
		}
		for _, e := range f.Evidence {
			fmt.Fprintf(w, "%s    - %s\n", pad, e)
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error (%s): %s\n", e.stage(), e.Message)
	}
}

// wouldDo says what a run with --dry-run=none would do with a planned action.
func wouldDo(f FindingResult) string {
	switch {
	case f.Outcome == OutcomePlanned:
		return "would be applied"
	case f.Error != "":
		return fmt.Sprintf("would be %s: %s", f.outcome(), f.Error)
	default:
		return "would be " + f.outcome()
	}
}
