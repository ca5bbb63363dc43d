# mcp-catalog-operator
#
# `make run` runs the operator (against KUBECONFIG, or a local control plane
# when no cluster is reachable); `make test` runs every test.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

GO            ?= go
CONTROLLER_GEN = $(GO) tool controller-gen
IMG           ?= mcp-catalog-operator:dev
# VERSION is stamped into the manager and the plugin (internal/version): the
# git description of the checkout, v0.0.0-dev outside a git checkout.
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS        = -X github.com/mcp-catalog/operator/internal/version.stamped=$(VERSION)
BIN           ?= bin
# Everything make runs is compiled the way a release is (no cgo, no build
# paths), so the packages go vet compiles are the ones the release's
# linux/amd64 manager and plugin link, and go test reuses them too: on an
# empty build cache the tree is compiled once for this platform, not twice.
export CGO_ENABLED ?= 0
ifeq ($(filter -trimpath,$(GOFLAGS)),)
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
endif
# go test's own 10-minute limit per package is what the controller suite
# (about 4 minutes alone on two cores) reaches on a machine busy with other
# work; a hung test still ends the run.
# Test binaries are linked without DWARF (-w): stack traces keep their file
# and line, and each of the forty-odd links is about a quarter faster.
GOTEST_FLAGS  ?= -timeout 30m -ldflags=-w
# Packages whose tests need no control plane (see hack/unit-pkgs.sh).
UNIT_PKGS      = $(shell hack/unit-pkgs.sh)
# A package that mixes both kinds: test-unit runs it without its control-plane tests.
UNIT_MIXED     = ./internal/cli
UNIT_MIXED_SKIP = ^(TestClusterCommands|TestCallApprovalCommands)$$

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: ## Regenerate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt applyconfiguration:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: ## Regenerate CRDs and RBAC from markers, and the chart's copies of them.
	$(CONTROLLER_GEN) crd rbac:roleName=manager-role paths=./api/... paths=./internal/controller/... paths=./internal/manager/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@$(MAKE) -s chart-crds
	@$(GO) run ./hack/apidocs config/crd/bases > docs/api.md

.PHONY: chart-crds
chart-crds: ## Render config/crd/bases and config/rbac/role.yaml into the Helm chart.
	@hack/chart-gen.sh

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet the tree.
	$(GO) vet ./...

.PHONY: verify-gen
verify-gen: ## Fail when generated files are not current (fast).
	@hack/verify-gen.sh

.PHONY: verify-fmt
verify-fmt: ## Fail when gofmt would change a file, tracked or new (ignored files aside).
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: verify-modules
verify-modules: ## Fail when go mod tidy would change the module or a tool module.
	@hack/verify-modules.sh

.PHONY: lint
lint: ## Run golangci-lint with kube-api-linter (built once from the Go module proxy).
	@bin=$$(hack/golangci-lint.sh); $$bin run --allow-serial-runners $(LINT_FLAGS) ./...

.PHONY: verify
verify: verify-fmt vet verify-gen verify-modules lint ## gofmt check, vet, generated files current, tidy modules, lint.
	@echo "verify: ok"

##@ Test

.PHONY: envtest
envtest: ## Build (once) the test control plane, with kube-controller-manager, and print its directory.
	@hack/envtest.sh --with-controller-manager

# The release test/release checks. make test builds it before go test runs
# (cross-platform builds: no go test package compiles them within its
# timeout). It holds the image's two platforms and the plugin for one
# architecture of each other OS: every way the release packages a platform
# (tar.gz or zip, .exe, the completion script) is checked, at half the cold
# cost of all six (docs/adr/031-test-release-platforms.md). `make release`
# builds all six; RELEASE_TEST_CLI_PLATFORMS="$(hack/release.sh --platforms)"
# tests them all.
RELEASE_TEST_VERSION = v0.0.0-releasetest.1
RELEASE_TEST_REPO    = registry.example.test/mcp-catalog-operator
RELEASE_TEST_CLI_PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64 windows/amd64

.PHONY: test
test: ## Run every test (builds the test control plane, with kube-controller-manager, helm and a test release, and installs Chromium and the MCP TypeScript SDK, on first use).
	@assets=$$(hack/envtest.sh --with-controller-manager); helm=$$(hack/helm.sh); chromium=$$(hack/chromium.sh); tsagent=$$(hack/tsagent.sh); \
	echo ">> KUBEBUILDER_ASSETS=$$assets"; echo ">> HELM=$$helm"; echo ">> CHROMIUM=$$chromium"; echo ">> TSAGENT_DIR=$$tsagent"; \
	dist=$$(mktemp -d); trap 'rm -rf "$$dist" "$$dist.md"' EXIT; \
	printf '# Changelog\n\n## %s\n\nA test release.\n' '$(RELEASE_TEST_VERSION)' > "$$dist.md"; \
	start=$$SECONDS; echo ">> building a release for test/release"; \
	VERSION=$(RELEASE_TEST_VERSION) IMAGE_REPO=$(RELEASE_TEST_REPO) CLI_PLATFORMS='$(RELEASE_TEST_CLI_PLATFORMS)' DIST=$$dist CHANGELOG=$$dist.md hack/release.sh; \
	echo ">> release built in $$((SECONDS - start))s"; \
	KUBEBUILDER_ASSETS=$$assets HELM=$$helm CHROMIUM=$$chromium TSAGENT_DIR=$$tsagent RELEASE_DIST=$$dist RELEASE_VERSION=$(RELEASE_TEST_VERSION) RELEASE_IMAGE_REPO=$(RELEASE_TEST_REPO) RELEASE_CLI_PLATFORMS='$(RELEASE_TEST_CLI_PLATFORMS)' \
		$(GO) test $(GOTEST_FLAGS) ./...
	@$(MAKE) -s test-monitoring

