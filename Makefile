# The lab's two commands: `make repro` (the full reproduction and its
# report) and `make test` (the tests, what CI runs). Both prepare a fresh
# Debian machine (make deps: make test runs it beside its compile).

SHELL := bash
GO ?= go
LAB_REPORT_DIR ?= $(CURDIR)/reports/out
# Absolute: make repro runs go test in bench/, where a relative path would
# land.
override LAB_REPORT_DIR := $(abspath $(LAB_REPORT_DIR))
export LAB_REPORT_DIR
BENCH_COUNT ?= 3
# SETUP prepares the machine (make deps; `$(SETUP) run` is make deps-run's
# part); make test runs both parts beside its compile, so `make -o deps`
# does not skip them there: SETUP=true does.
SETUP ?= bash fixtures/host/setup.sh
BENCH_OUT ?= $(LAB_REPORT_DIR)/bench.txt
# NICED runs a command at nice 19 in a session of its own (setsid, so that
# an interrupt or a TERM ends its process group whole). A new session is a
# new scheduler autogroup where the kernel has them on (this machine's
# kernel.sched_autogroup_enabled=1): a process's nice then weighs only
# within its group, and the group itself competes at nice 0. So the
# group's own nice is set too (/proc/self/autogroup), or two CPU-bound
# processes beside a niced pair of the same got half the cores, not all.
NICED = setsid sh -c 'echo 19 2>/dev/null >/proc/self/autogroup; exec nice -n 19 "$$@"' niced
# TESTBIN runs the test binaries make test's compile built (go test -c),
# as go test -json -count=1 -p 1 runs their packages
# (fixtures/host/testbin.sh): go test would link each binary again.
TESTBIN = env GO='$(GO)' bash fixtures/host/testbin.sh

.PHONY: test repro check deps deps-run settings image report docs merge kube kube-e2e bench gate unit soak clean

