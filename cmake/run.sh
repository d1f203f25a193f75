#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine: installs what is missing,
# builds, then runs the main job or the whole test suite.
#   bash cmake/run.sh main   # TPU v1 on the six TPU-paper apps -> out/tpu-v1/ (builds only build/tessera)
#   bash cmake/run.sh test   # unit + integration tests (ctest) and Python tests (pytest)
#   bash cmake/run.sh build  # install + build only
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
case "$mode" in main|test|build) ;; *) echo "usage: bash cmake/run.sh main|test|build" >&2; exit 2;; esac

# Debian packages the project needs (build, tests, analysis).
packages=(build-essential cmake ninja-build pkg-config libsystemc-dev libboost-dev libyaml-cpp-dev
          libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libboost-mpi-dev openmpi-bin
          libopenblas-dev libbenchmark-dev libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-onnx
          python3-matplotlib python3-numpy python3-pytest python3-pandas python3-yaml python3-nbclient python3-ipykernel)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [ "$mode" = main ]; then
  # The main job runs only the executable on the YAML apps; the tests, benchmarks, fuzz
  # targets and generated ONNX workloads are built by `test` and `build`.
  cmake --build build -j"$(nproc)" --target tessera
else
  cmake --build build -j"$(nproc)"
fi

case "$mode" in
  build) ;;
  main)
    out=out/tpu-v1
    mkdir -p "$out"
    # Each app next to the paper's CPU and GPU (Haswell, K80) and a modern pair (Xeon 8480, H100).
    baselines=haswell-e5-2699v3,k80,xeon-8480,h100-sxm
    for app in mlp0 mlp1 lstm0 lstm1 cnn0 cnn1; do
      build/tessera run --arch configs/tpu-v1.yaml --workload "workloads/tpu/$app.yaml" --out "$out/$app" \
        --baseline "$baselines"
    done
    /usr/bin/python3 analysis/tabulate.py "$out"/*/report.json --out "$out/apps.md"
    echo "six-app table: $out/apps.md"
    /usr/bin/python3 analysis/plot_roofline.py "$out"/*/report.json --out "$out/roofline" \
      --title "Six TPU-paper apps: TPU v1 vs Haswell, K80, Xeon 8480, H100"
    /usr/bin/python3 analysis/plot_roofline.py "$out"/*/report.json --out "$out/roofline-panels" --panels
    echo "roofline: $out/roofline.pdf $out/roofline.png (one panel per platform: $out/roofline-panels.*)"
    ;;
  test)
    ctest --test-dir build --output-on-failure -j"$(nproc)"
    /usr/bin/python3 -m pytest -q -p no:cacheprovider analysis workloads python bench
    ;;
esac
