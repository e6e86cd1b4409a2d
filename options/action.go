package options

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// The flags of the groups that govern actions: limits, dry-run and backup.
const (
	FlagMaxActions          = "max-actions"
	FlagWriteConcurrency    = "write-concurrency"
	FlagProtectedNamespaces = "protected-namespaces"
	FlagMinAge              = "min-age"
	FlagDryRun              = "dry-run"
	FlagBackupDir           = "backup-dir"
	FlagBackupRetention     = "backup-retention"
)

// LimitOptions say which actions a sweep may take: how many, where, on how old an object.
type LimitOptions struct {
	// MaxActions caps the actions taken in one run; the rest are skipped. 0 means no cap.
	MaxActions int `json:"max-actions"`
	// ProtectedNamespaces are observed and reported, but no action is ever taken in them.
	ProtectedNamespaces []string `json:"protected-namespaces,omitempty"`
	// MinAge is how old an object must be before it is deleted or its ownerReferences changed;
	// nothing created after the sweep began is, whatever MinAge says. Rules apply it to the state
	// of what they read, too.
	MinAge metav1.Duration `json:"min-age"`
	// WriteConcurrency bounds the writes in flight at once.
	WriteConcurrency int `json:"write-concurrency"`
}

func defaultLimitOptions() LimitOptions {
	return LimitOptions{
		MaxActions:          100,
		ProtectedNamespaces: []string{"kube-system", "kube-public", "kube-node-lease"},
		MinAge:              metav1.Duration{Duration: 10 * time.Minute},
		WriteConcurrency:    sweeper.DefaultWriteConcurrency,
	}
}

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *LimitOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxActions, FlagMaxActions, o.MaxActions, "At most this many actions per run; the rest are skipped (reason limit). 0: no cap.")
	fs.StringSliceVar(&o.ProtectedNamespaces, FlagProtectedNamespaces, o.ProtectedNamespaces, "Report, but never act, in these namespaces (names or globs).")
	fs.DurationVar(&o.MinAge.Duration, FlagMinAge, o.MinAge.Duration, "Never delete or re-own an object younger than this (nor one created after the sweep began).")
	fs.IntVar(&o.WriteConcurrency, FlagWriteConcurrency, o.WriteConcurrency, "At most this many writes (and reads of their objects) in flight at once.")
}

// Validate returns every problem of the group.
func (o *LimitOptions) Validate() []error {
	var errs []error
	if o.MaxActions < 0 {
		errs = append(errs, invalid(FlagMaxActions, o.MaxActions, "use 0 (no cap) or a positive number"))
	}
	if o.MinAge.Duration < 0 {
		errs = append(errs, invalid(FlagMinAge, o.MinAge.Duration, "it must not be negative"))
	}
	if o.WriteConcurrency < 1 {
		errs = append(errs, invalid(FlagWriteConcurrency, o.WriteConcurrency, "use 1 or more"))
	}
	errs = append(errs, validPatterns(FlagProtectedNamespaces, o.ProtectedNamespaces)...)
	if len(o.ProtectedNamespaces) == 0 {
		// An empty list (--protected-namespaces=, or [] in the file) is more likely a slip than a
		// wish to let actions reach kube-system.
		errs = append(errs, fmt.Errorf("--%s is empty: name the namespaces no action may reach (default %s)",
			FlagProtectedNamespaces, strings.Join(defaultLimitOptions().ProtectedNamespaces, ",")))
	}
	return errs
}

// ApplyTo sets the sweep's limits.
func (o *LimitOptions) ApplyTo(cfg *sweeper.Config) {
	cfg.MaxActions, cfg.ProtectedNamespaces, cfg.MinAge = o.MaxActions, o.ProtectedNamespaces, o.MinAge.Duration
	cfg.WriteConcurrency = o.WriteConcurrency
}

// DryRunOptions say whether and how a command's writes reach the API server.
type DryRunOptions struct {
	// DryRun is client (default: write nothing), server or none.
	DryRun report.DryRunMode `json:"dry-run,omitempty"`
}

func defaultDryRunOptions() DryRunOptions { return DryRunOptions{DryRun: report.DryRunClient} }

// AddFlags binds the group's flag to o; the default shown is o's current value.
func (o *DryRunOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar((*string)(&o.DryRun), FlagDryRun, string(o.DryRun), "client: plan and report, write nothing; server: send writes with dryRun=All; none: apply.")
}

// Validate returns every problem of the group.
func (o *DryRunOptions) Validate() []error {
	if !slices.Contains([]report.DryRunMode{report.DryRunClient, report.DryRunServer, report.DryRunNone}, o.DryRun) {
		return []error{invalid(FlagDryRun, fmt.Sprintf("%q", o.DryRun), "use client, server or none")}
	}
	return nil
}

// BackupOptions say how long a sweep keeps the pre-images of the objects it writes, and whether in
// files instead of Secrets.
type BackupOptions struct {
	// BackupDir, if set, keeps the pre-image of each object before it is written in files of a
	// directory per run, synced before the write, instead of Secrets of the sweeper's namespace; a
	// write whose pre-image cannot be kept is not sent.
	BackupDir string `json:"backup-dir,omitempty"`
	// BackupRetention is how long pre-images are kept: older ones are removed at the start of each
	// run that writes. It takes days ("30d") as well as Go durations.
	BackupRetention model.Duration `json:"backup-retention"`
}

func defaultBackupOptions() BackupOptions {
	return BackupOptions{BackupRetention: model.Duration(30 * 24 * time.Hour)}
}

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *BackupOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BackupDir, FlagBackupDir, o.BackupDir, "Keep the pre-image of each object written in files of this directory instead of Secrets of the sweeper's namespace, synced before the write.")
	fs.Var((*retention)(&o.BackupRetention), FlagBackupRetention, "Remove pre-images older than this at the start of a run that writes (30d, 12h).")
}

// Validate returns every problem of the group.
func (o *BackupOptions) Validate() []error {
	var errs []error
	if o.BackupRetention <= 0 {
		errs = append(errs, invalid(FlagBackupRetention, o.BackupRetention, "it must be positive, such as 30d"))
	}
	if o.BackupDir != "" {
		if info, err := os.Stat(o.BackupDir); err != nil || !info.IsDir() {
			errs = append(errs, fmt.Errorf("--%s %s is not a directory: create it (a volume mounted there, in a cluster) or leave the flag out", FlagBackupDir, o.BackupDir))
		}
	}
	return errs
}

// ApplyTo sets where the sweep keeps pre-images.
func (o *BackupOptions) ApplyTo(cfg *sweeper.Config) {
	cfg.BackupDir, cfg.BackupRetention = o.BackupDir, time.Duration(o.BackupRetention)
}

// retention is a flag of a duration that takes days ("30d"), as Prometheus' durations do.
type retention model.Duration

func (r *retention) String() string { return model.Duration(*r).String() }

func (r *retention) Set(s string) error {
	d, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("use a duration such as 30d or 12h: %w", err)
	}
	*r = retention(d)
	return nil
}

func (r *retention) Type() string { return "duration" }
