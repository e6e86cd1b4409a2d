package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
	"golang.org/x/term"
	"k8s.io/klog/v2"
)

// connection is a command's link to the cluster: its clients, the cluster's name, the logger, and
// the context of the run (--timeout).
type connection struct {
	ctx     context.Context
	cancel  context.CancelFunc
	clients *sweeper.Clients
	cluster string
	logger  *slog.Logger
	// progress is where the observe stage shows its progress: standard error, if a terminal.
	progress io.Writer
}

// connect finds the cluster, builds the clients and makes sure the API server answers; what is
// wrong with the kubeconfig is an InputError. The cluster's name is --cluster, or the kubeconfig's
// context.
func connect(ctx context.Context, o *options.Options, s streams) (*connection, error) {
	logger := o.Logger(s.err)
	// client-go logs through klog; route it to the same structured log.
	klog.SetSlogLogger(logger)
	config, cluster, err := sweeper.LoadRESTConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	if o.Cluster != "" {
		cluster = o.Cluster
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if o.Timeout.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, o.Timeout.Duration)
	}
	clients, err := sweeper.NewClients(config, o.ClientConfig(), logger)
	if err != nil {
		cancel()
		return nil, &sweeper.InputError{Err: fmt.Errorf("kubeconfig: %w", err)}
	}
	if err := clients.Ping(runCtx, config.Host); err != nil {
		cancel()
		return nil, err
	}
	conn := &connection{ctx: runCtx, cancel: cancel, clients: clients, cluster: cluster, logger: logger}
	if f, ok := s.err.(*os.File); ok && o.LogFormat == "text" && term.IsTerminal(int(f.Fd())) {
		conn.progress = f
	}
	return conn, nil
}

// sweep is a sweep of the cluster connected to, as cfg says, by ruleSet.
func (c *connection) sweep(cfg sweeper.Config, ruleSet []rules.Rule) *report.Report {
	cfg.Cluster = c.cluster
	engine := &sweeper.Engine{Config: cfg, Clients: c.clients, Rules: ruleSet, Logger: c.logger, Progress: c.progress}
	return engine.Run(c.ctx)
}
