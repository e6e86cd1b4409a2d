package sweeper

import (
	"time"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// Config is what a sweep reads of its options: which run it is, what it walks, which actions it
// may take and how it sends and keeps them. Package options fills it from the command line.
type Config struct {
	// Cluster and Version name the run in its report.
	Cluster, Version string

	// DryRun says whether and how actions reach the API server.
	DryRun report.DryRunMode

	// IncludeResources and ExcludeResources select resources by pattern: "pods" (any group),
	// "deployments.apps", "*.operators.coreos.com".
	IncludeResources, ExcludeResources []string
	// IncludeNamespaces and ExcludeNamespaces select namespaces by name or glob.
	IncludeNamespaces, ExcludeNamespaces []string
	// Concurrency is how many lists run in parallel; PageSize is the limit of each list request.
	Concurrency int
	PageSize    int64
	// Shard is the part of the sweep this run does; the zero Shard is the whole sweep.
	Shard Shard

	// MaxActions caps the actions taken in one run; the rest are skipped. 0 means no cap.
	MaxActions int
	// ProtectedNamespaces are observed and reported, but no action is ever taken in them.
	ProtectedNamespaces []string
	// MinAge is how old an object must be before it is deleted or its ownerReferences changed;
	// nothing created after the sweep began is, whatever MinAge says.
	MinAge time.Duration
	// WriteConcurrency bounds the writes in flight at once (and the reads of their objects right
	// before them); 0 means DefaultWriteConcurrency.
	WriteConcurrency int

	// Namespace is the sweeper's own: where, without BackupDir, it keeps the pre-images of the
	// objects it writes, in Secrets, and, either way, the key it signs their records with.
	Namespace string
	// BackupDir, if set, keeps the pre-images instead, in files of a directory per run, synced
	// before each write; a write whose pre-image cannot be kept is not sent.
	BackupDir string
	// BackupRetention is how long pre-images are kept: older ones are removed at the start of each
	// run.
	BackupRetention time.Duration
}

// DefaultWriteConcurrency is the writes in flight at once unless said otherwise.
const DefaultWriteConcurrency = 8

func (c Config) writeConcurrency() int {
	if c.WriteConcurrency > 0 {
		return c.WriteConcurrency
	}
	return DefaultWriteConcurrency
}

// metadata is the report's metadata of a run with this config.
func (c Config) metadata() report.Metadata {
	m := report.Metadata{Mode: c.DryRun, Version: c.Version, Cluster: c.Cluster}
	if c.Shard.Count > 0 {
		m.Shard = c.Shard.String()
	}
	return m
}
