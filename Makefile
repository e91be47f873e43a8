# selfcode — build, test and lint. `make test` is what CI runs (.ci/run).
GO        ?= go
PKGS      ?= ./...
BIN       ?= bin/selfcode
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck
ACTIONLINT_VERSION ?= v1.7.12
ACTIONLINT := $(shell $(GO) env GOPATH)/bin/actionlint
RELEASE_DIR ?= bin/release

.PHONY: all build test test-short sandbox-image lint vet staticcheck actionlint release-dry-run fmt fuzz bench demo clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/selfcode

# The sandbox image on the engine, built from the current recipe, through
# the same Docker client selfcode uses (DOCKER_HOST and the like, not the
# docker CLI's contexts): `selfcode image ensure` does nothing when the image
# is there and built from this recipe (by docker build or offline), and
# otherwise builds it by the first way that works here — docker build when
# the engine can pull the Dockerfile's base images, else the offline build
# (debootstrap from the machine's apt mirror → docker import). Without an
# engine it says so and the Docker tests skip; with SELFCODE_REQUIRE_DOCKER=1
# that is an error.
sandbox-image:
	$(GO) run ./cmd/selfcode image ensure $(if $(filter 1,$(SELFCODE_REQUIRE_DOCKER)),,--if-reachable)

test: sandbox-image chromium vet staticcheck actionlint release-dry-run
	$(GO) test -count=1 -timeout 45m $(PKGS)

test-short:
	$(GO) test -short $(PKGS)

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet $(PKGS)

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)

# The GitHub Actions workflows, checked with actionlint at a pinned version
# (installed like staticcheck; its shellcheck rule runs when shellcheck is
# installed and is skipped otherwise).
actionlint:
	@$(ACTIONLINT) -version 2>/dev/null | grep -qx '$(ACTIONLINT_VERSION)' || \
		$(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	$(ACTIONLINT) .github/workflows/*.yml

# What the release workflow builds, built here: the binaries for linux and
# darwin on amd64 and arm64 with SHA256SUMS (deploy/release/build-binaries.sh,
# the workflow's own script), then this machine's binary is run.
release-dry-run:
	rm -rf $(RELEASE_DIR)
	deploy/release/build-binaries.sh v0.0.0-dry-run $(RELEASE_DIR)
	test "$$(wc -l <$(RELEASE_DIR)/SHA256SUMS)" -eq 4
	$(RELEASE_DIR)/selfcode-$$($(GO) env GOOS)-$$($(GO) env GOARCH) version | grep -qx 'selfcode v0.0.0-dry-run'

lint: vet staticcheck actionlint

fmt:
	gofmt -w $$(git ls-files '*.go')

# Short fuzzing of every parser; FUZZTIME=5m for longer runs.
FUZZTIME ?= 20s
fuzz:
	$(GO) test ./app/command -run XXX -fuzz FuzzParse -fuzztime $(FUZZTIME)
	$(GO) test ./app/intake -run XXX -fuzz FuzzRoute -fuzztime $(FUZZTIME)
	$(GO) test ./app/intake -run XXX -fuzz FuzzLeanIssueComment -fuzztime $(FUZZTIME)
	$(GO) test ./app/runner -run XXX -fuzz FuzzFailingStep -fuzztime $(FUZZTIME)
	$(GO) test ./app/config -run XXX -fuzz FuzzLoadYAML -fuzztime $(FUZZTIME)
	$(GO) test ./pipeline/repoconfig -run XXX -fuzz FuzzParse -fuzztime $(FUZZTIME)
	$(GO) test ./pipeline/tools -run XXX -fuzz FuzzStrReplace -fuzztime $(FUZZTIME)
	$(GO) test ./app/pricing -run XXX -fuzz FuzzParse -fuzztime $(FUZZTIME)
	$(GO) test ./pipeline/radius -run XXX -fuzz FuzzPythonImports -fuzztime $(FUZZTIME)
	$(GO) test ./pipeline/radius -run XXX -fuzz FuzzJSImports -fuzztime $(FUZZTIME)
	$(GO) test ./app/secretscan -run XXX -fuzz FuzzAddedLines -fuzztime $(FUZZTIME)
	for f in FuzzParseGoJSON FuzzParseGoText FuzzParsePytest FuzzParseUnittest FuzzParseTAP FuzzParseMochaSpec FuzzParseJSReports FuzzParseJUnit; do \
		$(GO) test ./pipeline/testreport -run XXX -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	done
	$(GO) test ./prompts -run XXX -fuzz FuzzData -fuzztime $(FUZZTIME)
	$(GO) test ./templates -run XXX -fuzz FuzzFence -fuzztime $(FUZZTIME)
	$(GO) test ./internal/fakeopenai -run XXX -fuzz FuzzLoadTranscript -fuzztime $(FUZZTIME)
	$(GO) test ./app/llm -run XXX -fuzz FuzzParseRetryAfter -fuzztime $(FUZZTIME)
	$(GO) test ./internal/dockerfile -run XXX -fuzz FuzzBaseImages -fuzztime $(FUZZTIME)
	$(GO) test ./app/sandbox -run XXX -fuzz FuzzParseCgroupLimits -fuzztime $(FUZZTIME)
	$(GO) test ./app/sandbox -run XXX -fuzz FuzzReadBuild -fuzztime $(FUZZTIME)
	$(GO) test ./app/sandbox -run XXX -fuzz FuzzListenAddrs -fuzztime $(FUZZTIME)

# Issue 14's figures first: the sample one-line job cold and warm (Docker),
# and intake over HTTP against a minimal reference intake.
bench:
	GIN_MODE=release $(GO) test ./app/server -run XXX -bench SampleJob -benchtime 3x -timeout 30m
	GIN_MODE=release $(GO) test ./app/server -run XXX -bench IntakeAgainstReference -benchtime 20000x -count 5
	$(GO) test ./handlers -run XXX -bench . -benchtime 5s
	$(GO) test ./app/sandbox -run XXX -bench . -benchtime 30x
	$(GO) test ./pipeline -run XXX -bench PipelineOverhead -benchtime 10x
	$(GO) test ./pipeline/testreport -run XXX -bench Parsers -benchtime 20x

demo:
	$(GO) run ./cmd/selfcode demo

clean:
	rm -rf bin

# Headless Chromium (Debian's package) for the dashboard's browser test
# (handlers: TestDashboardInBrowser). Installed with apt-get when missing;
# with CI or SELFCODE_REQUIRE_BROWSER=1 a browser that cannot be installed is
# an error, otherwise the test skips.
.PHONY: chromium
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		:; \
	elif command -v apt-get >/dev/null 2>&1; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update && $$sudo apt-get install -y chromium; \
	elif [ -n "$$CI" ] || [ "$$SELFCODE_REQUIRE_BROWSER" = "1" ]; then \
		echo "Chromium is required (CI or SELFCODE_REQUIRE_BROWSER=1) but apt-get is not available" >&2; exit 1; \
	else \
		echo "Chromium not installed and no apt-get: the browser test will skip"; \
	fi
