# blobcore — `make demo` builds everything and runs the examples;
# `make test` runs every test suite. See README.md.

CARGO ?= cargo
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
CBINDGEN_VERSION := 0.29.4
CBINDGEN := $(CURDIR)/.tools/bin/cbindgen
# Honours CARGO_TARGET_DIR as cargo does (a make variable here unless the
# environment sets it, so cargo's own default is unchanged).
CARGO_TARGET_DIR ?= target
# The glibc floor of libblob.so and the wheel on x86_64 Linux: both are
# linked by zig against glibc 2.17's symbols (cargo-zigbuild for libblob,
# maturin --zig for the manylinux_2_17 wheel), so they load on RHEL/Rocky
# 8 and 9, Debian 11, Ubuntu 20.04 and newer. FLOOR=0 builds natively
# (against this machine's glibc) instead; elsewhere that is the default.
GLIBC_FLOOR := 2.17
MANYLINUX := manylinux_2_17
FLOOR_TRIPLE := x86_64-unknown-linux-gnu
ifeq ($(shell uname -sm),Linux x86_64)
FLOOR ?= 1
else
FLOOR ?= 0
endif
ifeq ($(FLOOR),1)
LIBDIR := $(CARGO_TARGET_DIR)/$(FLOOR_TRIPLE)/release
WHEEL_FLAGS := --zig --compatibility $(MANYLINUX)
else
LIBDIR := $(CARGO_TARGET_DIR)/release
WHEEL_FLAGS :=
endif
ZIGLANG_VERSION := 0.17.1
ZIGBUILD_VERSION := 0.24.1
ZIG := $(CURDIR)/.tools/bin/zig
ZIGBUILD := $(CURDIR)/.tools/bin/cargo-zigbuild
# zig and cargo-zigbuild come first on PATH for the floor builds.
TOOLS_PATH := PATH=$(CURDIR)/.tools/bin:$$PATH
STAGE := $(CURDIR)/build/stage
CBUILD := $(CURDIR)/build/c
VALGRIND ?= valgrind
PYTHON ?= python3
export PYTHON
VENV := $(CURDIR)/.venv
NEOML_VENV := $(CURDIR)/.venv-neoml
WHEELS := $(CURDIR)/build/wheels

# Mesa's Vulkan drivers (lavapipe) want a private runtime directory.
export XDG_RUNTIME_DIR ?= $(CURDIR)/build/xdg
# The suites that run once per engine: `BLOBCORE_ENGINE=gpu` makes the GPU
# the default engine. The GPU pass needs an adapter (lavapipe on CI, where
# BLOBCORE_REQUIRE_GPU=1 makes a missing one an error); elsewhere it is
# skipped with a message.
ENGINE_SUITES := --test numpy_vectors --test props --test views_buffers --test formats --test bad_input --test concurrency
GPU_CHECK = mkdir -p -m 700 $(XDG_RUNTIME_DIR) && $(CARGO) run -q --release -p blobcore --example gpu_info
define if_gpu
	@if $(GPU_CHECK); then $(1); \
	elif [ -n "$$BLOBCORE_REQUIRE_GPU" ]; then echo "no GPU adapter, but BLOBCORE_REQUIRE_GPU is set" >&2; exit 1; \
	else echo "SKIPPED: $(2) (no GPU adapter; install mesa-vulkan-drivers for lavapipe)"; fi
endef

PHONY_CUDA := cuda-ptx cuda-ptx-check
.PHONY: $(PHONY_CUDA) all build demo demo-py test test-rust test-c test-py test-py-checked test-wheel-pythons wheel header header-check install stage bench bench-c bench-py lint doc-check wheel-check libblob-floor dist test-dist package-check msrv-check clean fuzz tsan asan miri deps deps-check

all: build

# System packages: scripts/deps.sh knows them all and installs only what is
# missing (apt-get as root, else `sudo -n`, else it names the command to
# give an administrator). Each target asks for the groups it uses.
DEPS := bash $(CURDIR)/scripts/deps.sh
deps:
	@$(DEPS)

# Fails when a make target runs a tool that scripts/deps.sh does not install.
deps-check:
	$(PYTHON) scripts/check_deps.py

build:
	@$(DEPS) build
	$(CARGO) build --workspace --release
ifeq ($(FLOOR),1)
	$(MAKE) libblob-floor
endif

