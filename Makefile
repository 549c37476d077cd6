# The two commands of the README, plus the checks CI runs and the install. Everything goes through
# cargo; the C demo is compiled against the header and the shared library cargo just built.
CC ?= cc
RELEASE := target/release

.PHONY: demo test prereqs generate test-python check bench bench-smoke header-drift data-check go-test go-env go-bench \
	julia-proxy-test julia-test julia self-contained release-lib install install-files uninstall \
	install-check size-check fuzz test-release-expr

# Build the library and run the C tour of the documented examples.
demo:
	@bash scripts/prereqs.sh demo
	cargo build --release
	$(CC) -std=c11 -Wall -Wextra -Werror -Iinclude examples/tour.c -L$(RELEASE) -lbroadcast \
		-Wl,-rpath,'$$ORIGIN' -o $(RELEASE)/tour
	$(RELEASE)/tour

# Every test, each step stopping the run when it fails: the data check, Rust unit and integration
# tests (oracle conformance, property, C suite, reliability, bounded fuzzing), the C suite under
# valgrind and under AddressSanitizer/UBSan, DLPack with NumPy, the Go package, the Julia package
# (its own tests when julia is installed, the column-major proxy always), the static checks, the
# install check, the benchmark's verification of every case (a short smoke run), and the fused
# expressions' tests in a release build.
test: prereqs data-check
	@date -u +'== %T cargo test'
	BC_FUZZ_SECONDS=20 cargo test
	@date -u +'== %T sanitizers'
	bash scripts/sanitizers.sh
	@date -u +'== %T the rest'
	$(MAKE) test-python go-test julia check install-check bench-smoke test-release-expr
	@date -u +'== %T make test done'

# The fused expressions' tests built with optimisation too (after bench-smoke's release build,
# only this test binary is compiled: about a minute): release codegen is where a fused loop
# may differ from the kernels' (a NaN's sign and payload, which the tests allow, and nothing
# else, which they check).
test-release-expr:
	cargo test --release --test expr

# The C-API fuzzer (fuzz/README.md) for an hour instead of `make test`'s 20 seconds: random and
# mutated programs from a clock seed (a debug build: overflow checks stay on), the per-family call
# counts printed at the end. FUZZ_SECONDS may set another length.
FUZZ_SECONDS ?= 3600
fuzz:
	BC_FUZZ_SECONDS=$(FUZZ_SECONDS) cargo test --test fuzz_api random_programs -- --nocapture

# DLPack with a real producer and consumer: NumPy, through ctypes (tests/python). PYTHON may name
# a Python with NumPy; by default a virtual environment in target/ gets NumPy from PyPI.
VENV := target/venv
PYTHON ?= $(VENV)/bin/python
test-python: $(if $(filter $(VENV)/bin/python,$(PYTHON)),$(VENV)/numpy-installed)
	cargo build
	BC_LIB=$${CARGO_TARGET_DIR:-target}/debug/libbroadcast.so $(PYTHON) -m unittest discover -s tests/python -v

$(VENV)/numpy-installed:
	python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check numpy
	touch $@

# Formatting, lints, the generated header matching the code and docs/api.md matching the header,
# no reference outside the repo, the stated Rust minimum true for the lockfile, the C ABI only
# grown since the headers kept in abi/, the installed library within its size budget, and the
# headers clean under clang's -Wdocumentation (skipped, saying so, without clang++), and every C
# function used by the C++ header or listed with the reason it is not.
check: header-drift self-contained size-check
	bash scripts/header_doc_check.sh
	python3 scripts/cpp_coverage.py
	python3 scripts/msrv_check.py
	python3 scripts/gen_ops.py --check
	python3 scripts/gen_api_doc.py --check
	python3 scripts/gen_codes.py --check
	python3 scripts/abi_check.py $${CARGO_TARGET_DIR:-target}/debug/libbroadcast.so
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

# The release shared library, stripped as `make install` strips it, against its budget in bytes
# (scripts/size_check.sh says how it was chosen).
size-check:
	cargo build --release --lib
	bash scripts/size_check.sh

# Everything generated, in order: from the operation table, the C API's codes and named exports
# and the C++ operation list; then the header (cargo build); from the header, the rendered API
# reference and the Julia package's codes.
generate:
	python3 scripts/gen_ops.py
	cargo build
	python3 scripts/gen_api_doc.py
	python3 scripts/gen_codes.py

header-drift:
	cargo build
	git diff --exit-code -- include/ || { echo "include/broadcast.h is out of date: commit the regenerated header"; exit 1; }

bench:
	cargo run --release -p bench-compare