## test: every test through gotestsum at the ci profile (article B's ci load;
## article A under stock TCP memory, three cells under article-host; the
## sweep's 2 MiB/s row, 2 runs per cell; the resilience-matrix cells its
## ci verdicts read, once: engine.CIMatrixVerdicts, 3 streaming conditions); JUnit,
## go test -json and report.html in $(LAB_REPORT_DIR)
## Before the series, nothing is measured, and everything that can runs at
## once (the times are a clean machine's here, issue 31):
##  - first, what the image needs (fixtures/host/setup.sh run: mmdebstrap,
##    curl and the Docker daemon) and the build of the two tools that come
##    before anything is written, at nice 0; then the compile of every test
##    binary (go test -c, two at a time, and test2json), at nice 19, which
##    takes whatever CPU the rest leaves: apt, dpkg and the base image's
##    build come before it (that build took 148 s beside a niced compile,
##    241 s beside one at nice 0, and 244 to 252 s while the compile's
##    session, an autogroup of its own, was niced only within itself: NICED
##    sets the group's nice too). It waits for the tools' build, whose
##    packages (the standard library, Docker's client) it would otherwise
##    compile a second time beside it: 262 core-seconds for both at once
##    against 238 one after the other, the tools ready in 54 s against 42;
##  - the tools: labsettings checks every LAB_* setting,
##    then labimage builds the images in the background (a clean machine's
##    base image, the lab image and the example stacks' app images, those
##    at once) and records them; the rest of deps (Chromium, yamllint) is
##    installed beside that build, which no longer waits for Chromium's
##    download and unpacking (about 30 s on a clean machine here);
##  - once compiled, the unit packages run, one at a time and not niced
##    (their clocks are asserted), and beside them the report's browser
##    test (htmlreport: two headless Chromium runs, about 27 s) at nice 19.
## Units, browser test and series run the compiled binaries (TESTBIN), not
## go test, which would link each again.
## The compile and the browser test run in process groups of their own
## (setsid), which an interrupt or a TERM ends whole.
## The series (./bench, -p 1, which keeps its measurements apart) starts once
## all is done, finds the images and reports their build from the step's
## record (LAB_IMAGE_RECORD). A failed image step is shown, and the series
## builds the images itself. A package that did not compile runs through
## go test, which reports the error.
## test.json is the units' stream, then the series'; junit.xml is made from
## it.
test:
	bin=$$(mktemp -d); compile=; tools=; image=; browser=; status=0; \
	quit() { for g in $$compile $$browser; do kill -TERM -- -$$g 2>/dev/null; done; kill $$tools $$image 2>/dev/null; \
	  wait; rm -rf $$bin; exit $$1; }; \
	trap 'quit 130' INT; trap 'quit 143' TERM; \
	{ trap 'kill $$b 2>/dev/null' TERM; $(GO) build -o $$bin/ ./bench/cmd/labsettings ./bench/cmd/labimage >$$bin/tools.log 2>&1 & b=$$!; \
	  wait $$b; s=$$?; touch $$bin/tools.done; exit $$s; } & tools=$$!; \
	$(NICED) sh -c 'until [ -e "$$0/tools.done" ]; do sleep 0.2; done; $(GO) test -c -o "$$0/t/" ./...; exec $(GO) build -o "$$0/t/" cmd/test2json' $$bin >/dev/null 2>&1 & compile=$$!; \
	$(SETUP) run || quit 2; \
	wait $$tools || { cat $$bin/tools.log >&2; quit 2; }; tools=; \
	$$bin/labsettings || quit 2; \
	mkdir -p $(LAB_REPORT_DIR); \
	rm -f $(addprefix $(LAB_REPORT_DIR)/,image-record.json image-build.log test-units.json test-bench.json test.json junit.xml); \
	$$bin/labimage -record $(LAB_REPORT_DIR)/image-record.json 2>$(LAB_REPORT_DIR)/image-build.log & image=$$!; \
	$(SETUP) || quit 2; \
	wait $$compile; compile=; \
	$(NICED) $(GO) tool gotestsum --format testname --jsonfile $$bin/browser.json \
	  --raw-command -- $(TESTBIN) $$bin/t 20m wsgilab/bench/internal/htmlreport >$$bin/browser.out 2>&1 & browser=$$!; \
	$(GO) tool gotestsum --format testname --jsonfile $(LAB_REPORT_DIR)/test-units.json \
	  --raw-command -- $(TESTBIN) $$bin/t 20m $$($(GO) list ./... | grep -vx -e wsgilab/bench -e wsgilab/bench/internal/htmlreport) || status=$$?; \
	wait $$browser || status=$$?; browser=; cat $$bin/browser.out; cat $$bin/browser.json >>$(LAB_REPORT_DIR)/test-units.json; \
	if ! wait $$image; then \
	  echo "make test: the image step failed (its output: $(LAB_REPORT_DIR)/image-build.log); the series builds the images itself" >&2; \
	  tail -n 20 $(LAB_REPORT_DIR)/image-build.log >&2 2>/dev/null; fi; image=; \
	record=; [ -s $(LAB_REPORT_DIR)/image-record.json ] && record=LAB_IMAGE_RECORD=$(LAB_REPORT_DIR)/image-record.json; \
	env $$record $(GO) tool gotestsum --format testname --jsonfile $(LAB_REPORT_DIR)/test-bench.json \
	  --raw-command -- $(TESTBIN) $$bin/t 85m wsgilab/bench || status=$$?; \
	rm -rf $$bin; \
	cat $(LAB_REPORT_DIR)/test-units.json $(LAB_REPORT_DIR)/test-bench.json > $(LAB_REPORT_DIR)/test.json 2>/dev/null; \
	$(GO) tool gotestsum --junitfile $(LAB_REPORT_DIR)/junit.xml --raw-command -- cat $(LAB_REPORT_DIR)/test.json >/dev/null; \
	[ -s $(LAB_REPORT_DIR)/junit.xml ] || { echo "make test: no junit.xml" >&2; status=1; }; \
	$(GO) run ./bench/cmd/labreport -dir $(LAB_REPORT_DIR) || status=1; \
	exit $$status

## repro: the full reproduction (article B at the article's -n; every
## article A cell under both TCP profiles; the whole size x rate sweep under
## both; the resilience matrix, every column (the fault columns too), with every row's
## capacity, and the streaming table; 3 runs per cell); progress on stderr (LAB_QUIET=1 silences it);
## report.html and its screenshot report.png.
## An interrupted repro resumes: the runs its journal holds are kept and only
## the missing ones run (LAB_RESUME=1); FRESH=1 starts afresh (LAB_RESUME=fresh).
## go test runs in bench/ (local directory mode) so its output streams.
FRESH ?=
repro: deps settings
	mkdir -p $(LAB_REPORT_DIR)
	trap 'exit 130' INT; trap 'exit 143' TERM; status=0; (cd bench && LAB_PROFILE=full LAB_RESUME=$(if $(FRESH),fresh,1) $(GO) test -count=1 -timeout 11h) || status=$$?; \
	LAB_BROWSER_DIR=$(LAB_REPORT_DIR) $(GO) test ./bench/internal/htmlreport -run TestBrowser -count=1 || status=1; \
	exit $$status

