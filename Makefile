# fleetcache — `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TESTBIN := $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/helm $(BIN)/kubectl
STATICCHECK_VERSION := v0.8.2
GOTEST_FLAGS ?= -race -count=1 -timeout 25m
# pebble (pkg/snapshot) compresses with klauspost's zstd, which the module
# already uses, rather than compiling a C zstd: minutes less of a cold build.
export GOFLAGS := $(strip $(GOFLAGS) -tags=pebblegozstd)
BENCH ?=
BENCH_FLAGS ?= -run '^$$' -benchmem -benchtime 3x
# go test's default timeout (10m) is shorter than the slowest benchmarks.
BENCH_TIMEOUT ?= 60m

.PHONY: help build ui demo-ui test test-unit demo lint bench fuzz testbin testdeps clean

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ui ## Build every package, with the GraphiQL bundle (make ui) embedded.
	$(GO) build ./...

# GraphiQL is bundled from the npm packages pinned in its package-lock.json
# into internal/graphiql/dist, which go:embed puts into the binary (as
# Prometheus builds its UI). Make rebuilds it only when its sources or the
# lock file changed: a build or test run with it up to date costs nothing.
GRAPHIQL_UI := internal/graphiql/ui
GRAPHIQL_BUNDLE := internal/graphiql/dist/graphiql.js
ui: $(GRAPHIQL_BUNDLE) ## Build the GraphiQL bundle with npm and esbuild (Node.js 20+; skipped when up to date).

demo-ui:
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory ui; \
	else echo "make demo: no npm, so no GraphiQL: /graphql serves a page that says how to build it (Node.js 20+ and npm)" >&2; fi

# npm ci runs when the lock file changes, esbuild when a source does.
$(GRAPHIQL_UI)/node_modules/.installed: $(GRAPHIQL_UI)/package.json $(GRAPHIQL_UI)/package-lock.json
	@command -v npm >/dev/null || { echo "make ui: needs Node.js 20 or newer with npm (make testdeps installs them)" >&2; exit 1; }
	cd $(GRAPHIQL_UI) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(GRAPHIQL_BUNDLE): $(GRAPHIQL_UI)/node_modules/.installed $(GRAPHIQL_UI)/build.mjs $(wildcard $(GRAPHIQL_UI)/src/*)
	cd $(GRAPHIQL_UI) && node build.mjs
	@touch $@

test: testbin testdeps ui ## Run every test with the race detector against real kube-apiservers (what CI runs).
	$(GO) test $(GOTEST_FLAGS) ./...

# The unit layer: every test that needs no server, browser or Node.js
# (-short skips the others, saying that make test runs them). It builds no
# test server and runs no npm.
test-unit: ## Run the tests that need no server, with the race detector (-short; docs/testing.md).
	$(GO) test -short $(GOTEST_FLAGS) ./...

DEMO_ADDR ?= 127.0.0.1:8080
# The demo needs the two test servers, not every test binary. It runs as a
# built binary rather than with "go run", which exits 1 after a Ctrl-C.
# Without npm it runs rather than not at all: /graphql then says how to
# build GraphiQL.
demo: $(BIN)/kube-apiserver $(BIN)/etcd demo-ui ## Run the aggregator on three local seeded clusters with live churn (DEMO_ADDR=127.0.0.1:8080); Ctrl-C stops it.
	$(GO) build -o $(BIN)/demo ./hack/demo
	$(BIN)/demo --addr $(DEMO_ADDR)

lint: ## go vet and staticcheck (pinned).
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# Without BENCH, hack/bench.sh runs each figure's command of docs/benchmarks.md.
bench: testbin ## Reproduce docs/benchmarks.md (about 2 h); BENCH=regexp runs just those (BENCH_FLAGS, BENCH_TIMEOUT=60m).
ifeq ($(BENCH),)
	hack/bench.sh
else
	$(GO) test $(BENCH_FLAGS) -timeout $(BENCH_TIMEOUT) -bench '$(BENCH)' ./...
endif

FUZZTIME ?= 20s
# Go 1.26's fuzzing coordinator can fail a target with a bare "context
# deadline exceeded" as -fuzztime ends, having found nothing (a race,
# go.dev/issue/75804, fixed in Go 1.27); it happens under load. Only that
# outcome is let pass: a failure that wrote an input under testdata/fuzz
# stops the run.
fuzz: testbin ## Run every fuzz target for FUZZTIME (20s) each.
	@set -eo pipefail; for pkg in $$($(GO) list ./...); do \
	  list=$$($(GO) test -list '^Fuzz' $$pkg); \
	  for target in $$(echo "$$list" | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$target"; \
	    log=$$(mktemp); \
	    if ! $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg 2>&1 | tee $$log; then \
	      if grep -qx '    context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
	        echo "fuzz $$pkg $$target: ignored the end-of-fuzztime race of go.dev/issue/75804 (no failing input)"; \
	      else rm -f $$log; exit 1; fi; \
	    fi; \
	    rm -f $$log; \
	  done; \
	done

testbin: $(TESTBIN) ## Build kube-apiserver, etcd, helm and kubectl for the tests into bin/ (skipped when present).

# The browser and JavaScript-client tests fail, never skip, without these.
testdeps: ## Install chromium, node and npm with apt where missing (root or sudo).
	@hack/testdeps.sh

$(BIN)/kube-apiserver: hack/tools/go.mod
	cd hack/tools && $(GO) build -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(BIN)/etcd: hack/tools/go.mod
	cd hack/tools && $(GO) build -o $@ go.etcd.io/etcd/server/v3

# kubectl, of the test servers' release, runs against fleetcache's Kubernetes API
# (pkg/kubeapi); its own module, so that changing it never rebuilds kube-apiserver.
$(BIN)/kubectl: hack/kubectl/go.mod
	cd hack/kubectl && $(GO) build -o $@ k8s.io/kubernetes/cmd/kubectl

# helm renders the chart in deploy/; its own module keeps its dependencies out of the servers' build.
$(BIN)/helm: hack/helm/go.mod
	cd hack/helm && $(GO) build -o $@ helm.sh/helm/v4/cmd/helm

clean: ## Remove built binaries and the GraphiQL bundle.
	rm -rf $(BIN) internal/graphiql/dist/graphiql* $(GRAPHIQL_UI)/node_modules
