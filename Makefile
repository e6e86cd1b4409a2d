# operator-sweeper. `make help` lists the targets; a newcomer needs `make demo` and `make test`.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
BIN     ?= bin/operator-sweeper
IMAGE   ?= ghcr.io/operator-sweeper/operator-sweeper:$(VERSION)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# The Dockerfile builds with this target too, so the flags and version stamping live here only.
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
STATICCHECK_VERSION := v0.8.2

# Unit tests need no cluster; integration tests start a real kube-apiserver and etcd and, in
# test/controllers, kube-controller-manager, kube-scheduler, kwok and OLM v0: built once per machine
# by hack/testbin.sh into ~/.cache/operator-sweeper/testbin.
# Every package with tests outside test/ (a list by hand once forgot preflight's); evaluated when used.
UNIT_PACKAGES         = $(shell $(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | grep -v '/test/')
INTEGRATION_PACKAGES := ./test/...
API_PACKAGES         := ./test/integration/... ./test/cluster/...
CONTROLLER_PACKAGES  := ./test/controllers/...
OPERATOR_PACKAGES    := ./test/operators/...
# The rest of test/ (a new suite there needs the whole control plane, until said otherwise).
E2E_PACKAGES          = $(filter-out $(patsubst ./%/...,$(MODULE)/%,$(API_PACKAGES) $(CONTROLLER_PACKAGES) $(OPERATOR_PACKAGES)),$(shell $(GO) list ./test/...))
MODULE               := github.com/operator-sweeper/operator-sweeper

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build a static bin/operator-sweeper (CGO_ENABLED=0, -trimpath, version stamped) and the kubectl plugin bin/kubectl-sweeper.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/operator-sweeper
	cp $(BIN) $(dir $(BIN))kubectl-sweeper

# The platforms of the kubectl plugin's release archives, and the krew manifest that lists them.
DIST_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

# The chart's version in a release: the release's, without its v, when it is a SemVer tag; the
# chart's own otherwise (an untagged build).
CHART_VERSION ?= $(shell echo '$(VERSION)' | sed -n 's/^v\([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*.*\)$$/\1/p')
# Where make chart-push publishes the chart, as an OCI artifact.
CHART_REGISTRY ?= oci://ghcr.io/operator-sweeper/charts

.PHONY: dist
dist: ## Build the kubectl plugin's release archives and the Helm chart's package into bin/dist.
	@rm -rf bin/dist && mkdir -p bin/dist
	@for platform in $(DIST_PLATFORMS); do \
	  os="$${platform%/*}"; arch="$${platform#*/}"; dir="bin/dist/$${os}_$${arch}"; mkdir -p "$$dir"; \
	  CGO_ENABLED=0 GOOS="$$os" GOARCH="$$arch" $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o "$$dir/kubectl-sweeper" ./cmd/operator-sweeper; \
	  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$$dir" -cf - kubectl-sweeper | gzip -n > "bin/dist/kubectl-sweeper_$(VERSION)_$${os}_$${arch}.tar.gz"; \
	done
	"$$(hack/helm.sh)" package charts/operator-sweeper -d bin/dist $(if $(CHART_VERSION),--version $(CHART_VERSION) --app-version v$(CHART_VERSION))
	@ls bin/dist/*.tar.gz bin/dist/*.tgz

.PHONY: chart-push
chart-push: ## Publish the chart make dist packaged to $(CHART_REGISTRY) as an OCI artifact (helm registry login first).
	"$$(hack/helm.sh)" push bin/dist/operator-sweeper-*.tgz $(CHART_REGISTRY)

.PHONY: krew-manifest
krew-manifest: dist ## Write plugins/sweeper.yaml, the krew manifest of the archives of $(VERSION).
	$(GO) run ./hack/krew --version $(VERSION) --dist bin/dist > plugins/sweeper.yaml

IMAGE_DIR ?= bin/image

.PHONY: image
image: build ## Build the container image without a container engine: OCI layout bin/image, and bin/image.tar for docker load (hack/image).
	$(GO) run ./hack/image --binary $(BIN) --out $(IMAGE_DIR) --version $(VERSION) --revision $(COMMIT) --arch $(shell $(GO) env GOARCH)

.PHONY: image-docker
image-docker: ## Build the container image with a container engine, from the Dockerfile (same paths, user, entrypoint and labels as make image).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

.PHONY: manifests
manifests: generate ## Write the generated RBAC and admission parts of manifests/ and the chart (make generate), then render the kustomize base and overlays into bin/manifests/.
	@mkdir -p bin/manifests
	$(GO) run ./hack/render manifests/base > bin/manifests/base.yaml
	$(GO) run ./hack/render manifests/overlays/report-only > bin/manifests/report-only.yaml
	$(GO) run ./hack/render manifests/overlays/pushgateway > bin/manifests/pushgateway.yaml

.PHONY: generate
generate: ## Write what is derived from the rules and the catalog: the ClusterRoles' rules (walk, rules and the opt-ins'), the admission policy's guarded finalizers, docs/catalog.md.
	$(GO) run ./hack/generate

.PHONY: tools
tools: ## Install the Debian packages the tests need (prometheus-pushgateway, prometheus for promtool, chromium, redis-server).
	@hack/debian-tools.sh

.PHONY: chart-lint
chart-lint: ## Lint the Helm chart, with every values file under ci/ (helm built once by hack/helm.sh).
	@helm="$$(hack/helm.sh)"; for values in "" charts/operator-sweeper/ci/*-values.yaml; do \
	  "$$helm" lint --strict charts/operator-sweeper $${values:+--values "$$values"}; done

.PHONY: chart
chart: ## Render the Helm chart with its default values into bin/manifests/chart.yaml.
	@mkdir -p bin/manifests
	"$$(hack/helm.sh)" template operator-sweeper charts/operator-sweeper --namespace operator-sweeper > bin/manifests/chart.yaml

.PHONY: testbin
testbin: ## Build (once) kube-apiserver and etcd, for the demo.
	@hack/testbin.sh >/dev/null

.PHONY: testbin-all
testbin-all: ## Build (once) the whole control plane the tests run: and controllers, kwok, OLM, the operators.
	@hack/testbin.sh all >/dev/null

.PHONY: testbin-versions
testbin-versions: ## Build (once) the other versions make test runs the suites on: the newest OLM v0, the oldest kube-apiserver supported.
	@hack/testbin.sh controllers-newest >/dev/null
	@hack/testbin.sh floor >/dev/null

.PHONY: demo
demo: build testbin ## Start a local real API server with sample debris and print the dry-run report.
	KUBEBUILDER_ASSETS="$$(hack/testbin.sh)" $(GO) run ./hack/demo --sweeper $(BIN) $(DEMO_ARGS)

.PHONY: demo-real
demo-real: build ## The demo with real controllers and OLM making the debris (about 2 minutes, once they are built).
	KUBEBUILDER_ASSETS="$$(hack/testbin.sh controllers)" $(GO) run ./hack/demo --real --sweeper $(BIN) $(DEMO_ARGS)

.PHONY: test
# make test orders its work for a fresh machine, where building the test binaries from the module
# proxy is most of the time: they build in the background from the start at the lowest CPU priority
# (nice 19), so they take what the tests leave idle (links, waits on the control plane) without
# slowing them. Each suite starts once what it runs is built: the API-server suites after lint and
# the unit tests, once kube-apiserver, etcd and kubectl are; test/controllers once the controllers,
# kwok and OLM are, while the newest OLM builds; test/controllers again on the newest OLM, while the
# operators build; test/operators once they are, while helm builds; test/e2e; and the
# compatibility suite last, on the oldest Kubernetes supported, built behind test/e2e. A failure
# stops the builds (their session is killed).
test: tools ## Everything CI runs: lint, unit, alert and integration tests, on two OLM versions and two Kubernetes minors.
	@ready="$$(mktemp -d)"; \
	  setsid bash -euo pipefail -c 'for stage in kubectl controllers controllers-newest all; do nice -n 19 hack/testbin.sh $$stage >/dev/null; touch "$$1/$$stage"; done; \
	    nice -n 19 hack/helm.sh >/dev/null; touch "$$1/helm"; nice -n 19 hack/testbin.sh floor >/dev/null; touch "$$1/floor"' builds "$$ready" & \
	  builds=$$!; trap 'kill -- -$$builds 2>/dev/null || true; rm -rf "$$ready"' EXIT; \
	  built() { until [[ -e "$$ready/$$1" ]]; do kill -0 $$builds 2>/dev/null || { wait $$builds; exit 1; }; sleep 1; done; }; \
	  $(MAKE) --no-print-directory lint test-unit test-alerts; \
	  built kubectl; $(MAKE) --no-print-directory test-api; \
	  built controllers; $(MAKE) --no-print-directory test-controllers; \
	  built controllers-newest; $(MAKE) --no-print-directory test-controllers-newest-olm; \
	  built all; $(MAKE) --no-print-directory test-operators; \
	  built helm; $(MAKE) --no-print-directory test-e2e; \
	  built floor; $(MAKE) --no-print-directory test-compat

.PHONY: test-unit
test-unit: ## Unit tests (no cluster).
	$(GO) test -race -count=1 $(UNIT_PACKAGES)

.PHONY: test-alerts
test-alerts: tools ## promtool checks and unit-tests the alerting rules.
	promtool check rules manifests/alerts/operator-sweeper.rules.yaml
	cd manifests/alerts && promtool test rules operator-sweeper.rules.test.yaml

# suites runs the test packages $(2) against the control plane hack/testbin.sh $(1) builds. -p 1:
# each package runs its own control plane; two at once on a 2-core machine starve the real
# controllers (OLM's) that test/controllers waits on.
suites = KUBEBUILDER_ASSETS="$$(hack/testbin.sh $(1))" $(GO) test -p 1 -count=1 -timeout 25m $(2)

.PHONY: test-integration
test-integration: tools ## Every suite of test/ against a real control plane and Pushgateway: test-api, test-controllers, test-operators and test-e2e (not the other versions: test-controllers-newest-olm, test-compat).
	$(call suites,all,$(INTEGRATION_PACKAGES))

.PHONY: test-api
test-api: tools ## The suites that need kube-apiserver, etcd and kubectl only (test/integration, test/cluster).
	$(call suites,kubectl,$(API_PACKAGES))

.PHONY: test-controllers
test-controllers: tools ## The suite with real Kubernetes controllers, kwok nodes and OLM v0.28.0 (test/controllers).
	$(call suites,controllers,$(CONTROLLER_PACKAGES))

# What of test/controllers make test-controllers-newest-olm leaves out: the tests in which OLM plays
# no part (its debris seeded), which the newest OLM would only run again.
NEWEST_OLM_SKIP := ^(TestStuckNamespace|TestNamespaceStuckOnDeadAPIService)$$

.PHONY: test-controllers-newest-olm
test-controllers-newest-olm: tools ## test/controllers' OLM tests with the newest OLM v0 the module proxy serves (v0.46.0).
	$(call suites,controllers-newest,$(CONTROLLER_PACKAGES)) -skip '$(NEWEST_OLM_SKIP)'

# What of test/integration make test-compat runs: the field cases, and the tests of what the sweeper
# needs of the API server beyond listing (server-side dry run, dead webhooks and APIServices,
# restore, the namespace controller's word).
COMPAT_INTEGRATION_TESTS := ^(TestF[1-5]|TestDeadWebhook|TestDeadAPIService|TestWebhooksThatBlockWrites|TestApplyServerDryRun|TestRestoreUndoesEverySweepAction|TestConsequencesDecideAsClusterAdmin)

.PHONY: test-compat
test-compat: tools ## test/e2e and the field cases of test/integration on the oldest Kubernetes minor docs/deploying.md supports (v1.31).
	$(call suites,floor,$(E2E_PACKAGES))
	$(call suites,floor,./test/integration/...) -run '$(COMPAT_INTEGRATION_TESTS)'

.PHONY: test-operators
test-operators: tools ## The suite with real third-party operators: prometheus-operator, Argo CD, Kyverno (test/operators).
	$(call suites,all,$(OPERATOR_PACKAGES))

.PHONY: test-e2e
test-e2e: tools ## The rest of test/: the shipped manifests and chart installed and run (test/e2e).
	$(call suites,all,$(E2E_PACKAGES))

# Only the test packages with benchmarks: each package's TestMain starts its control plane, and
# test/controllers' needs `hack/testbin.sh controllers`.
BENCH_PACKAGES := $(addprefix ./,$(sort $(dir $(shell grep -rl --include='*_test.go' '^func Benchmark' test))))

.PHONY: bench
bench: bench-scale bench-repair ## All benchmarks (about 30 minutes on 2 cores): bench-scale, bench-repair, rules, View, report printing, 10k-ConfigMap sweeps.
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./rules/... ./sweeper/ ./report/
	KUBEBUILDER_ASSETS="$$(hack/testbin.sh)" $(GO) test -run '^$$' -bench . -benchmem -benchtime 5x -count 3 $(BENCH_PACKAGES)

.PHONY: bench-scale
bench-scale: build ## Sweep vs metadata-list floor vs kubectl at 5.5k/55k/110k objects; writes bench/results.md.
	KUBEBUILDER_ASSETS="$$(hack/testbin.sh kubectl)" $(GO) run ./hack/bench --sweeper $(BIN) --out bench/results.md $(BENCH_ARGS)

.PHONY: bench-repair
bench-repair: build ## Repair of 5,000 and 25,000 stuck objects vs the release floor, best of 2; writes bench/repair.md.
	KUBEBUILDER_ASSETS="$$(hack/testbin.sh)" $(GO) run ./hack/bench/repair --sweeper $(BIN) --reps 2 --out bench/repair.md $(REPAIR_ARGS)

.PHONY: lint
lint: ## gofmt, go vet, staticcheck (pinned, run through the module proxy).
	@unformatted="$$(gofmt -l .)"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

.PHONY: clean
clean: ## Remove build output (the cached test binaries stay in ~/.cache).
	rm -rf bin