# libblob.so and libblob.a against glibc $(GLIBC_FLOOR), checked with objdump.
libblob-floor: $(ZIG) $(ZIGBUILD)
	$(TOOLS_PATH) $(CARGO) zigbuild --release -p blobcore-capi --target $(FLOOR_TRIPLE).$(GLIBC_FLOOR)
	$(PYTHON) scripts/check_glibc_floor.py $(GLIBC_FLOOR) $(LIBDIR)/libblob.so

# zig from PyPI (the ziglang package) in a venv of its own under .tools, so
# that building the C library needs no Python packages beyond it.
$(ZIG):
	@$(DEPS) build python
	rm -rf $(CURDIR)/.tools/zig
	$(PYTHON) -m venv $(CURDIR)/.tools/zig
	$(CURDIR)/.tools/zig/bin/pip install -q ziglang==$(ZIGLANG_VERSION)
	mkdir -p $(CURDIR)/.tools/bin
	printf '#!/bin/sh\nexec "%s" -m ziglang "$$@"\n' "$(CURDIR)/.tools/zig/bin/python" > $@
	chmod +x $@

# cargo-zigbuild from PyPI too (a prebuilt binary, in zig's venv): building
# it with cargo install took CI about three minutes.
$(ZIGBUILD): $(ZIG)
	$(CURDIR)/.tools/zig/bin/pip install -q cargo-zigbuild==$(ZIGBUILD_VERSION)
	ln -sf $(CURDIR)/.tools/zig/bin/cargo-zigbuild $@

demo: build stage
	@$(DEPS) build c python
	$(CARGO) run -q -p blobcore --release --example demo
	cmake -S examples/c -B $(CBUILD) -DCMAKE_PREFIX_PATH=$(STAGE) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(CBUILD) -j2 >/dev/null
	@for ex in quickstart windows merge_split lifo cpp_example; do echo "== $$ex"; $(CBUILD)/$$ex || exit 1; done
	$(MAKE) demo-py

