# inferd: `make run` serves the example models; `make test` runs every test.
# Both install what they need first (Debian 12, as root).

BUILD_DIR ?= build
ASAN_DIR ?= build-asan
FUZZ_DIR ?= build-fuzz
TSAN_DIR ?= build-tsan
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache: paths relative to the checkout, so that a fresh clone (CI) reuses
# the objects of an earlier one.
export CCACHE_BASEDIR := $(CURDIR)
# The sanitizer and fuzz builds: -O1 -g1 (line tables for the reports'
# stack traces, no variable info) compiles in about half the time of
# RelWithDebInfo's -O2 -g (Beast's HTTP server: 94 s against 220 s under
# ASan), which keeps a cold `make test` within CI's budget.
SANITIZER_BUILD = -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG' \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG'

.PHONY: all deps build install image models run test lint test-cluster test-asan test-tsan fuzz format clean

all: build

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS)

# What a package ships (programs, backends, headers, the client library),
# under PREFIX; inferd finds its backends relative to itself.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# OCI images of inferd, infer-gateway and inferd-discovery in
# $(BUILD_DIR)/images/ (docs/images.md): Debian 12 packages (mmdebstrap, from
# the host's apt mirror; the root filesystem is cached in
# /var/cache/inferd/images) and this release build, assembled with buildah.
# IMAGE_VARIANTS=full and/or cuda add inferd-full (every backend, with libtorch) / inferd-cuda.
IMAGE_VARIANTS ?=
image: build
	IMAGE_VARIANTS='$(IMAGE_VARIANTS)' ./scripts/build-images.sh $(BUILD_DIR)

models: deps
	./examples/make_models.sh

run: build models
	@echo ""
	@echo "inferd is starting: HTTP :8000, gRPC :8001, Prometheus metrics :8002."
	@echo "Status page: open http://localhost:8000/ in a browser."
	@echo "Try, from another terminal:"
	@echo "  curl localhost:8000/v2/health/ready"
	@echo "  curl localhost:8000/v2/models/simple"
	@echo "  curl -X POST localhost:8000/v2/models/identity/infer \\"
	@echo "       -d '{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[3],\"datatype\":\"FP32\",\"data\":[1,2,3]}]}'"
	@echo "Stop with Ctrl-C."
	@echo ""
	$(BUILD_DIR)/bin/inferd --model-repository=examples/models --http-port=8000 \
	  --grpc-port=8001 --metrics-port=8002

# Every test; clang-tidy and the thread-safety analysis; every unit and
# end-to-end test again under ASan+UBSan; then each fuzz target for
# FUZZ_SECONDS (60 s; two at a time). The images are built first, for their
# smoke test (cluster_image_smoke).
test: build models image
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)
	$(MAKE) lint
	$(MAKE) test-asan
	$(MAKE) fuzz

# clang-tidy (.clang-tidy) and clang's -Wthread-safety over our sources;
# files unchanged since they last passed are skipped (scripts/lint.sh).
lint: build
	./scripts/lint.sh $(BUILD_DIR)

# The deployment checks and the multi-host test alone (also part of `make test`).
test-cluster: build models image
	ctest --test-dir $(BUILD_DIR) --output-on-failure -R '^cluster_'

# Not under ASan: the format check (nothing to instrument) and the multi-host
# tests, whose assertions are balancer timing and throughput under load
# (docs/security.md); the discovery binary runs under ASan in the e2e tests.
# The image smoke test checks the images of the release build (`make image`),
# not anything of the sanitizer build.
ASAN_SKIP = '^(clang_format|cluster_multi_host|cluster_discovery|cluster_image_smoke)$$'
# intercept_tls_get_addr=0: GCC 12's sanitizer runtime takes a dynamic TLS
# block whose address is 16 bytes past a page boundary for glibc 2.19's
# layout and reads a bogus range from the words before it; LeakSanitizer's
# tracer then dies at exit ("Tracer caught signal 11", "LeakSanitizer has
# encountered a fatal error"), with no leak. The blocks are still scanned:
# glibc mallocs them and they are reachable from each thread's static TLS.
test-asan: deps models
	cmake -S . -B $(ASAN_DIR) -G Ninja $(SANITIZER_BUILD) -DINFERD_SANITIZE=ON
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
	  ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS) -E $(ASAN_SKIP)

# libFuzzer targets (clang, ASan+UBSan), each run for FUZZ_SECONDS from its
# seed corpus (fuzz/corpus/), $(JOBS) at a time. `make test` ends with it.
fuzz: deps
	cmake -S . -B $(FUZZ_DIR) -G Ninja $(SANITIZER_BUILD) -DCMAKE_CXX_COMPILER=clang++ \
	  -DINFERD_FUZZ=ON
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_targets
	FUZZ_SECONDS=$(FUZZ_SECONDS) ctest --test-dir $(FUZZ_DIR) --output-on-failure -j $(JOBS) \
	  -R '^fuzz_'

# ThreadSanitizer: the scheduler, front-end, batcher and discovery tests (unit tests, and the
# gRPC C++ and Python end-to-end tests against the TSan-built inferd, which
# halts on a race).
TSAN_TESTS = 'discovery_(unit|ads|sources)[.]|batcher_|Scheduler|Batch|Sequence|Ensemble|ResponseOrder|PreserveOrdering|InflightTracker|InferCodec|Compression|Grpc|grpc_|HttpStream|GenerateStreamSink|e2e_test_(http_infer|http_errors|http_api|limits|scheduling|shared_memory|ensemble|generate|batcher)$$'
# 20 MiB each way through gRPC is a size test, not a concurrency one: under
# TSan's instrumented copies it runs past its 180 s timeout (ASan covers it).
TSAN_SKIP = 'LargeMessagesBeyondGrpcDefaultLimit'
test-tsan: deps models
	cmake -S . -B $(TSAN_DIR) -G Ninja $(SANITIZER_BUILD) -DINFERD_TSAN=ON
	cmake --build $(TSAN_DIR) -j $(JOBS) --target unit_tests grpc_unit_tests grpc_e2e_tests inferd http_generate_tests \
	  discovery_ads_tests discovery_unit_tests discovery_sources_tests \
	  inferd_backend_identity batcher_unit_tests infer-batcher
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/scripts/tsan.supp" \
	  ctest --test-dir $(TSAN_DIR) --output-on-failure -j $(JOBS) -R $(TSAN_TESTS) -E $(TSAN_SKIP)

# C and C++ sources only: CMake files are not clang-format's to touch.
format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR) $(TSAN_DIR)
