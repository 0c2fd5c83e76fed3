# unhold: `make test` is what CI runs (through .ci/run).

.PHONY: build run test test-quick test-time check generate bench

# unhold version and /healthz say what was built: the commit and whether
# the checkout had changes come from git (-buildvcs), the build time from
# here. The Dockerfile's build sets the same.
BUILD_TIME = $(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build:
	go build -buildvcs=auto -ldflags "-X main.buildTime=$(BUILD_TIME)" -o bin/unhold ./cmd/unhold

# Serves the dashboard with demo data on SQLite (unhold.db in this directory).
run:
	go run ./cmd/unhold serve --demo

# The race detector instruments our code and every Go library but two:
# the SQLite engine (modernc.org: C translated to Go), where it cost three
# quarters of a SQLite test's time and watches memory it does not track,
# and golang.org/x/crypto, whose argon2id fills 19 MiB per password check
# in one goroutine and cost four fifths of a login test's time; the
# figures are in docs/testing.md. The SQLite driver itself
# (modernc.org/sqlite, the Go package database/sql talks to) is
# instrumented: left out, the detector missed how it orders goroutines and
# reported races in gorm's and reflect's caches that are not there.
RACE = -race -gcflags='modernc.org/...=-race=false' -gcflags='modernc.org/sqlite=' -gcflags='golang.org/x/crypto/...=-race=false'

# What CI runs: the checks, then every test on SQLite and on PostgreSQL
# (UNHOLD_TEST_PG), the browser test included.
test: check
	go test $(RACE) -count=1 -timeout 40m ./...

# The inner loop: SQLite only, -short (the long soak, chaos and big-shop
# cases and the browser test skip), no checks.
test-quick:
	env -u UNHOLD_TEST_PG -u CI go test $(RACE) -short -count=1 ./...

# Where the time of make test's tests goes: the slowest packages and tests.
test-time:
	go run ./internal/testtime -- $(RACE) -count=1 -timeout 40m ./...

# gofmt, go vet, generated templ files up to date and committed.
check:
	@list=$$(git ls-files --cached --others --exclude-standard -- '*.go') || exit 1; \
	files=; for f in $$list; do if [ -f "$$f" ]; then files="$$files $$f"; fi; done; \
	if [ -n "$$files" ]; then \
		bad=$$(gofmt -l $$files) || exit 1; \
		if [ -n "$$bad" ]; then \
			echo "gofmt: these files are not formatted (run gofmt -w on them):"; \
			echo "$$bad"; exit 1; \
		fi; \
	fi
	go vet ./...
	@if [ -n "$$(git ls-files --cached --others --exclude-standard -- '*.templ')" ]; then \
		echo "go tool templ generate"; \
		go tool templ generate || exit 1; \
		git diff --exit-code -- '*_templ.go' || { \
			echo "templ: generated files are out of date; run make generate and commit them"; \
			exit 1; }; \
		untracked=$$(git ls-files --others -- '*_templ.go'); \
		if [ -n "$$untracked" ]; then \
			echo "templ: generated files are not committed:"; \
			echo "$$untracked"; exit 1; \
		fi; \
	fi

generate:
	go tool templ generate

bench:
	go test -run '^$$' -bench . -benchmem ./...
