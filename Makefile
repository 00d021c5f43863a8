# The lab's two commands: `make repro` (the full reproduction and its
# report) and `make test` (the tests, what CI runs). Both prepare a fresh
# Debian machine first (make deps).

SHELL := bash
GO ?= go
LAB_REPORT_DIR ?= $(CURDIR)/reports/out
export LAB_REPORT_DIR

.PHONY: test repro deps image unit clean

## test: every test, through gotestsum, with JUnit and JSON results in $(LAB_REPORT_DIR)
test: deps
	mkdir -p $(LAB_REPORT_DIR)
	$(GO) tool gotestsum --format testname \
	  --junitfile $(LAB_REPORT_DIR)/junit.xml --jsonfile $(LAB_REPORT_DIR)/test.json \
	  -- -count=1 -timeout 85m ./...

## repro: the full reproduction (article B at the article's -n), reports in $(LAB_REPORT_DIR)
repro: deps
	mkdir -p $(LAB_REPORT_DIR)
	LAB_PROFILE=full $(GO) test ./bench -count=1 -timeout 4h -v

## deps: install mmdebstrap and curl, reach a Docker daemon (as root)
deps:
	@bash fixtures/host/setup.sh

## image: build or find the lab images without running any test
image: deps
	$(GO) test ./bench -count=1 -run '^$$'

## unit: the tests that need no Docker
unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v '/bench$$')

clean:
	rm -rf $(LAB_REPORT_DIR)
