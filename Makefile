# Tollgate: build, run and test on Debian 12 (GNU make).
#
#   make deps      check (and, as root, install) the Debian packages the build and tests need
#   make build     debug build            make release   release build
#   make run       release build, then `tollgate serve` on 127.0.0.1:3128
#   make install   release binary, systemd unit, default configuration (PREFIX=/usr/local, DESTDIR)
#   make test      build the tests, run the whole suite, then the whole suite again compiled
#                  as a release build (make test-release); at most 23 minutes of suites
#   make fuzz      build the libFuzzer targets of Fuzz/ and run each for FUZZ_SECONDS (60)
#   make test-tsan / make test-asan   the suite under ThreadSanitizer / AddressSanitizer
#
# `make` alone prints the list of targets.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

SWIFT ?= swift
# Extra flags for every `swift build` / `swift test`, e.g. `make test SWIFT_FLAGS="-j 1"`.
SWIFT_FLAGS ?=
# STYLE.md §9 build flags; opt in with `make build STRICT=1` (not yet on in CI).
ifeq ($(STRICT),1)
SWIFT_FLAGS += -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
endif

# What the build (C libraries, pkg-config) and the tests (curl, the openssl CLI, CA roots; HAProxy
# for the cluster of deploy/cluster; strace, which watches an offline proxy's connects; Chromium,
# which renders the admin API's live view; nghttp2's nghttp, nghttpd and h2load, HTTP/2 peers) need.
DEB_PACKAGES := liblmdb-dev libssl-dev zlib1g-dev libbrotli-dev pkg-config curl brotli openssl ca-certificates procps publicsuffix haproxy strace chromium nghttp2-client nghttp2-server nginx-light
# Installed when missing, but a machine where they cannot be is not refused (the tests that need
# them say they are skipped): systemd's systemd-socket-activate, which passes serve its sockets,
# and systemd-analyze, which checks the units (programs only: systemd is not started as init).
DEB_PACKAGES_OPTIONAL := systemd
# Python modules the tests use, from PyPI, for the python3 on PATH: prometheus_client parses /metrics;
# uv and poetry install offline from a cache warmed by their lockfiles (PythonLockfileWarmTests).
PYTHON_MODULES := prometheus_client websockets h2 uv poetry pipenv
# The debug suite must finish within TEST_TIMEOUT seconds, and the release build with its suite
# (`make test-release`) within TEST_RELEASE_TIMEOUT: together at most 23 minutes. Measured in
# session 17 (2 cores, a fuzz build beside it part of the time): the debug suite ~60 s, the
# release build of the tests (LTO, swift-nio-http2 included) and its suite 11 min 14 s — past
# the old 12-minute bound's comfort, so the release bound is 18 minutes.
# Tests run in parallel, at most TEST_WIDTH at a time (swift-testing's
# SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH): the debug suite takes about 25 s instead of
# 75 s one at a time. Unbounded, hundreds of tests would each run a proxy and an origin on the
# same two event-loop threads at once and starve each other's timers on a 2-core machine; at 4
# the suite passes under the load of a concurrent build. TEST_WIDTH=1 runs them one at a time.
TEST_TIMEOUT ?= 300
TEST_RELEASE_TIMEOUT ?= 1080
TEST_WIDTH ?= 4
TEST_MODE := $(if $(filter 1,$(TEST_WIDTH)),--no-parallel,--parallel)
TEST_ENV := env SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH)
TEST_LOG := .build/test.log
TEST_LOG_RELEASE := .build/test-release.log
# Where `make test-release` builds (apart from .build/release, which `make run` and bench/ use).
RELEASE_TEST_BUILD := .build/release-tests
# The shim the release-build test pass preloads (.ci/no-backtrace.c), and the C compiler for it:
# the toolchain's clang, beside swift.
NO_BACKTRACE_SHIM := .build/no-backtrace.so
# Runs a suite and kills what it left running (.ci/reaper.c says why).
REAPER := .build/reaper
SHIM_CC ?= clang

# `make install`: where things go. DESTDIR is prepended to every path (staged installs, packages).
# The configuration is in /etc/tollgate whatever PREFIX is: the unit's ConfigurationDirectory.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/tollgate
CONFDIR := /etc/tollgate
# The binary installed; built with `make release` when missing.
RELEASE_BINARY ?= .build/release/tollgate