.PHONY: test-monitoring
test-monitoring: ## Check the alert rules and dashboard with Prometheus' parsers (a module of its own).
	cd test/monitoring && $(GO) vet ./... && $(GO) test $(GOTEST_FLAGS) ./...

.PHONY: test-console
test-console: ## Run the console's browser tests only (headless Chromium against envtest).
	@assets=$$(hack/envtest.sh); chromium=$$(hack/chromium.sh); \
	KUBEBUILDER_ASSETS=$$assets CHROMIUM=$$chromium $(GO) test $(GOTEST_FLAGS) ./test/console/...

.PHONY: console-screenshots
console-screenshots: ## Run the console's browser tests and write docs/images/console-*.png for docs/console.md.
	@assets=$$(hack/envtest.sh); chromium=$$(hack/chromium.sh); \
	KUBEBUILDER_ASSETS=$$assets CHROMIUM=$$chromium CONSOLE_SCREENSHOTS=$(CURDIR)/docs/images $(GO) test -count=1 ./test/console/...

.PHONY: test-chart
test-chart: ## Run the Helm chart tests only.
	@assets=$$(hack/envtest.sh); helm=$$(hack/helm.sh); \
	KUBEBUILDER_ASSETS=$$assets HELM=$$helm $(GO) test $(GOTEST_FLAGS) ./test/chart/...

.PHONY: helm
helm: ## Build (once) helm from the Go module proxy and print its path.
	@hack/helm.sh

.PHONY: test-unit
test-unit: ## Run the tests that need no control plane.
	$(GO) test $(GOTEST_FLAGS) $(UNIT_PKGS)
	$(GO) test $(GOTEST_FLAGS) -skip '$(UNIT_MIXED_SKIP)' $(UNIT_MIXED)

FUZZTIME ?= 30s
.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each.
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
			echo ">> $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# BENCH_COUNT repeats the micro-benchmarks (the report takes the median);
