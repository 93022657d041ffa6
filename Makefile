# faultline: see README.md. `make test` is what CI runs.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
# The lab every lab target acts on: a lab file, or a name in testdata/labs.
LAB     ?= lab11
# Timer profile for lab-up: kubernetes-defaults or fast (empty: the lab file's).
PROFILE ?=
# The suite `make suite` runs, a folder under suites/.
SUITE   ?= disagree
# Extra ginkgo flags, e.g. GINKGO_FLAGS="--focus=worker-power-off".
GINKGO_FLAGS ?=
# A pool of labs `make suite` runs over instead of LAB (as FAULTLINE_LABS,
# comma-separated), with one ginkgo process per lab, e.g. LABS=lab11,lab11b.
LABS    ?=
comma   := ,
# A run folder `make suite` resumes (as FAULTLINE_RESUME), e.g.
# RESUME=reports/runs/<time>-disagree: the runs it finished are skipped.
RESUME  ?=
# How many times `make suite` and `make run` run each selected scenario ×
# arm into one run folder, in rounds (as FAULTLINE_REPEAT), e.g. REPEAT=5.
REPEAT  ?=
# Run folders `make report` aggregates.
RUNS    ?= $(wildcard reports/runs/*)
# The run folder `make report-screenshot` renders, where its site goes, and
# which of its run pages (a glob over run ids) it screenshots.
RUN     ?=
SITE    ?= reports/sites/$(notdir $(patsubst %/,%,$(RUN)))
PAGES   ?= *

BIN     := bin
# The ginkgo CLI at the version go.mod pins for the library.
GINKGO_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)
GINKGO  = $(shell $(GO) env GOPATH)/bin/ginkgo
# Debian packages the local lab and the tests use: make, git and gcc for the
# build; iproute2, iptables, nftables and conntrack for host namespaces and
# kube-proxy; openssh for every host's sshd and the SSH tests; keepalived for
# the virtual address; runc and the CNI plugins for containers; util-linux
# (nsenter, unshare), procps, psmisc, kmod and curl; sudo for the local lab's
# non-root login (faultline lab sudo-user, the static lab's lab tests);
# chromium for the report pages' browser tests and screenshots.
DEB_PACKAGES = ca-certificates git make gcc libc6-dev iproute2 iptables nftables conntrack \
	openssh-server openssh-client keepalived runc containernetworking-plugins \
	util-linux procps psmisc kmod curl ipset sudo chromium
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS := -X main.gitCommit=$(COMMIT) -X main.version=$(VERSION)

.PHONY: help setup ginkgo test unit test-browser test-lab test-crash lint vet fmt-check faultline bins lab-up lab-down heal suite report report-screenshot run

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  make \1\t/' | expand -t 20

# Packages with tests on real built components (etcd, kube-apiserver,
# containerd) on loopback: build tag `bins`. Tests that bring up a whole local
# lab carry the tag `lab` and need root.
BINS_PKGS = $(shell grep -rl '^//go:build bins' --include='*_test.go' . | xargs -n1 dirname | sort -u)
LAB_PKGS  ?= ./lab/local/ ./lab/static/
# The fault library's lab tests make test runs (make test-lab runs them
# all): the faults on node agents run as pods, on a lab of their own.
LAB_FAULT_TESTS ?= ^TestAgentPodFaultsOnLocalLab$$
# Packages with tests that make loop devices and mounts of their own in
# temporary directories, undone when each test ends (root, no lab): build
# tag `root`.
ROOT_PKGS = $(shell grep -rl '^//go:build root' --include='*_test.go' . | xargs -n1 dirname | sort -u)

test: unit test-browser bins ## what CI runs: lint, unit tests, the report pages in Chromium, tests on real components, the CSI driver's loop devices and mounts, the local lab's own tests, the faults on pod agents on a lab of their own (root)
	$(GO) test -tags bins -p 1 -timeout 30m $(BINS_PKGS)
	$(GO) test -tags root -p 1 -timeout 10m $(ROOT_PKGS)
	$(GO) test -tags lab -p 1 -timeout 60m -v $(LAB_PKGS)
	$(GO) test -tags lab -p 1 -timeout 40m -v -run '$(LAB_FAULT_TESTS)' ./framework/fault/faults/

unit: lint ## go vet, gofmt check and the unit tests (no root, no binaries)
	$(GO) test ./...

# Packages whose report pages are tested in headless Chromium: build tag
# `browser`.
BROWSER_PKGS = $(shell grep -rl '^//go:build browser' --include='*_test.go' . | xargs -n1 dirname | sort -u)

test-browser: ## load the report pages in headless Chromium (Debian's chromium, from make setup)
	$(GO) test -tags browser -p 1 -timeout 10m $(BROWSER_PKGS)

# The e2e-framework example brings up the lab $(E2E_LAB) names (its own
# default: pair) through the local lab's e2e-framework provider.
E2E_LAB ?=

test-lab: bins test-crash ## the heavier lab tests: faults and evidence on local labs of their own, the crash matrix, and the e2e-framework example (root)
	$(GO) test -tags lab -p 1 -timeout 90m -v ./framework/fault/faults/ ./framework/evidence/sampler/
	$(if $(E2E_LAB),FAULTLINE_E2E_LAB=$(E2E_LAB)) $(GO) test -tags lab -p 1 -timeout 30m -v ./examples/e2e-framework/

# The crash matrix's cells, as go test -run selects them: a topology
# (lab11$$, lab11s, pair), a fault kind, a cell, e.g.
# CRASH_RUN='TestCrashMatrix/lab11$$/partition' (the $$ keeps lab11s out).
# Each selected topology's lab is brought up once and down at the end.
CRASH_RUN ?= TestCrashMatrix
# A file each cell's row is appended to (JSON lines), for the fault README's table.
CRASH_TABLE ?=

test-crash: bins ## the crash matrix: every fault kind's run killed at every moment, healed by `faultline heal`, the lab checked clean (root; lab11 alone takes most of an hour: select with CRASH_RUN)
	$(if $(CRASH_TABLE),FAULTLINE_CRASH_TABLE=$(CRASH_TABLE)) $(GO) test -tags lab -p 1 -timeout 12h -v -run '$(CRASH_RUN)' ./framework/fault/crashmatrix/

lint: vet fmt-check ## go vet and gofmt check

vet:
	$(GO) vet ./...

fmt-check:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt: these files need gofmt -w:"; echo "$$unformatted"; exit 1; fi

setup: ## install the Debian packages the lab and the tests need, and the ginkgo CLI (root)
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEB_PACKAGES) </dev/null >/dev/null
	$(MAKE) ginkgo

ginkgo: ## install the ginkgo CLI at the version go.mod pins
	$(GO) install github.com/onsi/ginkgo/v2/ginkgo@$(GINKGO_VERSION)

faultline: ## build bin/faultline
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/faultline ./cmd/faultline

bins: ## build the local lab's Kubernetes, etcd, containerd and crictl binaries into the cache (a no-op when built)
	lab/local/bins/build.sh

lab-up: faultline bins ## bring LAB up (the local lab by default; needs root)
	$(BIN)/faultline lab up --lab $(LAB) $(if $(PROFILE),--profile $(PROFILE))

lab-down: faultline ## bring LAB down
	$(BIN)/faultline lab down --lab $(LAB)

heal: faultline ## heal whatever LAB's heal ledger holds
	$(BIN)/faultline heal --lab $(LAB)

suite: ## run one suite (SUITE) against LAB, or over a pool LABS=a,b, with ginkgo (RESUME=<run folder> resumes one, REPEAT=N repeats each scenario × arm)
	@if [ ! -d suites/$(SUITE) ]; then \
		echo "make suite: there is no suite suites/$(SUITE) in this tree yet"; exit 1; fi
	@[ -x "$(GINKGO)" ] || { echo "make suite: the ginkgo CLI is not installed (make ginkgo)"; exit 1; }
	$(if $(LABS),FAULTLINE_LABS=$(LABS),FAULTLINE_LAB=$(LAB)) $(if $(RESUME),FAULTLINE_RESUME=$(RESUME)) $(if $(REPEAT),FAULTLINE_REPEAT=$(REPEAT)) $(GINKGO) $(if $(LABS),--procs=$(words $(subst $(comma), ,$(LABS)))) $(GINKGO_FLAGS) ./suites/$(SUITE)

report: faultline ## aggregate every run folder under reports/runs into reports/report.md
	@if [ -z "$(strip $(RUNS))" ]; then \
		echo "make report: no run folders under reports/runs (run a suite first)"; exit 1; fi
	$(BIN)/faultline report -o reports/report.md $(RUNS)
	@echo "wrote reports/report.md"

report-screenshot: faultline ## render RUN=<run folder> as HTML into reports/sites/<folder> and screenshot its pages (headless chromium)
	@if [ -z "$(RUN)" ]; then echo "make report-screenshot: give RUN=<run folder>, such as RUN=reports/runs/<time>-<suite>"; exit 1; fi
	@mkdir -p $(dir $(SITE))
	$(BIN)/faultline report --format html -o $(SITE) $(RUN)
	$(GO) run ./reports/html/screenshot $(SITE)/index.html $(SITE)/runs/*--$(PAGES).html $$(find $(SITE)/folders -name '*.html' 2>/dev/null)
	@echo "open $(SITE)/index.html; the screenshots are beside each page (page.screenshot.png)"

run: ## the main job: build what is missing, bring LAB up (fast profile), run the ci set with progress (REPEAT=N times each), print the verdict table, bring LAB down
	@# RUN_PROFILE (default fast) and RUN_FILTER (default ci) select the
	@# timer profile and the ginkgo label filter; the whole paper is
	@# `make run RUN_PROFILE=kubernetes-defaults RUN_FILTER=paper:disagree`.
	@# REPEAT=N runs each selected scenario × arm N times into the one run
	@# folder, in rounds, and the verdict table then gives each verdict's
	@# stability over them.
	@# The lab file is copied with the profile written into it, so the lab,
	@# the suite's bounds and the run records all name the same profile.
	@# Only what the lab runs is built: csi-attacher only for a lab with
	@# a storage host.
	$(MAKE) faultline ginkgo
	@src="$(LAB)"; [ -f "$$src" ] || src="testdata/labs/$(LAB).yaml"; \
	[ -f "$$src" ] || { echo "make run: no lab file $(LAB) (nor testdata/labs/$(LAB).yaml)"; exit 2; }; \
	need="$$(lab/local/bins/build.sh -l | awk '{print $$1}')"; \
	grep -qE '^[^#]*roles:.*\bstorage\b' "$$src" || need="$$(grep -vx csi-attacher <<<"$$need")"; \
	lab/local/bins/build.sh $$need; \
	profile="$${RUN_PROFILE:-fast}"; filter="$${RUN_FILTER:-ci}"; \
	tmp="$$(mktemp -d)"; labfile="$$tmp/$$(basename "$$src")"; \
	if grep -qE '^\s+timerProfile:' "$$src"; then sed -E "s/^(\s+timerProfile:).*/\1 $$profile/" "$$src" > "$$labfile"; \
	else echo "make run: $$src names no kubernetes.timerProfile to set to $$profile"; exit 2; fi; \
	down() { echo "== lab down"; $(BIN)/faultline lab down --lab "$$labfile" || echo "make run: lab down failed: run $(BIN)/faultline lab down --lab $(LAB)"; rm -rf "$$tmp"; }; \
	trap down EXIT; \
	start=$$(date +%s); \
	echo "== lab up ($$src, profile $$profile)"; $(BIN)/faultline lab up --lab "$$labfile"; \
	echo "== lab up took $$(( $$(date +%s) - start ))s; running --label-filter='$$filter'$(if $(REPEAT), $(REPEAT) times each)"; \
	before="$$(ls -d reports/runs/*-disagree 2>/dev/null || true)"; \
	rc=0; FAULTLINE_LAB="$$labfile" $(if $(REPEAT),FAULTLINE_REPEAT=$(REPEAT)) $(GINKGO) -v --label-filter="$$filter" --timeout=$$(( 24 * $(or $(REPEAT),1) ))h ./suites/disagree || rc=$$?; \
	folder="$$(ls -td reports/runs/*-disagree 2>/dev/null | head -1)"; \
	if [ -n "$$folder" ] && ! grep -qxF "$$folder" <<<"$$before"; then \
		echo "== verdicts ($$folder)"; $(BIN)/faultline report "$$folder"; \
	else echo "make run: the suite wrote no run folder"; rc=1; fi; \
	echo "== took $$(( $$(date +%s) - start ))s in all; ginkgo exit $$rc (a VIOLATED verdict fails its spec by design: read the table)"; \
	exit $$rc
