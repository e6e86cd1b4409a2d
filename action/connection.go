package action

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/term"
	"k8s.io/klog/v2"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// connection is an action's link to the cluster: its clients, the cluster's name, the logger
// (every line of which names the cluster), and the context of the run, whose --timeout starts
// when the run does (begin).
type connection struct {
	// base is the action's context, carrying the cluster's logger to client-go's contextual
	// logging; ctx and cancel are the run's, bounded by timeout from begin.
	base    context.Context
	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration
	clients *sweeper.Clients
	cluster string
	logger  *slog.Logger
	// progress is where the observe stage shows its progress: the log, if a terminal.
	progress io.Writer
}

// connect finds the cluster, builds the clients and makes sure the API server answers, within
// --timeout; what is wrong with the kubeconfig is an input.Error. The cluster's name is --cluster,
// or the kubeconfig's context. Logs go to log. The run's clock starts when connected; begin
// restarts it.
func connect(ctx context.Context, o *options.Options, log io.Writer) (*connection, error) {
	config, cluster, err := sweeper.LoadRESTConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	if o.Cluster != "" {
		cluster = o.Cluster
	}
	logger := o.Logger(log).With("cluster", cluster)
	conn := &connection{base: klog.NewContext(ctx, logr.FromSlogHandler(logger.Handler())), timeout: o.Timeout.Duration,
		cluster: cluster, logger: logger}
	conn.begin()
	clients, err := sweeper.NewClients(config, o.ClientConfig(), logger)
	if err != nil {
		conn.cancel()
		return nil, &input.Error{Err: fmt.Errorf("kubeconfig: %w", err)}
	}
	if err := clients.Ping(conn.ctx, config.Host); err != nil {
		conn.cancel()
		return nil, err
	}
	conn.clients = clients
	if f, ok := log.(*os.File); ok && o.LogFormat == "text" && term.IsTerminal(int(f.Fd())) {
		conn.progress = f
	}
	conn.begin()
	return conn, nil
}

// begin starts the run's clock: its context ends --timeout from now, and the previous one, if
// any, ends now. A fleet's cluster begins when its sweep does, not when it waited for a turn.
func (c *connection) begin() {
	if c.cancel != nil {
		c.cancel()
	}
	c.ctx, c.cancel = c.base, context.CancelFunc(func() {})
	if c.timeout > 0 {
		c.ctx, c.cancel = context.WithTimeout(c.base, c.timeout)
	}
}

// ensureState makes sure, for a run that writes, that the sweeper's namespace is there to keep its
// signing key and pre-images in: created when missing and the user may, else an input.Error that
// says what to do (sweeper.EnsureStateNamespace).
func (c *connection) ensureState(o *options.Options, writes bool) error {
	if !writes {
		return nil
	}
	namespace := o.Namespace()
	created, err := sweeper.EnsureStateNamespace(c.ctx, c.clients, namespace)
	if created {
		c.logger.InfoContext(c.ctx, "created the sweeper's namespace, where a run that writes keeps its signing key and pre-images (Pod Security: restricted)",
			"namespace", namespace)
	}
	return err
}

// sweep is a sweep of the cluster connected to, as cfg says, by ruleSet.
func (c *connection) sweep(cfg sweeper.Config, ruleSet []rules.Rule) *report.Report {
	cfg.Cluster = c.cluster
	engine := &sweeper.Engine{Config: cfg, Clients: c.clients, Rules: ruleSet, Logger: c.logger, Progress: c.progress}
	return engine.Run(c.ctx)
}