# BENCH_SERVERS scales the probe and cache scenarios down on a machine where
# 1,000 McpServers do not fit; BENCH_FLEET_SERVERS the fleet of 5,000;
# BENCH_IMPORT_ROUNDS how many rounds of floor and import the import scenario
# measures (odd, 3 by default; the median round is reported).
BENCH_COUNT   ?= 5
BENCH_TIMEOUT ?= 45m
.PHONY: bench
bench: ## Run the benchmark harness (test/bench) and regenerate docs/benchmarks.md and its plot.
	@assets=$$(hack/envtest.sh); tsagent=$$(hack/tsagent.sh); out=$$(mktemp -d); start=$$(date +%s); \
	trap 'rm -rf "$$out"' EXIT; \
	echo ">> client, decode, argument rules, result inspection and OAuth identify"; \
	$(GO) test -run '^$$' -bench '^Benchmark(Client|Decode|ArgumentRules|Inspect|OAuthIdentify)$$' -benchmem -count $(BENCH_COUNT) ./test/bench/ | tee $$out/micro.txt; \
	echo ">> relayed progress"; \
	$(GO) test -run '^$$' -bench '^BenchmarkProgressRelay$$' -benchmem -count $(BENCH_COUNT) ./internal/gateway/ | tee $$out/relay.txt; \
	status=0; \
	for s in Import Probe Cache Hostile Shards NoisyNeighbour Fleet; do \
		echo ">> scale: $$s (one process each, so that each reports its own memory)"; \
		KUBEBUILDER_ASSETS=$$assets $(GO) test -run '^$$' -bench "^BenchmarkScale$$s\$$" -benchtime 1x -timeout $(BENCH_TIMEOUT) ./test/bench/ | tee $$out/$$s.txt || status=1; \
	done; \
	echo ">> gateway: added latency and throughput against direct calls"; \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -run '^$$' -bench '^BenchmarkGateway$$' -benchtime 1x -timeout $(BENCH_TIMEOUT) ./test/bench/ | tee $$out/Gateway.txt || status=1; \
	echo ">> gateway: what a tools/list allocates and costs"; \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -run '^$$' -bench '^BenchmarkGatewayList$$' -benchtime 50x -timeout $(BENCH_TIMEOUT) ./test/bench/ | tee $$out/GatewayList.txt || status=1; \
	echo ">> gateway: a request's cost against the caller's catalog, per era"; \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -run '^$$' -bench '^BenchmarkGatewayCost$$' -benchtime 2s -benchmem -timeout $(BENCH_TIMEOUT) ./test/bench/ | tee $$out/GatewayCost.txt || status=1; \
	echo ">> gateway: a result carrying a 5 MiB image, per era and path"; \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -run '^$$' -bench '^BenchmarkGatewayTypedResult$$' -benchtime 24x -timeout $(BENCH_TIMEOUT) ./test/bench/ | tee $$out/GatewayTypedResult.txt || status=1; \
	echo ">> gateway: a call carrying 900 KiB of arguments, per era"; \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -run '^$$' -bench '^BenchmarkGatewayLargeArguments$$' -benchtime 20x -timeout $(BENCH_TIMEOUT) ./test/bench/ | tee $$out/GatewayLargeArguments.txt || status=1; \
	for s in Flood Sessions; do \
		echo ">> gateway: $$s (one process each, so that each reports its own memory)"; \
		KUBEBUILDER_ASSETS=$$assets TSAGENT_DIR=$$tsagent $(GO) test -run '^$$' -bench "^BenchmarkGateway$$s\$$" -benchtime 1x -timeout $(BENCH_TIMEOUT) ./test/bench/ | tee $$out/Gateway$$s.txt || status=1; \
	done; \
	$(GO) run ./test/bench/report -o docs/benchmarks.md -svg docs/images/gateway-cost.svg -elapsed $$(( $$(date +%s) - start ))s $$out/*.txt; \
	echo ">> wrote docs/benchmarks.md and docs/images/gateway-cost.svg"; exit $$status

# SOAK_DURATION is how long `make soak` runs the load (an hour by default;
# 5m tries it); SOAK_TIMEOUT bounds the whole go test, start-up included,
# and must be raised with it.
SOAK_DURATION ?= 1h
SOAK_TIMEOUT  ?= 2h
SOAK_RESULTS  ?= test/bench/testdata/soak.json
.PHONY: soak
soak: ## Run the soak (test/bench: SOAK_DURATION of flapping servers, re-imports, agents and approvals) and rewrite its section of docs/benchmarks.md.
	@assets=$$(hack/envtest.sh); \
	echo ">> soak: $(SOAK_DURATION), results to $(SOAK_RESULTS)"; \
	KUBEBUILDER_ASSETS=$$assets SOAK_DURATION=$(SOAK_DURATION) SOAK_RESULTS=$(CURDIR)/$(SOAK_RESULTS) \
		$(GO) test -v -run '^$$' -bench '^BenchmarkSoak$$' -benchtime 1x -timeout $(SOAK_TIMEOUT) ./test/bench/; \
	$(GO) run ./test/bench/report -soak-only -soak $(SOAK_RESULTS) -o docs/benchmarks.md; \
	echo ">> wrote $(SOAK_RESULTS) and section 12 of docs/benchmarks.md"

##@ Build and run

.PHONY: build
build: ## Build the manager and the kubectl plugin into BIN (bin/), stamped with VERSION.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/manager ./cmd/manager
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/kubectl-mcp ./cmd/kubectl-mcp
	install -m 0755 cmd/kubectl-mcp/kubectl_complete-mcp $(BIN)/kubectl_complete-mcp

.PHONY: version
version: ## Print the version a build stamps.
	@echo $(VERSION)

.PHONY: chart-app-version
chart-app-version: ## Set the chart's appVersion to VERSION (a release tag vX.Y.Z).
	@v='$(VERSION)'; \
	if ! [[ "$$v" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$$ ]]; then echo "VERSION $$v is not a release tag vX.Y.Z" >&2; exit 1; fi; \
	sed -i -E "s/^appVersion: .*/appVersion: \"$${v#v}\"/" charts/mcp-catalog-operator/Chart.yaml; \
	grep '^appVersion:' charts/mcp-catalog-operator/Chart.yaml

.PHONY: run
run: ## Run the operator (against KUBECONFIG if reachable, else on a local control plane), a demo server and agent; print a first call.
	@echo ">> building cmd/devrun and the kubectl plugin into $(BIN)/ (a first build compiles Kubernetes' libraries: minutes; later ones take seconds)"
	@$(GO) build -v -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/devrun ./cmd/kubectl-mcp 2>&1 | hack/build-progress.sh
	$(BIN)/devrun --plugin-dir $(BIN) $(RUN_ARGS)

.PHONY: install
install: ## Apply the CRDs to the cluster in KUBECONFIG.
	kubectl apply --server-side -f config/crd/bases

DIST    ?= dist

.PHONY: image
image: ## Build the OCI image (linux/amd64+arm64, SBOM) into $(DIST)/ without a container engine.
	@hack/image.sh $(DIST) $(VERSION) "$(LDFLAGS)"

.PHONY: release
release: ## Write a release into $(DIST)/ (needs VERSION=vX.Y.Z and a CHANGELOG.md entry for it).
	@VERSION=$(VERSION) DIST=$(abspath $(DIST)) hack/release.sh

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .
