# blobcore — `make demo` builds everything and runs the examples;
# `make test` runs every test suite. See README.md.

CARGO ?= cargo
PREFIX ?= /usr/local

.PHONY: all build demo test test-rust bench clean lint

all: build

build:
	$(CARGO) build --workspace --release

demo: build
	$(CARGO) run -q -p blobcore --release --example demo

test: test-rust

# Release mode: the property tests run many cases, and the memory test
# checks resident sizes of optimised code.
test-rust:
	$(CARGO) test --workspace --release

bench:
	$(CARGO) bench -p blobcore --bench ops

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