.PHONY: help deps build release run test test-release release-suite test-tsan test-asan sanitizer-suite bench bench-peers bench-instructions clean format lint install uninstall fuzz fuzz-build

# `make fuzz` (issue #32, docs/operations.md "Fuzzing"): every target of Fuzz/Sources, built with
# libFuzzer and AddressSanitizer into FUZZ_BUILD, runs FUZZ_SECONDS each; FUZZ_TARGETS picks some
# (e.g. `make fuzz FUZZ_TARGETS="FuzzURL FuzzCookie" FUZZ_SECONDS=300`). Fails on a crash, a
# leak, a timeout or a broken invariant, printing the reproducer and the command that replays it.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
FUZZ_BUILD ?= .build-fuzz

help: ## List the targets
	@echo "Tollgate: make TARGET"
	@awk 'BEGIN { FS = ":.*## " } /^[a-z-]+:.*## / { printf "  make %-13s %s\n", $$1, $$2 }' $(firstword $(MAKEFILE_LIST))

deps: ## Check the Debian packages and Swift; install missing packages when root
	@if ! command -v $(SWIFT) >/dev/null 2>&1; then \
		echo "deps: Swift 6 is needed and '$(SWIFT)' is not on PATH (e.g. export PATH=/opt/swift/usr/bin:\$$PATH)" >&2; \
		exit 1; \
	fi
	@major=$$($(SWIFT) --version 2>/dev/null | sed -n 's/.*Swift version \([0-9][0-9]*\)\..*/\1/p' | head -n 1); \
	if [ -z "$$major" ] || [ "$$major" -lt 6 ]; then \
		echo "deps: Swift 6 is needed; found: $$($(SWIFT) --version 2>&1 | head -n 1)" >&2; \
		exit 1; \
	fi
	@if ! command -v dpkg-query >/dev/null 2>&1; then \
		echo "deps: no dpkg-query (not Debian?): make sure these are installed: $(DEB_PACKAGES)" >&2; \
		exit 0; \
	fi; \
	missing=""; \
	for pkg in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' "$$pkg" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$pkg"; \
	done; \
	if [ -z "$$missing" ]; then \
		echo "deps: ok ($(DEB_PACKAGES))"; \
		exit 0; \
	fi; \
	if [ "$$(id -u)" -eq 0 ]; then \
		echo "deps: installing$$missing"; \
		apt-get update; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	else \
		echo "deps: missing Debian packages:$$missing" >&2; \
		echo "deps: install them with:" >&2; \
		echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends$$missing" >&2; \
		exit 1; \
	fi
	@if command -v dpkg-query >/dev/null 2>&1; then \
		for pkg in $(DEB_PACKAGES_OPTIONAL); do \
			dpkg-query -W -f='$${Status}' "$$pkg" 2>/dev/null | grep -q 'install ok installed' && continue; \
			if [ "$$(id -u)" -eq 0 ] && apt-get update >/dev/null \
				&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$$pkg"; then continue; fi; \
			echo "deps: warning: $$pkg is not installed (sudo apt-get install $$pkg): the tests that need it are skipped" >&2; \
		done; \
	fi
	@for module in $(PYTHON_MODULES); do \
		if ! command -v python3 >/dev/null 2>&1; then echo "deps: no python3; tests that need $$module are skipped" >&2; break; fi; \
		python3 -c "import $$module" 2>/dev/null && continue; \
		echo "deps: installing the Python module $$module"; \
		python3 -m pip install --quiet --disable-pip-version-check "$$module" \
			|| { echo "deps: cannot install the Python module $$module" >&2; exit 1; }; \
	done
	@# npm, go, bundler and composer (with unzip, which it extracts zips with) for the offline build
	@# tests (LockfileWarmOfflineBuildTests), skopeo and docker-registry (the CNCF distribution
	@# registry) for the container image tests (ContainerImageWarmTests): Debian's, when the
	@# command is not on PATH (one installed another way, as NodeSource's Node.js, is used as it
	@# is). cargo is used when a cargo 1.70 or later (the sparse index) is on PATH, as rustup
	@# installs it; Debian 12's is older.
	@missing=""; \
	for tool in npm:npm go:golang-go bundle:ruby-bundler composer:composer unzip:unzip skopeo:skopeo docker-registry:docker-registry; do \
		command -v "$${tool%%:*}" >/dev/null 2>&1 || missing="$$missing $${tool#*:}"; \
	done; \
	if [ -n "$$missing" ] && command -v dpkg-query >/dev/null 2>&1; then \
		if [ "$$(id -u)" -eq 0 ]; then \
			echo "deps: installing$$missing"; \
			apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
		else \
			echo "deps: missing$$missing: the offline build tests that need them are skipped (sudo apt-get install$$missing)" >&2; \
		fi; \
	fi