# The benchmark's own check: every smoke case's results verified and every measurement run once,
# with NumPy from the test environment's venv when make test made one.
bench-smoke:
	$(if $(wildcard $(VENV)/bin/python),PYTHON=$(CURDIR)/$(VENV)/bin/python) cargo run --release -p bench-compare -- --smoke

# Every tool `make test` needs, named at once before anything is built.
prereqs:
	@bash scripts/prereqs.sh test

# The conformance data is fixed: it must stay byte-identical to what PyTorch generated.
data-check:
	cd tests/data/pytorch && sha256sum --quiet -c SHA256SUMS

# The Go package (bindings/go) against the release build: vet, tests, -race, cgocheck, bcdebug.
go-test:
	cargo build --release
	bash scripts/go_test.sh

# The release library and a pkg-config file for it, target/pkgconfig/broadcast-uninstalled.pc, so
# that a Go module can build against this checkout (the README's Go quick start).
go-env:
	cargo build --release
	@bash -c 'source scripts/go_env.sh && echo "wrote $$pc/broadcast-uninstalled.pc: PKG_CONFIG_PATH=$$pc"'

# Go package against C, per call (tiny and large additions), medians of interleaved rounds.
go-bench:
	cargo build --release
	bash scripts/go_bench.sh

# The Julia package's central step (reversed sizes and strides) and its other C calls through the
# C API from Python ctypes, against a reference of Julia's broadcasting rule (colmajor_proxy.py:
# operations, reductions, indexing; api_proxy.py: constructors, views, shapes, errors, DLPack,
# fused expressions, settings); then its symbols (each one exported) and its coverage of the C
# API (each function wrapped or listed with a reason): runs without Julia.
julia-proxy-test:
	cargo build --release
	python3 bindings/julia/test/colmajor_proxy.py target/release/libbroadcast.so
	python3 bindings/julia/test/api_proxy.py target/release/libbroadcast.so
	python3 bindings/julia/test/symbols_check.py bindings/julia/src/LibBroadcast.jl target/release/libbroadcast.so

# The Julia package's own tests; they need julia on the PATH, and fail when it is missing.
julia-test:
	cargo build --release
	@command -v julia >/dev/null || { echo "julia-test: julia is not on the PATH: the Julia tests cannot run"; exit 2; }
	LIBBROADCAST_PATH=$(CURDIR)/target/release/libbroadcast.so julia --threads=4 --project=bindings/julia bindings/julia/test/runtests.jl

# Julia: the proxy test always; the package's own tests when julia is installed, and otherwise
# a notice that they did not run (they are not counted as passed).
julia: julia-proxy-test
	@if command -v julia >/dev/null; then $(MAKE) julia-test; else \
		echo "Julia package tests: NOT RUN: julia is not installed on this machine (only the proxy test above ran)"; fi