## check: put a team's own stack through the resilience matrix, STACK=path/stack.yaml
## (fixtures/stacks/README.md): the file and every setting are checked
## before anything is installed or started; then only what the check needs
## (deps-run: no Chromium), then labcheck: one subtest per
## requirement (TestStack), its verdict and advice printed; JUnit, go test
## -json, stacks.json and report.html in $(LAB_REPORT_DIR)/check, which each
## check starts afresh. make exits 2 on any failure; labcheck itself exits 1
## for a failed stack, 2 for undecided
check:
	@[ -n "$(STACK)" ] || { echo "make check: want STACK=path/stack.yaml (fixtures/stacks/README.md shows the form)" >&2; exit 2; }
	@LAB_STACK='$(abspath $(STACK))' $(GO) run ./bench/cmd/labsettings
	@$(MAKE) --no-print-directory deps-run
	$(GO) run ./bench/cmd/labcheck -stack '$(abspath $(STACK))'

## settings: check every LAB_* setting before anything is written
settings:
	@$(GO) run ./bench/cmd/labsettings

## deps: install mmdebstrap, curl, chromium and yamllint, reach a Docker
## daemon (as root): what make test and make repro need
deps:
	@$(SETUP)

## deps-run: only what measuring needs (make check, make bench, make
## image): mmdebstrap, curl and a Docker daemon, no browser
deps-run:
	@$(SETUP) run

## image: build or find the lab images without running any test
image: deps-run
	$(GO) test ./bench -count=1 -run '^$$'

## report: re-render report.html from $(LAB_REPORT_DIR), no new runs
report:
	$(GO) run ./bench/cmd/labreport -dir $(LAB_REPORT_DIR)

## docs: rewrite the documents' generated parts from their committed report
## files (bench/README.md's protection table, reports/matrix.svg, the make
## check transcript in fixtures/stacks/README.md); PACKAGES_FROM=DIR also
## rewrites the image's Python packages there from DIR/environment.json (a
## make test's report directory). Their unit tests fail while they are stale.
PACKAGES_FROM ?=
docs:
	$(GO) run ./bench/cmd/labreport -docs $(if $(PACKAGES_FROM),-packages-from '$(PACKAGES_FROM)')

## merge: merge a sharded series (LAB_SHARD=i/N, one report directory per
## shard) into OUT, judge every verdict on the merged data and render it;
## refuses shards of another series or on other machines (ALLOW_MISMATCH=1
## merges those anyway, recording the differences); exits 1 when
## conditions of the series' table were never started, unless PARTIAL=1
## (one table of Kubernetes Jobs: the other tables' verdicts are not run)
ALLOW_MISMATCH ?=
PARTIAL ?=
merge:
	@[ -n "$(SHARDS)" ] && [ -n "$(OUT)" ] || { echo "make merge: want SHARDS='dir0 dir1 ...' OUT=dir" >&2; exit 2; }
	$(GO) run ./bench/cmd/labreport -merge $(if $(ALLOW_MISMATCH),-allow-mismatch) $(if $(PARTIAL),-partial) -dir '$(OUT)' $(SHARDS)

## kube: render the profile's tables as Kubernetes Indexed Jobs into
## KUBE_DIR for kubectl apply (IMAGE: the lab image as imported on the
## nodes; NODES: the node pool's size)
KUBE_DIR ?= $(CURDIR)/reports/kube
TABLE ?= all
kube:
	@[ -n "$(IMAGE)" ] && [ -n "$(NODES)" ] || { echo "make kube: want IMAGE=wsgilab:<tag> NODES=<n> (TABLE=a|sweep|matrix|stream|all)" >&2; exit 2; }
	$(GO) run ./bench/cmd/labkube render -profile $(or $(LAB_PROFILE),full) -table $(TABLE) -image '$(IMAGE)' -nodes $(NODES) -o '$(KUBE_DIR)'

## kube-e2e: run article A's ci table as the rendered Jobs on a real
## single-node Kubernetes built here from upstream source, and check that
## it gives the Docker series' verdicts (TestArticleA, then
## TestKubeCluster; reports in KUBE_REPORT_DIR). Not part of make test:
## the cold build takes about 20 minutes on 2 cores.
## The release is Kubernetes 1.37.2 (bench/cluster/go.mod): the newest the
## Go module proxy serves that this machine's Go 1.26 builds, whose kubelet
## still runs on cgroup v1 (failCgroupV1: false; this host's Docker uses
## v1) and still falls back to its own cgroup driver with Debian's
## containerd 1.6 (1.38 drops that fallback).
## The binaries are cached by content in KUBE_CACHE/<hash of bench/cluster's
## go.mod, go.sum, etcd/main.go and the link flags>: a second run builds
## nothing.
## Everything it starts is stopped, and the host's sysctls the kubelet
## changes are put back, also after Ctrl-C, SIGTERM or the test's timeout
## (the next run reaps what a run killed outright left).
KUBE_CACHE ?= $(HOME)/.cache/wsgilab/kube
override KUBE_CACHE := $(abspath $(KUBE_CACHE))
KUBE_REPORT_DIR ?= $(LAB_REPORT_DIR)/kube-e2e
# The release's version, stamped into the binaries as Kubernetes' own
# build does (hack/lib/version.sh): without it they call themselves
# v0.0.0-master, which is not a version a node may report.
KUBE_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" {print $$2}' bench/cluster/go.mod)
KUBE_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
  -X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=$(word 1,$(subst ., ,$(KUBE_VERSION:v%=%))) \
  -X $(p).gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) -X $(p).gitTreeState=clean)