# The Python examples against the freshly built wheel, then a clean
# virtual environment that installs only the wheel (NumPy comes from PyPI).
demo-py: wheel
	@for ex in examples/python/*.py; do echo "== $$ex"; $(VENV)/bin/python $$ex || exit 1; done
	rm -rf build/venv-clean
	$(PYTHON) -m venv build/venv-clean
	build/venv-clean/bin/pip install -q $(WHEELS)/blobcore-*.whl
	cd build && venv-clean/bin/python -c "import blobcore as bc, numpy as np; b = bc.Blob.tensor([2, 3]); b.fill(2); print('clean venv:', bc.__version__, np.asarray(b).sum())"

test: deps deps-check header-check lint doc-check package-check test-rust cuda-ptx-check test-c test-py tsan asan miri

# Optimised code (the property tests run many cases, and the memory test
# checks resident sizes of optimised code), built with overflow checks and
# debug assertions (Cargo.toml's `checked` profile): arithmetic that would
# wrap silently in a release build panics here. The exhaustive tests of
# every float32 pattern are marked ignored when debug assertions are on
# (a debug build would take hours), so they run here with --ignored
# (--workspace, as above and for the GPU engine's suites: one feature
# set, so no second build).
test-rust:
	@$(DEPS) build gpu
	$(CARGO) test --workspace --profile checked
	$(CARGO) test --workspace --lib --profile checked -- --ignored
	$(call if_gpu,BLOBCORE_ENGINE=gpu $(CARGO) test --workspace --profile checked $(ENGINE_SUITES),the Rust suites on the GPU engine)

# C and C++ examples and the error-path tests, through ctest against a staged
# install, then once more under valgrind, with AddressSanitizer, and against
# libblob built with the checked profile. That libblob is the one test-rust's
# build leaves in target/checked/deps (cargo builds the library's cdylib for
# the C API's own tests): a `cargo build -p blobcore-capi` would resolve
# other features and build every crate again (two minutes).
test-c: stage
	@$(DEPS) build c test gpu
	cmake -S examples/c -B $(CBUILD) -DCMAKE_PREFIX_PATH=$(STAGE) -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(CBUILD) -j2
	cd $(CBUILD) && ctest --output-on-failure -LE memcheck
	cd $(CBUILD) && ctest --output-on-failure --no-tests=error -L memcheck
	$(call if_gpu,cd $(CBUILD) && BLOBCORE_ENGINE=gpu ctest --output-on-failure -LE 'memcheck|repeat',the C tests on the GPU engine)
	@if echo 'int main(void) { return 0; }' | $(CC) -x c -fsanitize=address -o $(CBUILD)/asan-probe - >/dev/null 2>&1; then \
	  echo "== the C tests built with AddressSanitizer"; \
	  cmake -S examples/c -B $(CBUILD)-asan -DCMAKE_PREFIX_PATH=$(STAGE) -DCMAKE_BUILD_TYPE=Debug -DBLOB_ASAN=ON >/dev/null && \
	  cmake --build $(CBUILD)-asan -j2 >/dev/null && \
	  cd $(CBUILD)-asan && ctest --output-on-failure -E '^gpu$$'; \
	else echo "SKIPPED: the AddressSanitizer build of the C tests (the compiler cannot -fsanitize=address)"; fi
	@echo "== the C tests against libblob built with overflow checks and debug assertions (Cargo.toml's checked profile)"
	$(CARGO) test -q --workspace --profile checked --no-run
	rm -rf $(CBUILD)/checked-lib && mkdir -p $(CBUILD)/checked-lib && ln -s $(abspath $(CARGO_TARGET_DIR))/checked/deps/libblob.so $(CBUILD)/checked-lib/libblob.so.0
	LD_LIBRARY_PATH=$(CBUILD)/checked-lib ldd $(CBUILD)/bad_input | grep -q 'checked-lib/libblob.so.0'
	@cd $(CBUILD) && LD_LIBRARY_PATH=$(CBUILD)/checked-lib ctest -V -LE memcheck > checked.log 2>&1; rc=$$?; \
	  grep -E "tests passed|tests failed" checked.log; \
	  if grep -q "panicked at" checked.log; then grep -A2 "panicked at" checked.log | head -n 40; exit 1; fi; \
	  if [ $$rc -ne 0 ]; then grep -E "Failed|\*\*\*" checked.log | head -n 40; exit $$rc; fi
	@echo "== pkg-config build of the quickstart against the staged install"
	PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig $(CC) -std=c99 -Wall -Wextra -Werror -pedantic examples/c/quickstart.c \
		$$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --cflags --libs blob) -Wl,-rpath,$(STAGE)/lib -o $(CBUILD)/quickstart_pc
	$(CBUILD)/quickstart_pc

# The CUDA engine's precompiled kernels (blobcore/src/engine/cuda/kernels.ptx):
# kernels.cu compiled for compute 7.0 by NVRTC 12.0, from PyPI's
# nvidia-cuda-nvrtc-cu12 wheel (no CUDA toolkit, no GPU needed). `cuda-ptx`
# rewrites the file; `cuda-ptx-check` (part of `make test`) fails when it
# is not what NVRTC makes of kernels.cu. The example is built as
# `cargo test --workspace --profile checked` (test-rust) builds it, so that
# in `make test` it is already there: `cargo run -p blobcore --release`
# would resolve other features and build every crate once more (3.5 min).
NVRTC_DIR := $(CURDIR)/.tools/nvrtc12
NVRTC_RUN = $(CARGO) build -q --workspace --profile checked --example cuda_ptx && \
	LD_LIBRARY_PATH=$(NVRTC_DIR)/nvidia/cuda_nvrtc/lib $(CARGO_TARGET_DIR)/checked/examples/cuda_ptx
$(NVRTC_DIR)/.ready: $(VENV)/.ready
	rm -rf $(NVRTC_DIR) && mkdir -p $(NVRTC_DIR)
	$(VENV)/bin/pip download -q --no-deps -d $(NVRTC_DIR) "nvidia-cuda-nvrtc-cu12==12.0.*"
	cd $(NVRTC_DIR) && $(VENV)/bin/python -c "import glob, zipfile; zipfile.ZipFile(glob.glob('*.whl')[0]).extractall('.')"
	touch $@

cuda-ptx: $(NVRTC_DIR)/.ready
	$(NVRTC_RUN)

cuda-ptx-check: $(NVRTC_DIR)/.ready
	$(NVRTC_RUN) --check

# The project-local virtual environment with maturin, NumPy and pytest.
$(VENV)/.ready: python/requirements-dev.txt
	@$(DEPS) build python
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r python/requirements-dev.txt
	touch $@

# The real `neoml` package (the oracle of the NeoML archive tests) in its own
# environment: it needs NumPy 1.x and protobuf 3.20, which .venv cannot
# share. When it cannot be installed (no wheel for this Python), its tests
# skip and say why; CI sets BLOBCORE_REQUIRE_NEOML so that they fail instead.
$(NEOML_VENV)/.ready: python/requirements-neoml.txt
	@$(DEPS) build python
	rm -rf $(NEOML_VENV)
	@if $(PYTHON) -m venv $(NEOML_VENV) && $(NEOML_VENV)/bin/pip install -q -r python/requirements-neoml.txt; then \
	  touch $@; \
	else echo "SKIPPED: the neoml package could not be installed into $(NEOML_VENV); its archive tests will skip"; fi

# Builds the abi3 wheel into build/wheels (manylinux_2_17 on x86_64 Linux,
# see GLIBC_FLOOR) and installs it into .venv. maturin links through its own
# zig wrapper, which cargo counts as other flags: in the target directory
# that libblob-floor uses, each build would throw away the other's crates
# (a full rebuild of libblob, minutes, after every wheel), so the wheel
# builds in a directory of its own.
wheel: $(VENV)/.ready $(if $(filter 1,$(FLOOR)),$(ZIG))
	@$(DEPS) build python
	rm -f $(WHEELS)/blobcore-*.whl
	$(TOOLS_PATH) CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/wheel $(VENV)/bin/maturin build --quiet --profile wheel $(WHEEL_FLAGS) -m python/Cargo.toml -o $(WHEELS)
	$(VENV)/bin/pip install -q --force-reinstall --no-deps $(WHEELS)/blobcore-*.whl

# The wheel's platform tag (auditwheel) and its glibc floor (objdump).
wheel-check: wheel
ifeq ($(FLOOR),1)
	$(VENV)/bin/auditwheel show $(WHEELS)/blobcore-*.whl | tr -d '\n' | grep -q 'consistent with the following platform tag: *"$(MANYLINUX)_x86_64"'
	$(PYTHON) scripts/check_glibc_floor.py $(GLIBC_FLOOR) $(WHEELS)/blobcore-*.whl
else
	@echo "SKIPPED: the manylinux check (FLOOR=0: a native wheel)"
endif

# What goes to PyPI, in build/dist: the sdist and the wheel.
DIST := $(CURDIR)/build/dist
dist: wheel
	rm -rf $(DIST)
	mkdir -p $(DIST)
	$(VENV)/bin/maturin sdist -m python/Cargo.toml -o $(DIST)
	cp $(WHEELS)/blobcore-*.whl $(DIST)/

# The sdist (built from source by pip) and the wheel, each installed into a
# clean virtual environment with only the test tools, pass a representative
# part of the Python suite there (the whole suite runs on the wheel in
# test-py). pip builds the sdist in the release target directory that
# `make build` filled, with Cargo.toml's release profile in place of the
# `wheel` profile that pyproject.toml names (fat LTO: the same code,
# linked as one unit): cargo checks every source file the sdist's crates
# name (a file the sdist lacks fails the build) and compiles only what is
# not there yet, 20 seconds instead of four minutes. That the sdist
# defines the profile its users' pip builds with is checked first.
DIST_TESTS := test_sharing.py test_shared_memory.py test_bad_input.py test_numpy_oracle.py test_indexing.py \
	test_properties.py test_dtypes.py test_stubs.py
# The wheel's venv takes an older ml_dtypes, which rounds float64 and
# 64-bit integers into bfloat16 through float32 (twice): blobcore's
# conversions must not depend on it (test_properties.py's round-once tests
# fail there if they do).
OLD_ML_DTYPES := ml_dtypes==0.5.1
test-dist: dist
	@for kind in sdist wheel; do \
	  venv=$(CURDIR)/build/venv-$$kind; rm -rf $$venv; \
	  $(PYTHON) -m venv $$venv || exit 1; \
	  $$venv/bin/pip install -q --upgrade pip || exit 1; \
	  if [ $$kind = sdist ]; then pkg=$$(echo $(DIST)/blobcore-*.tar.gz); else pkg=$$(echo $(DIST)/blobcore-*.whl); fi; \
	  if [ $$kind = sdist ]; then \
	    top=$$(basename $$pkg .tar.gz); \
	    tar -xzOf $$pkg $$top/pyproject.toml | grep -q '^profile = "wheel"' || { echo "the sdist's pyproject.toml does not build with the wheel profile" >&2; exit 1; }; \
	    tar -xzOf $$pkg $$top/Cargo.toml | grep -q '^\[profile\.wheel\]' || { echo "the sdist's Cargo.toml lacks [profile.wheel]" >&2; exit 1; }; \
	  fi; \
	  echo "== $$kind: pip install $$(basename $$pkg) into a clean venv"; \
	  MATURIN_PEP517_ARGS="--profile release" CARGO_TARGET_DIR=$(abspath $(CARGO_TARGET_DIR)) $$venv/bin/pip install -q $$pkg || exit 1; \
	  if [ $$kind = sdist ]; then ml=ml_dtypes; else ml=$(OLD_ML_DTYPES); fi; \
	  $$venv/bin/pip install -q pytest hypothesis $$ml safetensors || exit 1; \
	  (cd python/tests && $$venv/bin/python -m pytest -q -p no:cacheprovider $(DIST_TESTS)) || exit 1; \
	done

# The abi3 wheel on the newer CPythons this machine has (pyenv's: one
# 3.12, 3.13 and 3.14 each, where found), each in a clean venv with only
# the test tools: the DIST_TESTS part of the suite, as test-dist runs it
# on $(PYTHON). Says SKIPPED when there is none. NEWER_PYTHONS="/path/to/
# python3 ..." names the interpreters instead.
PYENV_ROOT ?= $(HOME)/.pyenv
NEWER_PYTHONS ?=
test-wheel-pythons: dist
	@pys="$(NEWER_PYTHONS)"; \
	if [ -z "$$pys" ]; then for v in 3.12 3.13 3.14; do \
	  last=; for p in $(PYENV_ROOT)/versions/$$v.*/bin/python3; do if [ -x "$$p" ]; then last=$$p; fi; done; \
	  if [ -n "$$last" ]; then pys="$$pys $$last"; fi; \
	done; fi; \
	if [ -z "$$pys" ]; then echo "SKIPPED: the wheel on CPython >= 3.12 (none found under $(PYENV_ROOT); set NEWER_PYTHONS)"; fi; \
	for py in $$pys; do \
	  venv=$(CURDIR)/build/venv-$$($$py -c 'import sys; print("py%d%d" % sys.version_info[:2])') || exit 1; rm -rf $$venv; \
	  echo "== wheel: pip install $$(basename $(DIST)/blobcore-*.whl) into a clean venv of $$($$py --version)"; \
	  $$py -m venv $$venv || exit 1; \
	  $$venv/bin/pip install -q --disable-pip-version-check $(DIST)/blobcore-*.whl pytest hypothesis ml_dtypes safetensors || exit 1; \
	  (cd python/tests && $$venv/bin/python -m pytest -q -p no:cacheprovider $(DIST_TESTS)) || exit 1; \
	done

