# The Temporal server and UI modules need Go >= 1.26.10; the module proxy
# serves this toolchain, so older local Go versions fetch it.
export GOTOOLCHAIN := go1.27.3

GO ?= go
TASK ?= summarise this repository and suggest one improvement

.PHONY: run sandbox-deps worker test test-postgres vet bench bench-postgres deps mutants

## run: start a job on this directory (embedded Temporal server and, without
## OPENAI_API_KEY, the offline demo model), first installing bubblewrap when
## it is missing so the job's Bash calls run in the sandbox
run: sandbox-deps
	$(GO) run ./starter run "$(TASK)"

## sandbox-deps: bubblewrap, custos' sandbox (Debian/Ubuntu, as root); where
## it cannot be installed, one line says how, and the job still runs (its
## Bash calls are refused)
sandbox-deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap, custos' sandbox (apt-get)"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } || \
	      echo "custos: installing bubblewrap failed; Bash calls will be refused until it is installed"; \
	    command -v bwrap >/dev/null 2>&1 || echo "custos: bwrap is still not on PATH ($$PATH); Bash calls will be refused"; \
	  else \
	    echo "custos: bubblewrap (the sandbox) is missing: sudo apt-get install bubblewrap, then make run again; without it Bash calls are refused"; \
	  fi; }

## worker: serve the task queues (embedded server unless TEMPORAL_ADDRESS is set)
worker:
	$(GO) run ./worker

TEMPORAL_CLI_VERSION := v1.5.1
GOPLS_VERSION := v0.23.0
WEBHOOKS_EXAMPLES_VERSION := 7.6.1
# ACPX_VERSION is the headless ACP client e2e/acp_test.go drives starter acp with.
ACPX_VERSION := 0.19.1
MCP_MEMORY_VERSION := 2026.8.31
MCP_FILESYSTEM_VERSION := 2026.8.31

## deps: what the tests need besides Go: bubblewrap, a C compiler (cgo builds
## the sandbox's mount step, mountinit_cgo.go), chromium (the Web UI
## test drives a real browser), the Temporal CLI
## (the end-to-end tests approve through it as people do; built from source
## once, a few minutes) and gopls, the LSP tool's Go server (as root into
## /usr/local/bin, where the sandbox that runs it sees it; otherwise into
## $GOPATH/bin, where only the lsp package's own tests use it) and, as root,
## the official MCP memory server (npm install -g)
deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "installing bubblewrap (needs root and apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; }
	@command -v cc >/dev/null 2>&1 || { \
	  echo "installing gcc (needs root and apt-get): cgo builds the sandbox's mount step"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev; }
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (needs root and apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@command -v temporal >/dev/null 2>&1 || test -x "$$($(GO) env GOPATH)/bin/temporal" || { \
	  echo "installing the Temporal CLI $(TEMPORAL_CLI_VERSION) into $$($(GO) env GOPATH)/bin"; \
	  $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION); }
	@if [ "$$(id -u)" = 0 ]; then dir=/usr/local/bin; else dir="$$($(GO) env GOPATH)/bin"; fi; \
	  test -x "$$dir/gopls" || { \
	  echo "installing gopls $(GOPLS_VERSION) into $$dir"; \
	  GOBIN="$$dir" $(GO) install golang.org/x/tools/gopls@$(GOPLS_VERSION); }
	@test -d "$$(npm root -g)/@octokit/webhooks-examples" || { \
	  echo "installing GitHub's example webhook payloads (npm @octokit/webhooks-examples@$(WEBHOOKS_EXAMPLES_VERSION)) for the GitHub trigger's tests"; \
	  npm install -g --no-fund --no-audit @octokit/webhooks-examples@$(WEBHOOKS_EXAMPLES_VERSION); }
	@command -v mcp-server-memory >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || { \
	  echo "installing @modelcontextprotocol/server-memory $(MCP_MEMORY_VERSION) (npm install -g): the MCP servers' homes are tested with it"; \
	  npm install -g --no-audit --no-fund @modelcontextprotocol/server-memory@$(MCP_MEMORY_VERSION); }
	@command -v mcp-server-filesystem >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || { \
	  echo "installing @modelcontextprotocol/server-filesystem $(MCP_FILESYSTEM_VERSION) (npm install -g): a server writing the workspace (writeWorkspace) is tested with it"; \
	  npm install -g --no-audit --no-fund @modelcontextprotocol/server-filesystem@$(MCP_FILESYSTEM_VERSION); }
	@command -v acpx >/dev/null 2>&1 || { \
	  echo "installing acpx $(ACPX_VERSION) (npm install -g): starter acp is tested with it, a headless ACP client"; \
	  npm install -g --no-audit --no-fund acpx@$(ACPX_VERSION); }

# RACE_PKGS run under the race detector in make test: the packages with
# goroutines of their own (workflow test environments, activity heartbeats,
# hook processes). The rest (the embedded server, sandbox, end to end) run
# without it, to keep CI time reasonable.
RACE_PKGS := ./approval ./hooks ./hooks/command ./activities ./workflows

# WORKFLOWCHECK is Temporal's workflow determinism checker; its config
# (workflowcheck.config.yaml) says which standard-library calls it flags are
# deterministic after all.
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

## test: vet, the workflow determinism check, then every test (unit, workflow, sandbox, end to end)
test: deps
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(WORKFLOWCHECK) -config workflowcheck.config.yaml ./workflows/...
	GOOS=darwin $(GO) build ./sandbox/... ./hooks/...   # the fallback must build where bwrap cannot exist
	$(GO) test -race -count=1 -timeout 20m $(RACE_PKGS)
	$(GO) test -count=1 -timeout 40m $$($(GO) list ./... | grep -v -x -F $(foreach p,$(RACE_PKGS),-e github.com/custos-dev/custos/$(patsubst ./%,%,$(p))))

## test-postgres: the end-to-end suite against a Temporal server on
## PostgreSQL (Debian's postgresql package, a throwaway cluster on a free
## loopback port, Temporal's schema from its own temporal-sql-tool); see
## .ci/postgres-e2e
test-postgres: deps
	.ci/postgres-e2e $(GO) test -count=1 -timeout 40m ./e2e/

## bench-postgres: short-job throughput on the PostgreSQL-backed server
## (one and two worker processes) against the embedded SQLite server
bench-postgres: deps
	.ci/postgres-e2e $(GO) test -run '^$$' -bench ShortJobs -benchtime 100x ./e2e/

## bench: the benchmarks quoted in the closing notes
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

## mutants: break the product on purpose (no network namespace, no .git/hooks
## protection, a timer that allows, deny rules ignored, a path guard that
## follows symlinks, a Write that is not atomic) and show the tests catch
## each break; not part of make test (it reruns the sandbox and workflow tests
## per mutant)
mutants: deps
	scripts/mutants.sh