# The repository stands alone: nothing it ships, documents or tests points at a folder beside it.
# (Codes written as numbers, or a named code used as the last one, are found by a test of their
# own, tests/literal_codes.rs, which `cargo test` runs.)
self-contained:
	@if grep -rn "shared/" README.md docs/ include/ examples/ src/ c_tests/ tests/ fuzz/ scripts/ bindings/; then \
		echo "the lines above refer to a folder outside the repository"; exit 1; fi
	@if grep -rnE "[Ii]ssue #?[0-9]" src/ include/ examples/ c_tests/ tests/*.rs testkit/ fuzz/*.rs \
		scripts/ bindings/ benches/ tools/ build.rs Makefile; then \
		echo "the lines above cite an issue number: say in words what the code does and why"; exit 1; fi

# ---------------------------------------------------------------------------------------------
# Install: `make install PREFIX=/usr/local` (DESTDIR stages it elsewhere, as packagers do), and
# `make uninstall` with the same variables removes exactly the files it put there.
PREFIX ?= /usr/local
DESTDIR ?=
STRIP ?= strip
LIBDIR = $(PREFIX)/lib
INCLUDEDIR = $(PREFIX)/include
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
MAJOR := $(firstword $(subst ., ,$(VERSION)))

ifeq ($(shell uname -s),Darwin)
SHARED_BUILT := libbroadcast.dylib
SHARED_REAL := libbroadcast.$(VERSION).dylib
SHARED_SONAME := libbroadcast.$(MAJOR).dylib
SHARED_SONAME_RECORDED := @rpath/$(SHARED_SONAME)
SHARED_DEV := libbroadcast.dylib
# ld64 has no -Bstatic/-Bdynamic.
LIBS_PRIVATE_PREFIX :=
else
SHARED_BUILT := libbroadcast.so
SHARED_REAL := libbroadcast.so.$(VERSION)
SHARED_SONAME := libbroadcast.so.$(MAJOR)
SHARED_SONAME_RECORDED := $(SHARED_SONAME)
SHARED_DEV := libbroadcast.so
# A static link selects the archive with -Wl,-Bstatic in front of the pkg-config flags; the
# system libraries after it are linked as usual again.
LIBS_PRIVATE_PREFIX := -Wl,-Bdynamic
endif

INSTALLED := $(LIBDIR)/$(SHARED_REAL) $(LIBDIR)/$(SHARED_SONAME) $(LIBDIR)/$(SHARED_DEV) \
	$(LIBDIR)/libbroadcast.a $(INCLUDEDIR)/broadcast.h $(INCLUDEDIR)/broadcast.hpp \
	$(LIBDIR)/pkgconfig/broadcast.pc \
	$(LIBDIR)/cmake/broadcast/broadcastConfig.cmake \
	$(LIBDIR)/cmake/broadcast/broadcastConfigVersion.cmake

# The release libraries, and the system libraries a static link needs: rustc prints those
# (native-static-libs) when it builds a static library and asked to. That second build, of the
# static library alone, is a separate unit for cargo (the first stays valid), and cargo replays
# rustc's note when nothing changed, so the list always comes from the library being installed.
release-lib:
	cargo build --release --lib
	cargo rustc --release --lib --crate-type staticlib -- --print native-static-libs \
		2> $(RELEASE)/staticlib.log; st=$$?; cat $(RELEASE)/staticlib.log; exit $$st
	sed -n 's/^note: native-static-libs: //p' $(RELEASE)/staticlib.log | tail -n 1 \
		> $(RELEASE)/native-static-libs
	@test -s $(RELEASE)/native-static-libs || { echo "rustc printed no native-static-libs"; exit 1; }

install: release-lib
	@$(MAKE) --no-print-directory install-files

# The files of a release-lib build, without building (so that `sudo make install-files` does not
# run cargo as root). The release profile keeps debug info (for profiling); the installed
# libraries carry none.
install-files:
	@test -s $(RELEASE)/native-static-libs || { echo "nothing built to install: make release-lib first"; exit 1; }
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake/broadcast \
		$(DESTDIR)$(INCLUDEDIR)
	install -m 755 $(RELEASE)/$(SHARED_BUILT) $(DESTDIR)$(LIBDIR)/$(SHARED_REAL)
	install -m 644 $(RELEASE)/libbroadcast.a $(DESTDIR)$(LIBDIR)/libbroadcast.a
	$(STRIP) -S $(DESTDIR)$(LIBDIR)/$(SHARED_REAL) $(DESTDIR)$(LIBDIR)/libbroadcast.a
	ln -sf $(SHARED_REAL) $(DESTDIR)$(LIBDIR)/$(SHARED_SONAME)
	ln -sf $(SHARED_REAL) $(DESTDIR)$(LIBDIR)/$(SHARED_DEV)
	install -m 644 include/broadcast.h include/broadcast.hpp $(DESTDIR)$(INCLUDEDIR)/
	libs="$$(cat $(RELEASE)/native-static-libs)"; \
	cmake_libs="$$(echo $$libs | sed 's/ -framework /;-framework;/g; s/ /;/g; s/;-framework;/;-framework /g')"; \
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
		-e "s|@LIBS_PRIVATE@|$(LIBS_PRIVATE_PREFIX) $$libs|" \
		packaging/broadcast.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/broadcast.pc && \
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@SHARED_REAL@|$(SHARED_REAL)|g' \
		-e 's|@SHARED_SONAME@|$(SHARED_SONAME)|g' \
		-e 's|@SHARED_SONAME_RECORDED@|$(SHARED_SONAME_RECORDED)|g' \
		-e "s|@NATIVE_LIBS_CMAKE@|$$cmake_libs|" \
		packaging/broadcastConfig.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/broadcast/broadcastConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@MAJOR@|$(MAJOR)|g' \
		-e 's|@SHARED_SONAME@|$(SHARED_SONAME)|g' \
		-e "s|@SIZEOF_VOID_P@|$$(($$(getconf LONG_BIT) / 8))|" \
		packaging/broadcastConfigVersion.cmake.in \
		> $(DESTDIR)$(LIBDIR)/cmake/broadcast/broadcastConfigVersion.cmake

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	rmdir $(DESTDIR)$(LIBDIR)/cmake/broadcast 2>/dev/null || true

# Install into a temporary prefix and build and run programs against it, as a user would:
# pkg-config (shared and static) and CMake (shared and static), from outside the repository.
install-check:
	bash scripts/install_check.sh