kube-e2e:
	@$(SETUP) kube
	key=$$( (cat bench/cluster/go.mod bench/cluster/go.sum bench/cluster/etcd/main.go; echo '$(KUBE_LDFLAGS)') | sha256sum | cut -c1-16); \
	bin=$(KUBE_CACHE)/$$key; \
	if [ -x $$bin/kubelet ]; then echo "make kube-e2e: the cluster's binaries, cached: $$bin"; \
	else rm -rf $$bin.tmp && mkdir -p $$bin.tmp && start=$$(date +%s) && \
	  (cd bench/cluster && $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $$bin.tmp/ tool ./etcd) && mv $$bin.tmp $$bin && \
	  echo "make kube-e2e: built the cluster's binaries in $$(( $$(date +%s) - start )) s: $$bin" || exit 2; fi; \
	mkdir -p $(KUBE_REPORT_DIR); \
	cd bench && LAB_PROFILE=ci LAB_KUBE_BIN=$$bin LAB_REPORT_DIR=$(abspath $(KUBE_REPORT_DIR)) \
	  $(GO) test -count=1 -timeout 150m -run '^(TestArticleA|TestKubeCluster)$$' -v

## bench: the conditions BENCH matches (default every condition of
## articles A and B and the matrix) as Go benchmarks, BENCH_COUNT samples,
## into BENCH_OUT; gate two with make gate. BENCH=Instruments: what the
## lab's own instruments cost (generator, sampler, lag, wall time, a whole
## article A series under the redo rule, a cold base-image build)
BENCH ?= ArticleA|ArticleB|Matrix
bench: deps-run settings
	mkdir -p $(dir $(BENCH_OUT))
	set -o pipefail; $(GO) test ./bench -run '^$$' -bench '$(BENCH)' -benchtime 1x -count $(BENCH_COUNT) -timeout 6h | tee $(BENCH_OUT)

## gate: the regression gate: fails when NEW's benchmarks moved beyond
## THRESHOLDS' per-unit limits from BASE's, significantly (bench/internal/gate);
## make exits 2 on any failure, labgate itself 1 for a regression and 2 for
## an undecided comparison or a bad file
THRESHOLDS ?= fixtures/gate/thresholds.yaml
gate:
	@[ -n "$(BASE)" ] && [ -n "$(NEW)" ] || { echo "make gate: want BASE=old.txt NEW=new.txt (make bench outputs)" >&2; exit 2; }
	$(GO) run ./bench/cmd/labgate -base '$(BASE)' -new '$(NEW)' -thresholds '$(THRESHOLDS)'

## soak: the CI profile N times back to back (default 5), each series in
## SOAK_DIR/<i>; how often each verdict held and each figure's spread are
## written into reports/measurements.md. Fails if any series failed.
N ?= 5
SOAK_DIR ?= $(CURDIR)/reports/soak
soak: deps settings
	rm -rf $(SOAK_DIR) && mkdir -p $(SOAK_DIR)
	trap 'exit 130' INT; trap 'exit 143' TERM; status=0; for i in $$(seq $(N)); do \
	  echo "soak: series $$i of $(N) -> $(SOAK_DIR)/$$i"; \
	  LAB_QUIET=1 LAB_REPORT_DIR=$(SOAK_DIR)/$$i $(GO) test ./bench -count=1 -timeout 85m > $(SOAK_DIR)/$$i.log 2>&1 \
	    || { echo "soak: series $$i failed (see $(SOAK_DIR)/$$i.log)"; status=1; }; \
	done; \
	$(GO) run ./bench/cmd/labsoak -md reports/measurements.md $$(seq -f '$(SOAK_DIR)/%g' $(N)) || status=1; \
	exit $$status

## unit: the tests that need no Docker
unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v '/bench$$')

clean:
	rm -rf $(LAB_REPORT_DIR)
