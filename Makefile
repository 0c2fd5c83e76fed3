# unhold: `make test` is what CI runs (through .ci/run).

.PHONY: build run test generate bench

build:
	go build -o bin/unhold ./cmd/unhold

# Serves the dashboard with demo data on SQLite (unhold.db in this directory).
run:
	go run ./cmd/unhold serve --demo

# gofmt, go vet, generated templ files up to date and committed, then tests.
test:
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
	go test -race -count=1 -timeout 40m ./...

generate:
	go tool templ generate

bench:
	go test -run '^$$' -bench . -benchmem ./...