# pytest against the installed wheel (run from python/tests so that the
# source tree's package does not shadow it).
test-py: wheel-check test-dist test-wheel-pythons stage $(NEOML_VENV)/.ready
	cd python/tests && BLOBCORE_LIBBLOB=$(STAGE)/lib/libblob.so BLOBCORE_NEOML_PYTHON=$(NEOML_VENV)/bin/python $(VENV)/bin/python -m pytest -q
	$(MAKE) --no-print-directory test-py-checked

# The Python suite once more, against the extension built with the
# `checked` profile (overflow checks, debug assertions), unpacked into a
# directory that goes first on PYTHONPATH: the installed wheel, like any
# release build, would wrap an overflowing offset silently where this one
# panics. This is also the suite's pass on the GPU engine when there is an
# adapter (the wheel's pass above is the CPU engine's), else a second pass
# on the CPU engine. Its output goes to a log (pytest -s, so that a panic
# the bindings catch and turn into an error still shows): any "panicked
# at" in it fails the run.
CHECKED_PY := $(abspath $(CARGO_TARGET_DIR))/checked/python
CHECKED_ENV := PYTHONPATH=$(CHECKED_PY)/site BLOBCORE_LIBBLOB=$(STAGE)/lib/libblob.so BLOBCORE_NEOML_PYTHON=$(NEOML_VENV)/bin/python
test-py-checked: $(VENV)/.ready $(NEOML_VENV)/.ready stage
	@$(DEPS) build python gpu
	rm -rf $(CHECKED_PY) && mkdir -p $(CHECKED_PY)/site
	$(VENV)/bin/maturin build --quiet --profile checked -m python/Cargo.toml -o $(CHECKED_PY)
	$(VENV)/bin/python -m zipfile -e $(CHECKED_PY)/blobcore-*.whl $(CHECKED_PY)/site
	cd python/tests && $(CHECKED_ENV) $(VENV)/bin/python -c 'import blobcore, sys; assert blobcore.__file__.startswith(sys.argv[1]), blobcore.__file__' $(CHECKED_PY)/site
	@if $(GPU_CHECK) >/dev/null; then engine=gpu; \
	  elif [ -n "$$BLOBCORE_REQUIRE_GPU" ]; then echo "no GPU adapter, but BLOBCORE_REQUIRE_GPU is set" >&2; exit 1; \
	  else engine=cpu; echo "SKIPPED: the Python suite on the GPU engine (no GPU adapter; install mesa-vulkan-drivers for lavapipe)"; fi; \
	  cd python/tests && BLOBCORE_ENGINE=$$engine $(CHECKED_ENV) $(VENV)/bin/python -m pytest -q -s -p no:cacheprovider > $(CHECKED_PY)/pytest.log 2>&1; rc=$$?; \
	  echo "== the Python suite on the $$engine engine against the checked build (log: $(CHECKED_PY)/pytest.log)"; tail -n 1 $(CHECKED_PY)/pytest.log; \
	  if grep -q "panicked at" $(CHECKED_PY)/pytest.log; then grep -A2 "panicked at" $(CHECKED_PY)/pytest.log | head -n 40; exit 1; fi; \
	  if [ $$rc -ne 0 ]; then grep -E "^(FAILED|ERROR)" $(CHECKED_PY)/pytest.log; exit $$rc; fi

