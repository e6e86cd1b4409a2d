package action

import (
	"context"
	"io"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/restore"
)

// Restore is `operator-sweeper restore --from REPORT|DIR | --run ID [--only TYPE/NAME,…]`: the
// undoing of a sweep's actions.
type Restore struct {
	// Options are restore's, built and checked by the options package.
	Options *options.Options
	// Source is where the pre-images are, and which of them to put back.
	Source restore.Source
	// Log is where the logs go.
	Log io.Writer
}

// Run undoes the actions the sweep applied; the Result is a report like a sweep's, with findings
// of rule "restore". --dry-run applies as to a sweep: client, the default, reads and plans only.
func (a *Restore) Run(ctx context.Context) (*Result, error) {
	o := a.Options
	records, err := restore.Load(a.Source)
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, o, a.Log)
	if err != nil {
		return nil, err
	}
	defer conn.cancel()
	cfg := restore.Config{Cluster: conn.cluster, Version: o.Version, Namespace: o.Namespace(), DryRun: o.DryRun}
	r, err := restore.Run(conn.ctx, cfg, conn.clients, records, a.Source, conn.logger)
	if err != nil {
		return nil, err
	}
	return single(o.OutputOptions, r), nil
}
