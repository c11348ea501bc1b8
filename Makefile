# Shortcuts for developers; the scripts are the source of truth and need no make.
.PHONY: run test generate check-generated lint bench tools

run:
	go run ./cmd/agentruntime dev

test:
	./scripts/test

generate:
	./scripts/generate

check-generated:
	./scripts/check-generated

lint:
	./scripts/tools && .bin/buf lint

bench:
	./scripts/bench

tools:
	./scripts/tools