$(CBINDGEN):
	@$(DEPS) build
	$(CARGO) install --quiet --locked --root $(CURDIR)/.tools cbindgen --version $(CBINDGEN_VERSION)

header: $(CBINDGEN)
	$(CBINDGEN) -q --config capi/cbindgen.toml --crate blobcore-capi --output include/blob.h capi
	$(CBINDGEN) -q --config capi/cbindgen-dlpack.toml --crate blobcore --output include/blob_dlpack.h blobcore

# Fails when include/blob.h is not what cbindgen generates from capi/.
header-check: $(CBINDGEN)
	$(CBINDGEN) -q --verify --config capi/cbindgen.toml --crate blobcore-capi --output include/blob.h capi
	$(CBINDGEN) -q --verify --config capi/cbindgen-dlpack.toml --crate blobcore --output include/blob_dlpack.h blobcore

install: build
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/lib/cmake/blob
	install -m 644 include/blob.h include/blob.hpp include/blob_dlpack.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(LIBDIR)/libblob.so $(DESTDIR)$(PREFIX)/lib/libblob.so.$(VERSION)
	ln -sf libblob.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libblob.so.0
	ln -sf libblob.so.0 $(DESTDIR)$(PREFIX)/lib/libblob.so
	install -m 644 $(LIBDIR)/libblob.a $(DESTDIR)$(PREFIX)/lib/libblob.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' packaging/blob.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/blob.pc
	install -m 644 packaging/blobConfig.cmake $(DESTDIR)$(PREFIX)/lib/cmake/blob/
	sed -e 's|@VERSION@|$(VERSION)|' packaging/blobConfigVersion.cmake.in > $(DESTDIR)$(PREFIX)/lib/cmake/blob/blobConfigVersion.cmake

