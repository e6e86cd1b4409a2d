// Package pushgateway runs a real Prometheus Pushgateway (the Debian package
// prometheus-pushgateway, which make test installs) on a free loopback port, with its own
// persistence file, for operator-sweeper's integration tests.
package pushgateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"
)

// Gateway is a running Pushgateway.
type Gateway struct {
	// URL is where it listens: http://127.0.0.1:<port>.
	URL string

	username, password string
	cmd                *exec.Cmd
	dir                string
	exited             chan error
	stop               sync.Once
	stopErr            error
}

// Options configure a Gateway.
type Options struct {
	// Username and Password, if set, are required of every request (--web.config.file).
	Username, Password string
}

// Start runs a Pushgateway and waits until it is ready.
func Start(opts Options) (*Gateway, error) {
	bin := os.Getenv("PUSHGATEWAY_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("prometheus-pushgateway"); err != nil {
			return nil, errors.New("prometheus-pushgateway is not installed: run the tests through make (make test installs the Debian package prometheus-pushgateway), or apt-get install prometheus-pushgateway")
		}
	}
	dir, err := os.MkdirTemp("", "operator-sweeper-pushgateway-")
	if err != nil {
		return nil, err
	}
	g := &Gateway{username: opts.Username, password: opts.Password, dir: dir, exited: make(chan error, 1)}
	address, err := freeAddress()
	if err != nil {
		return nil, err
	}
	g.URL = "http://" + address
	// Its own persistence file: Debian's default is shared by every gateway on the machine.
	args := []string{"--web.listen-address=" + address, "--persistence.file=" + filepath.Join(dir, "metrics")}
	if opts.Username != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			return nil, err
		}
		config := filepath.Join(dir, "web.yml")
		if err := os.WriteFile(config, fmt.Appendf(nil, "basic_auth_users:\n  %s: %s\n", opts.Username, hash), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--web.config.file="+config)
	}
	g.cmd = exec.Command(bin, args...)
	g.cmd.Stdout, g.cmd.Stderr = io.Discard, io.Discard
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { g.exited <- g.cmd.Wait() }()
	if err := g.waitReady(10 * time.Second); err != nil {
		_ = g.Stop()
		return nil, err
	}
	return g, nil
}

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (g *Gateway) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-g.exited:
			return fmt.Errorf("pushgateway exited: %v", err)
		default:
		}
		if resp, err := g.get(context.Background(), "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("pushgateway at %s not ready after %s", g.URL, timeout)
}

func (g *Gateway) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+path, nil)
	if err != nil {
		return nil, err
	}
	if g.username != "" {
		req.SetBasicAuth(g.username, g.password)
	}
	return http.DefaultClient.Do(req)
}

// Stop stops the gateway and removes its files; stopping it again does nothing.
func (g *Gateway) Stop() error {
	g.stop.Do(func() {
		_ = g.cmd.Process.Kill()
		<-g.exited
		g.stopErr = os.RemoveAll(g.dir)
	})
	return g.stopErr
}

// Metrics scrapes what the gateway exposes: every pushed series, with its grouping labels.
func (g *Gateway) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	resp, err := g.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", g.URL, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// Series returns the value of every series of a family whose labels include want, by its labels.
func Series(families map[string]*dto.MetricFamily, name string, want map[string]string) map[string]float64 {
	out := map[string]float64{}
	mf, ok := families[name]
	if !ok {
		return out
	}
	for _, m := range mf.GetMetric() {
		labels := model.LabelSet{}
		for _, l := range m.GetLabel() {
			labels[model.LabelName(l.GetName())] = model.LabelValue(l.GetValue())
		}
		match := true
		for k, v := range want {
			if string(labels[model.LabelName(k)]) != v {
				match = false
			}
		}
		if match {
			out[labels.String()] = m.GetGauge().GetValue()
		}
	}
	return out
}
