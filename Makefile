# fabriclab: `make run` and `make test` each install what is missing (Debian packages,
# through scripts/install-deps.sh), build, and then run the main job or the tests.
.PHONY: all deps build run test test-asan fuzz bench format clean

all: build

deps:
	./scripts/install-deps.sh

build: deps
	cmake --preset release
	cmake --build --preset release

# The main job on its shipped default: the training experiment (64 GPUs on a 4:1
# leaf-spine; the planner's allreduce algorithms, DCQCN or none, counters for every
# gradient bucket or one, stall or fallback); report and plots in ./results/.
run: build
	./build/release/fabriclab experiment training --out results

test: build
	ctest --preset release

# The same suite under address and undefined-behaviour sanitizers (clang++; the build also
# makes the fuzz targets, so that `make fuzz` after it builds nothing).
test-asan: deps
	cmake --preset asan
	cmake --build --preset asan
	ctest --preset asan

# Every parser under libFuzzer (the asan build; corpora in build/fuzz), FUZZ_SECONDS each (60);
# fails naming the target and the input on any finding (scripts/fuzz.sh, fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	./scripts/fuzz.sh $(FUZZ_SECONDS)

bench: build
	./build/release/bench/event_queue_benchmark
	./build/release/bench/fabric_scale fat_tree_128
	./build/release/bench/fabric_scale leaf_spine_1024
	./build/release/bench/fabric_scale fat_tree_128 1ms 2
	./build/release/bench/fabric_scale leaf_spine_1024 1ms 2
	./build/release/bench/fabric_scale leaf_spine:4096 100us
	./build/release/bench/fabric_scale leaf_spine:8192 100us
	./build/release/bench/fabric_scale leaf_spine:16384 100us
	./build/release/bench/fabric_scale fat_tree:16 100us
	./bench/instructions_per_hop.sh leaf_spine:1024 50us
	./bench/misses_per_hop.sh leaf_spine:8192 10us 20us
	./bench/process_start.sh
	./build/release/bench/offload_benchmark
	./bench/counters_cli.sh 1024
	./bench/exec_times.sh 4 1024 30

# Rewrites the C++ of FORMAT_DIRS in place with .clang-format (tests/format_test.sh checks
# the same folders).
FORMAT_DIRS := src tests bench fuzz
format: deps
	find $(FORMAT_DIRS) -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cpp' \) -print0 | xargs -0 clang-format -i

clean:
	rm -rf build