# A private install under build/stage that the C examples and tests build against.
stage:
	$(MAKE) install PREFIX=$(STAGE) DESTDIR=

bench:
	@$(DEPS) build gpu
	$(CARGO) bench -p blobcore --bench ops
	$(CARGO) bench -p blobcore --bench formats
	$(CARGO) bench -p blobcore --bench gpu

bench-c: stage
	@$(DEPS) build c
	cmake -S examples/c -B $(CBUILD) -DCMAKE_PREFIX_PATH=$(STAGE) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(CBUILD) -j2 --target call_overhead >/dev/null
	$(CBUILD)/call_overhead

# OpenBLAS's worker threads (started with NumPy) spin after use and take a
# core from both sides on a 2-core VM; nothing timed here calls BLAS.
bench-py: wheel
	OPENBLAS_NUM_THREADS=1 $(VENV)/bin/python bench/python_bench.py
	@# DLPack 1.3's C exchange API, driven from C as a consumer drives it.
	cc -O2 -I$$($(VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['include'])") bench/dlpack_exchange.c \
	  -L$$($(VENV)/bin/python -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))") \
	  -lpython$$($(VENV)/bin/python -c "import sys; print('%d.%d' % sys.version_info[:2])") \
	  -Wl,-rpath,$$($(VENV)/bin/python -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))") -o build/dlpack_exchange
	OPENBLAS_NUM_THREADS=1 PYTHONPATH=$$($(VENV)/bin/python -c "import site; print(site.getsitepackages()[0])") build/dlpack_exchange
	$(VENV)/bin/python bench/weights_bench.py
	$(VENV)/bin/python bench/shared_bench.py

