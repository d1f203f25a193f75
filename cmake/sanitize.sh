#!/usr/bin/env bash
# Builds Tessera with ASan + UBSan (TESSERA_SANITIZE=ON) in build-asan/ and runs tests
# under the sanitizers (docs/reliability.md). Run `bash cmake/run.sh build` first on a
# fresh machine (it installs the packages).
#   bash cmake/sanitize.sh loaders  # the input loaders' tests (what .ci/run does)
#   bash cmake/sanitize.sh full     # every test (about 1 h of CPU on 2 cores)
# Environment: TESSERA_ASAN_BUILD (default build-asan), TESSERA_ASAN_JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-loaders}"
build="${TESSERA_ASAN_BUILD:-build-asan}"
jobs="${TESSERA_ASAN_JOBS:-$(nproc)}"

# The loaders: architecture configs, YAML graphs, ONNX import, precision policies,
# experiments, the fuzz regression inputs, and every bad-input class through the CLI
# is too much to build here (it needs the whole simulator), so those run in `full`.
loader_targets=(test_config test_graph test_onnx_import test_onnx_testdata test_precision test_sweep_unit
                test_fuzz_regressions test_onnx_hostile test_checked_math)
loader_labels="^($(IFS='|'; echo "${loader_targets[*]}"))\$"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON "${launcher[@]}" >/dev/null
start=$SECONDS
case "$mode" in
  loaders)
    cmake --build "$build" -j"$jobs" --target "${loader_targets[@]}"
    echo "sanitized build: $((SECONDS - start)) s" >&2
    # Only the executables built above (each case is labelled with its executable).
    ctest --test-dir "$build" --output-on-failure -j"$jobs" --timeout 600 -L "$loader_labels" --no-tests=error
    ;;
  full)
    cmake --build "$build" -j"$jobs"
    echo "sanitized build: $((SECONDS - start)) s" >&2
    ctest --test-dir "$build" --output-on-failure -j"$jobs" --timeout 1200
    ;;
  *) echo "usage: bash cmake/sanitize.sh loaders|full" >&2; exit 2;;
esac
echo "sanitized build + tests ($mode): $((SECONDS - start)) s" >&2
