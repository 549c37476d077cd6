# The two commands of the README, plus the checks CI runs. Everything goes through cargo; the
# C demo is compiled against the header and the shared library cargo just built.
CC ?= cc
RELEASE := target/release

.PHONY: demo test test-python check bench bench-smoke header-drift data-check go-test go-bench \
	julia-proxy-test julia-test self-contained

# Build the library and run the C tour of the documented examples.
demo:
	cargo build --release
	$(CC) -std=c11 -Wall -Wextra -Werror -Iinclude examples/tour.c -L$(RELEASE) -lbroadcast \
		-Wl,-rpath,'$$ORIGIN' -o $(RELEASE)/tour
	$(RELEASE)/tour

# Every test: Rust unit and integration tests (oracle conformance, property, C suite, reliability,
# bounded fuzzing), then the C suite under valgrind and under AddressSanitizer/UBSan.
test: data-check
	cargo test
	bash scripts/sanitizers.sh

# DLPack with a real producer and consumer: NumPy, through ctypes (tests/python). Needs a Python
# with NumPy: PYTHON=path/to/python (.ci/run makes a virtual environment for it).
PYTHON ?= python3
test-python:
	cargo build
	BC_LIB=$${CARGO_TARGET_DIR:-target}/debug/libbroadcast.so $(PYTHON) -m unittest discover -s tests/python -v

# Formatting, lints, the generated header matching the code, and no reference outside the repo.
check: header-drift self-contained
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

header-drift:
	cargo build
	git diff --exit-code -- include/ || { echo "include/broadcast.h is out of date: commit the regenerated header"; exit 1; }

bench:
	cargo run --release -p bench-compare

bench-smoke:
	cargo run --release -p bench-compare -- --smoke

# The conformance data is fixed: it must stay byte-identical to what PyTorch generated.
data-check:
	cd tests/data/pytorch && sha256sum --quiet -c SHA256SUMS

# The Go package (bindings/go) against the release build: vet, tests, -race, cgocheck, bcdebug.
go-test:
	cargo build --release
	bash scripts/go_test.sh

# Go package against C, per call (tiny and large additions), medians of interleaved rounds.
go-bench:
	cargo build --release
	bash scripts/go_bench.sh

# The Julia package's central step (reversed sizes and strides) through the C API from Python
# ctypes, against a reference of Julia's broadcasting rule: runs without Julia.
julia-proxy-test:
	cargo build --release
	python3 bindings/julia/test/colmajor_proxy.py target/release/libbroadcast.so

# The Julia package's own tests; they need julia on the PATH, and fail when it is missing.
julia-test:
	cargo build --release
	@command -v julia >/dev/null || { echo "julia-test: julia is not on the PATH: the Julia tests cannot run"; exit 2; }
	LIBBROADCAST_PATH=$(CURDIR)/target/release/libbroadcast.so julia --threads=4 --project=bindings/julia bindings/julia/test/runtests.jl

# The repository stands alone: nothing it ships, documents or tests points at a folder beside it.
self-contained:
	@if grep -rn "shared/" README.md docs/ include/ examples/ src/ c_tests/ tests/ fuzz/ scripts/ bindings/; then \
		echo "the lines above refer to a folder outside the repository"; exit 1; fi