# cargo-fuzz over every target for FUZZ_SECONDS each, starting from the
# seed corpus in fuzz/seeds. Needs a nightly toolchain; skips without one.
# Under AddressSanitizer (cargo-fuzz's default) capi_ops' resident memory
# grows by about 2 GB per 700,000 sequences while its live heap stays
# near 34 MB; built without a sanitizer (`cargo fuzz run -s none`) it
# stays at 58 MB over 1.7 million. Runs of more than about 4 minutes of
# it need a larger FUZZ_RSS_MB.
FUZZ_RSS_MB ?= 2048
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?= caffe caffemodel neoml npy safetensors gguf capi_ops shared_handle
fuzz:
	@if ! $(CARGO) +nightly --version >/dev/null 2>&1; then \
	  echo "make fuzz: skipped: no nightly toolchain (rustup toolchain install nightly)"; exit 0; fi; \
	command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/corpus/$$t && cp fuzz/seeds/$$t/* fuzz/corpus/$$t/ && \
	  $(CARGO) +nightly fuzz run $$t fuzz/corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=$(FUZZ_RSS_MB) -max_len=65536 || exit 1; \
	done

# The Rust concurrency tests under ThreadSanitizer. Needs a nightly
# toolchain with rust-src (std is rebuilt instrumented); skips without one.
# tests/tsan.supp holds the one suppression (triomphe's fence, which
# ThreadSanitizer does not model).
HOST_TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
tsan:
	@if ! $(CARGO) +nightly --version >/dev/null 2>&1; then \
	  echo "make tsan: skipped: no nightly toolchain (rustup toolchain install nightly)"; exit 0; fi; \
	rustup component add rust-src --toolchain nightly >/dev/null 2>&1 || { \
	  echo "make tsan: skipped: needs rust-src for the nightly toolchain, and rustup could not add it"; exit 0; }; \
	RUSTFLAGS="-Zsanitizer=thread" RUSTDOCFLAGS="-Zsanitizer=thread" TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  $(CARGO) +nightly test -Zbuild-std --target $(HOST_TRIPLE) --target-dir target/tsan -p blobcore --test concurrency

# The core's Rust tests under AddressSanitizer: out-of-bounds reads and
# writes and use-after-free in the copy and layout kernels (the AVX ones
# too, which Miri cannot run) and in the file decoders, over the unit
# tests, the property tests (props, blockings), views and buffers, and
# the hostile-file corpus. Blobs of 1 MiB and more live in anonymous maps
# (storage.rs, MAP_BYTES), which ASan does not watch; the suites' blobs
# are mostly smaller. Leaks are left to valgrind and Miri (statics that
# live as long as the process would be reported). Needs a nightly
# toolchain; skips without one.
ASAN_TESTS ?= --lib --test props --test blockings --test views_buffers --test hostile_files
asan:
	@if ! $(CARGO) +nightly --version >/dev/null 2>&1; then \
	  echo "make asan: skipped: no nightly toolchain (rustup toolchain install nightly)"; exit 0; fi; \
	RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" ASAN_OPTIONS="detect_leaks=0:halt_on_error=1" \
	  $(CARGO) +nightly test --target $(HOST_TRIPLE) --target-dir target/asan -p blobcore $(ASAN_TESTS)

# The core's unsafe code under Miri (undefined behaviour: aliasing,
# out-of-bounds and dangling accesses, leaks), on the unit tests of the
# modules that hand out raw pointers or build blobs in place (and the
# values made on first use, published through a raw pointer): DLPack
# exports and imports, element access, views and indexing, casts,
# copies and reorders (the SSE2 tiles: Miri runs no AVX), the decoders.
# The strided engine's tests run serially under Miri but take minutes
# each, so they are left to a run by hand:
#   cargo +nightly miri test -p blobcore --lib -- ops::strided::tests::one_permutation_per_plan
# Then the C API's tests that drive it from Rust as C does, through raw
# pointers only (capi/tests: foreign_memory — wrapped caller memory, held
# buffers, DLPack in both directions with the caller's deleter, byte
# buffers, strings — and a few of op_sequences' random call sequences).
# Stacked Borrows, except the tests that run on the worker pool
# (MIRI_TB_TESTS): Stacked Borrows refuses rayon's crossbeam-epoch (a
# known limitation of that crate), so those run under Tree Borrows, and
# without the leak check (the pool's threads live as long as the
# process, by design). Needs a nightly toolchain; adds miri and rust-src
# to it (rustup does nothing when they are there), and skips when it
# cannot.
MIRI_TESTS ?= first_use:: dlpack lent_back:: export:: element:: raw:: blob_map view:: index:: layout:: shape:: axes:: placement:: overlap:: storage:: dtype:: ops::cast ops::copy ops::reduce ops::reorder ops::self_operand io::gguf io::safetensors io::npy io::neoml io::tests io::ggml_quants::tests::wrong_sizes
# Too slow interpreted (megabytes checked byte by byte), or beyond what
# Miri can run (an allocation of 2^60 bytes). `convert` is left out: it
# has no unsafe code, and its oracles' `powi` is one of the float
# functions whose results Miri perturbs on purpose.
MIRI_SKIP ?= --skip large --skip prefix_reads_equal_whole_parses --skip huge_allocation --skip lazy_zeroed_and_aligned --skip reused_heap_blocks
MIRI_TB_TESTS ?= io::ggml_quants::tests::q8_0_and_q4_0_by_hand
MIRI_CAPI_TESTS ?= --test foreign_memory --test op_sequences
MIRI_FLAGS := -Zmiri-disable-isolation -Zmiri-permissive-provenance
miri:
	@if ! $(CARGO) +nightly --version >/dev/null 2>&1; then \
	  echo "make miri: skipped: no nightly toolchain (rustup toolchain install nightly)"; exit 0; fi; \
	rustup component add miri rust-src --toolchain nightly >/dev/null 2>&1 || { \
	  echo "make miri: skipped: rustup could not add miri to the nightly toolchain"; exit 0; }; \
	PROPTEST_CASES=2 MIRIFLAGS="$(MIRI_FLAGS)" $(CARGO) +nightly miri test -p blobcore --lib -- $(MIRI_SKIP) $(MIRI_TESTS) && \
	PROPTEST_CASES=2 MIRIFLAGS="$(MIRI_FLAGS) -Zmiri-tree-borrows -Zmiri-ignore-leaks" $(CARGO) +nightly miri test -p blobcore --lib -- $(MIRI_TB_TESTS) && \
	MIRIFLAGS="$(MIRI_FLAGS)" $(CARGO) +nightly miri test -p blobcore-capi $(MIRI_CAPI_TESTS)

# Clippy with every warning an error (clippy.toml's msrv is the declared
# rust-version, so newer std items are refused), and rustdoc likewise.
lint:
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy >/dev/null 2>&1 || true
	@if $(CARGO) clippy --version >/dev/null 2>&1; then \
	  $(CARGO) clippy --workspace --all-targets -- -D warnings; \
	else echo "SKIPPED: clippy is not installed and rustup could not add it"; fi

doc-check:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace

# The declared rust-version builds the whole workspace (not part of `make
# test`: it downloads that toolchain).
msrv-check:
	rustup toolchain install $$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml) --profile minimal
	$(CARGO) +$$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml) check --workspace --all-targets --target-dir $(CURDIR)/build/msrv-target

# The crate as crates.io would get it: `cargo package` builds it from the
# packaged files alone (blobcore-capi and the Python crate are not published).
package-check:
	$(CARGO) package -p blobcore --allow-dirty

clean:
	$(CARGO) clean
	rm -rf build