build: deps ## Debug build (swift build)
	$(SWIFT) build $(SWIFT_FLAGS)

# The release executable is built with link-time optimization and links the Swift runtime and
# Foundation statically. LTO lets LLVM inline and simplify across module boundaries (our
# modules, SwiftNIO's and the runtime's entry points): user CPU per 1 KiB cache hit -11 %, per
# pass-through request -12 %. Static linking makes each of a request's ~500 retains and releases
# a direct call instead of one through the shared library's PLT (-5 %), and the binary runs
# without a Swift toolchain installed. docs/performance.md (session 10) has the measurements;
# bench/common.sh builds the same way, and `make test-release` tests code optimized the same way.
LTO_FLAGS := --experimental-lto-mode=full
# The dependencies (SwiftNIO) are built without dynamic exclusivity checks too, as Package.swift
# builds our own modules in release: a package's unsafe flags reach only its own targets, so this
# one is given on the command line. NIO's channel operations each make such a check per event
# (isOpen, writeToSocket, …): pass-through user CPU −5 % in six alternating pairs (session 11).
# The debug build, which the first test pass runs, keeps every check.
DEPENDENCY_FLAGS := -Xswiftc -enforce-exclusivity=unchecked
RELEASE_BUILD_FLAGS := -c release --static-swift-stdlib $(LTO_FLAGS) $(DEPENDENCY_FLAGS)

release: deps ## Release build (swift build -c release, LTO, Swift runtime linked statically)
	$(SWIFT) build $(RELEASE_BUILD_FLAGS) $(SWIFT_FLAGS)

# The unit names /usr/local/bin/tollgate and the docs under /usr/local/share/doc/tollgate; they are
# rewritten for BINDIR and DOCDIR. An existing configuration is never replaced: the new default is
# put beside it as tollgate.yaml.default.
install: ## Install the release binary, the systemd unit and a default configuration (PREFIX, DESTDIR)
	@if [ ! -x "$(RELEASE_BINARY)" ]; then $(MAKE) --no-print-directory release; fi
	install -D -m 0755 "$(RELEASE_BINARY)" "$(DESTDIR)$(BINDIR)/tollgate"
	install -d -m 0755 "$(DESTDIR)$(UNITDIR)"
	sed -e 's|/usr/local/bin/tollgate|$(BINDIR)/tollgate|g' -e 's|/usr/local/share/doc/tollgate|$(DOCDIR)|g' \
		deploy/systemd/tollgate.service >"$(DESTDIR)$(UNITDIR)/tollgate.service"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/tollgate.service"
	sed -e 's|/usr/local/share/doc/tollgate|$(DOCDIR)|g' deploy/systemd/tollgate.socket >"$(DESTDIR)$(UNITDIR)/tollgate.socket"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/tollgate.socket"
	install -d -m 0755 "$(DESTDIR)$(CONFDIR)"
	@if [ -e "$(DESTDIR)$(CONFDIR)/tollgate.yaml" ]; then \
		install -m 0644 deploy/systemd/tollgate.yaml "$(DESTDIR)$(CONFDIR)/tollgate.yaml.default"; \
		echo "install: kept $(DESTDIR)$(CONFDIR)/tollgate.yaml; the new default is tollgate.yaml.default beside it"; \
	else \
		install -m 0644 deploy/systemd/tollgate.yaml "$(DESTDIR)$(CONFDIR)/tollgate.yaml"; \
	fi
	install -D -m 0644 docs/operations.md "$(DESTDIR)$(DOCDIR)/operations.md"
	install -D -m 0644 docs/configuration.md "$(DESTDIR)$(DOCDIR)/configuration.md"
	install -D -m 0644 deploy/README.md "$(DESTDIR)$(DOCDIR)/deploy.md"
	install -d -m 0755 "$(DESTDIR)$(PREFIX)/share/bash-completion/completions" \
		"$(DESTDIR)$(PREFIX)/share/zsh/site-functions" "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d"
	"$(RELEASE_BINARY)" --generate-completion-script bash >"$(DESTDIR)$(PREFIX)/share/bash-completion/completions/tollgate"
	"$(RELEASE_BINARY)" --generate-completion-script zsh >"$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_tollgate"
	"$(RELEASE_BINARY)" --generate-completion-script fish >"$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/tollgate.fish"
	@if [ -z "$(DESTDIR)" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then \
		echo "install: done; start it with: systemctl daemon-reload && systemctl enable --now tollgate (or tollgate.socket tollgate: systemd holds the sockets, deploy/README.md)"; \
	fi

uninstall: ## Remove what `make install` put in place, except the configuration in /etc/tollgate
	rm -f "$(DESTDIR)$(BINDIR)/tollgate" "$(DESTDIR)$(UNITDIR)/tollgate.service" "$(DESTDIR)$(UNITDIR)/tollgate.socket" \
		"$(DESTDIR)$(PREFIX)/share/bash-completion/completions/tollgate" \
		"$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_tollgate" \
		"$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/tollgate.fish"
	rm -rf "$(DESTDIR)$(DOCDIR)"

run: release ## Release build, then run `tollgate serve` (forward proxy on 127.0.0.1:3128)
	exec .build/release/tollgate serve

test: deps $(REAPER) ## Build the tests, run the whole suite, then again as a release build (make test-release)
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	@mkdir -p .build
	@set +e; \
	$(REAPER) timeout --kill-after=30 $(TEST_TIMEOUT) $(TEST_ENV) $(SWIFT) test --skip-build $(TEST_MODE) $(SWIFT_FLAGS) 2>&1 | tee $(TEST_LOG); \
	status=$${PIPESTATUS[0]}; \
	set -e; \
	echo "--- test summary ($(TEST_LOG))"; \
	grep -E 'Executed [1-9][0-9]* tests?,' $(TEST_LOG) | tail -n 1 || true; \
	grep -E 'Test run with [0-9]+ tests?' $(TEST_LOG) | tail -n 1 || true; \
	if [ "$$status" -eq 124 ] || [ "$$status" -eq 137 ]; then \
		echo "test: the suite did not finish within $(TEST_TIMEOUT) seconds" >&2; \
	fi; \
	if [ "$$status" -ne 0 ] && ! grep -qE 'Test run with [0-9]+ tests?' $(TEST_LOG); then .ci/unfinished-tests $(TEST_LOG); fi; \
	exit $$status
	@$(MAKE) --no-print-directory release-suite

# The whole suite once more, compiled as a release build in a build folder of its own (so the
# release binary that `make run` and the benchmarks use is not rebuilt with testing enabled): the
# release settings of Package.swift (no exclusivity checks, cross-module optimization, no lexical
# lifetimes in the request path) change how the code runs, and the debug build of the first pass
# has none of them. Its command-line tests run the release `tollgate` built beside the tests.
# Compiled with link-time optimization and without the dependencies' exclusivity checks, like
# `make release` (the runtime stays a shared library: the test frameworks have no static form).
# swift-testing's capture of a backtrace at each thrown error is turned off, and the tests run
# with .ci/no-backtrace.c preloaded (glibc's backtrace() returning no frames): libgcc's unwinder
# crashes walking LTO-built frames, and swift-testing walks them for every failed #expect — the
# pass died without naming the test. (`swift test` builds and runs in one command, so the compiler
# gets the shim too: it calls backtrace() only to print its own crash, which would then have no
# stack; `swift build` cannot make the testable release build that `swift test` makes.)
# A suite that stops before its end (a crash, the timeout) is followed by the names of the tests
# that were running then (.ci/unfinished-tests): a crash prints none of its own.
test-release: deps ## The whole suite again, compiled as a release build (at most 18 minutes)
	@$(MAKE) --no-print-directory release-suite

# test-release without the package check (`make test` has just made it).
release-suite: $(REAPER)
	@mkdir -p .build
	@$(SHIM_CC) -shared -fPIC -O2 -o $(NO_BACKTRACE_SHIM) .ci/no-backtrace.c
	@set +e; \
	$(REAPER) timeout --kill-after=30 $(TEST_RELEASE_TIMEOUT) \
		$(TEST_ENV) LD_PRELOAD=$(CURDIR)/$(NO_BACKTRACE_SHIM) SWT_SWIFT_ERROR_BACKTRACING_ENABLED=0 \
		$(SWIFT) test -c release $(LTO_FLAGS) $(DEPENDENCY_FLAGS) --build-path $(RELEASE_TEST_BUILD) $(TEST_MODE) $(SWIFT_FLAGS) >$(TEST_LOG_RELEASE) 2>&1; \
	status=$$?; \
	set -e; \
	echo "--- release-build test summary ($(TEST_LOG_RELEASE))"; \
	grep -E '✘|Test run with [0-9]+ tests?' $(TEST_LOG_RELEASE) | tail -n 20 || true; \
	if [ "$$status" -eq 124 ] || [ "$$status" -eq 137 ]; then \
		echo "test-release: the build and suite did not finish within $(TEST_RELEASE_TIMEOUT) seconds" >&2; \
	fi; \
	if [ "$$status" -ne 0 ] && grep -q 'Test run started' $(TEST_LOG_RELEASE) && ! grep -qE 'Test run with [0-9]+ tests?' $(TEST_LOG_RELEASE); then \
		.ci/unfinished-tests $(TEST_LOG_RELEASE); \
	fi; \
	exit $$status

# The reaper every suite runs under, built when its source is newer.
$(REAPER): .ci/reaper.c
	@mkdir -p $(dir $@)
	@$(SHIM_CC) -O2 -o $@ .ci/reaper.c

# The suite under a sanitizer (issue #32), each in a build folder of its own. TSan: the
# `-DTOLLGATE_TSAN` build gives TollgateSession a pthread-based `Mutex`, which TSan can see
# (Sources/TollgateSession/Mutex+ThreadSanitizer.swift says why). Reports of every process (the
# tests' and each `tollgate` a command-line test starts) go to files under the build folder: the
# target fails if there is any, and prints them. Suppressions (each with its reason) are in
# Tests/Sanitizers/. SANITIZER_WIDTH tests at a time (the sanitized suite is several times slower).
TSAN_BUILD := .build-tsan
ASAN_BUILD := .build-asan
TSAN_BUILD_FLAGS := --sanitize=thread -Xswiftc -DTOLLGATE_TSAN --build-path $(TSAN_BUILD)
ASAN_BUILD_FLAGS := --sanitize=address -Xswiftc -DTOLLGATE_ASAN --build-path $(ASAN_BUILD)
SANITIZER_TIMEOUT ?= 1500
SANITIZER_WIDTH ?= $(TEST_WIDTH)
SANITIZER_MODE := $(if $(filter 1,$(SANITIZER_WIDTH)),--no-parallel,--parallel)
TSAN_ENV := TSAN_OPTIONS="suppressions=$(CURDIR)/Tests/Sanitizers/tsan.supp log_path=$(CURDIR)/$(TSAN_BUILD)/reports/report"
# LeakSanitizer's check at exit is off unless ASAN_LEAKS=1: `tollgate` exits with its loops and
# connections alive, and LSan cannot follow the references Swift stores encoded (a weak
# reference's side table, an enum payload's tag bits), so it reports every live object graph
# behind one; suppressing the root does not suppress the objects it holds. Tests/Sanitizers/
# lsan.supp has what a run with it on reported from the runtime and Foundation.
ASAN_LEAKS ?= 0
ASAN_ENV := ASAN_OPTIONS="detect_leaks=$(ASAN_LEAKS) log_path=$(CURDIR)/$(ASAN_BUILD)/reports/report" \
	LSAN_OPTIONS="suppressions=$(CURDIR)/Tests/Sanitizers/lsan.supp print_suppressions=0"

test-tsan: deps ## The whole suite built with --sanitize=thread (.build-tsan; fails on any report)
	$(SWIFT) build --build-tests $(TSAN_BUILD_FLAGS) $(SWIFT_FLAGS)
	@$(MAKE) --no-print-directory sanitizer-suite SANITIZER=tsan BUILD_DIR=$(TSAN_BUILD) \
		SANITIZER_FLAGS='$(TSAN_BUILD_FLAGS)' SANITIZER_ENV='$(TSAN_ENV)'

test-asan: deps ## The whole suite built with --sanitize=address (.build-asan; ASAN_LEAKS=1: LeakSanitizer)
	$(SWIFT) build --build-tests $(ASAN_BUILD_FLAGS) $(SWIFT_FLAGS)
	@$(MAKE) --no-print-directory sanitizer-suite SANITIZER=asan BUILD_DIR=$(ASAN_BUILD) \
		SANITIZER_FLAGS='$(ASAN_BUILD_FLAGS)' SANITIZER_ENV='$(ASAN_ENV)'

# Runs the sanitized suite built by test-tsan or test-asan; the log is $(BUILD_DIR)/test.log.
sanitizer-suite: $(REAPER)
	@rm -rf $(BUILD_DIR)/reports && mkdir -p $(BUILD_DIR)/reports
	@set +e; \
	$(REAPER) timeout --kill-after=30 $(SANITIZER_TIMEOUT) env $(SANITIZER_ENV) \
		SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(SANITIZER_WIDTH) \
		$(SWIFT) test --skip-build $(SANITIZER_FLAGS) $(SANITIZER_MODE) $(SWIFT_FLAGS) >$(BUILD_DIR)/test.log 2>&1; \
	status=$$?; \
	set -e; \
	echo "--- test-$(SANITIZER) summary ($(BUILD_DIR)/test.log)"; \
	grep -E '✘|Test run with [0-9]+ tests?' $(BUILD_DIR)/test.log | tail -n 20 || true; \
	if [ "$$status" -eq 124 ] || [ "$$status" -eq 137 ]; then \
		echo "test-$(SANITIZER): the suite did not finish within $(SANITIZER_TIMEOUT) seconds" >&2; \
	fi; \
	reports=$$(find $(BUILD_DIR)/reports -type f -size +0 | sort); \
	if [ -n "$$reports" ]; then \
		cat $$reports; \
		echo "test-$(SANITIZER): $$(echo "$$reports" | wc -l) process(es) reported; see $(BUILD_DIR)/reports" >&2; \
		[ "$$status" -ne 0 ] || status=1; \
	fi; \
	exit $$status

bench: ## Run the benchmarks in bench/ (wrk and nginx; installed when missing, as root)
	@if [ -f bench/run.sh ]; then \
		exec bash bench/run.sh; \
	else \
		echo "bench: bench/run.sh is missing" >&2; \
		exit 1; \
	fi

bench-peers: ## Issue #29's table: Tollgate beside tuned nginx and Apache Traffic Server (ROUNDS, DURATION, ROWS, PROXIES)
	exec bash bench/peers.sh

bench-instructions: ## User-space instructions per request (valgrind callgrind): 1 KiB and 16 KiB hits, 1 KiB pass-through, 1 KiB hit on new connections (N, CLOSE_SECONDS, TOLLGATE, KEEP)
	exec bash bench/instructions.sh

bench-misses: ## Stored misses one after another on one connection, and the same no-store (ROUNDS, N, SIZE, TOLLGATE)
	exec bash bench/misses.sh

fuzz: deps ## Build the fuzz targets (Fuzz/) and run each for FUZZ_SECONDS (default 60); fails on a finding
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_BUILD=$(FUZZ_BUILD) SWIFT=$(SWIFT) bash Fuzz/run.sh $(FUZZ_TARGETS)

fuzz-build: deps ## Build the fuzz targets without running them
	FUZZ_BUILD=$(FUZZ_BUILD) SWIFT=$(SWIFT) bash Fuzz/run.sh --build-only $(FUZZ_TARGETS)

clean: ## Remove the build folders (.build, and .build-fuzz of make fuzz)
	rm -rf .build $(FUZZ_BUILD)

format: ## Format the git-tracked Swift files in place (swift format)
	@if $(SWIFT) format --version >/dev/null 2>&1; then \
		git ls-files -z '*.swift' | xargs -0 --no-run-if-empty $(SWIFT) format format --parallel --in-place; \
	else \
		echo "format: 'swift format' is not available; nothing formatted" >&2; \
	fi

lint: ## Check the git-tracked Swift files against .swift-format (swift format lint --strict)
	@if $(SWIFT) format --version >/dev/null 2>&1; then \
		git ls-files -z '*.swift' | xargs -0 --no-run-if-empty $(SWIFT) format lint --strict --parallel; \
	else \
		echo "lint: 'swift format' is not available; skipped" >&2; \
	fi
