#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each one
# for SECONDS (default 60), then prints executions and crashes per target.
#   bash tests/fuzz/run_fuzzers.sh            # 60 s per target
#   bash tests/fuzz/run_fuzzers.sh 600 onnx   # 10 min, the ONNX importer only
# Environment: TESSERA_FUZZ_BUILD (build dir, default build-fuzz), TESSERA_FUZZ_JOBS
# (build jobs, default nproc). A crash, a sanitizer report, a non-InputError exception,
# a hang (> 5 s per input) or > 2 GiB RSS leaves its input in
# $build/fuzz-artifacts/<target>/; replay it with `$build/tests/fuzz/fuzz_<target> FILE`
# and, once fixed, copy it to tests/fuzz/regressions/<target>/ (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(arch_config graph_yaml experiment onnx serve_trace host_config baseline_spec)
build="${TESSERA_FUZZ_BUILD:-build-fuzz}"
jobs="${TESSERA_FUZZ_JOBS:-$(nproc)}"

command -v clang++ >/dev/null || { echo "run_fuzzers.sh: needs clang++ (apt install clang)" >&2; exit 2; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DTESSERA_FUZZ=ON "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")

# Seed corpora from the shipped inputs (and every regression input).
corpus="$build/fuzz-corpus"
seed() {  # seed TARGET FILE...
  local t="$1"; shift
  mkdir -p "$corpus/$t"
  for f in "$@"; do
    [ -f "$f" ] && cp -f "$f" "$corpus/$t/seed-$(echo "$f" | tr '/' '_')"
  done
  return 0
}
seed arch_config configs/*.yaml tests/fuzz/regressions/arch_config/*
seed graph_yaml $(find workloads -name '*.yaml') tests/fuzz/regressions/graph_yaml/*
seed experiment experiments/*.yaml tests/fuzz/regressions/experiment/*
seed serve_trace $(find tests workloads experiments -name '*.csv' -path '*trace*') tests/fuzz/seeds/serve_trace/* \
  tests/fuzz/regressions/serve_trace/*
seed host_config configs/hosts/*.yaml tests/fuzz/regressions/host_config/*
seed baseline_spec configs/baselines/*.yaml tests/fuzz/regressions/baseline_spec/*
if [[ " ${targets[*]} " == *" onnx "* ]]; then
  # ONNX's node test models, and the workload library with its external data redirected
  # to the harness's sparse weights.bin (tests/fuzz/fuzz_entry.cpp).
  seed onnx /usr/share/libonnx-testdata/data/node/*/model.onnx tests/fuzz/regressions/onnx/* tests/fuzz/seeds/onnx/*
  if /usr/bin/python3 -c "import onnx" 2>/dev/null; then
    models="$build/fuzz-models"
    [ -f "$models/.done" ] || {
      /usr/bin/python3 workloads/onnx/generate_models.py --out "$models" mobilenet_v2 lstm_seq2seq gpt2_decode resnet50 bert_base >/dev/null
      touch "$models/.done"
    }
    /usr/bin/python3 - "$models" "$corpus/onnx" <<'PY'
import glob, os, sys
import onnx
src, dst = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(os.path.join(src, "*.onnx"))):
    m = onnx.load(path, load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "weights.bin"
    with open(os.path.join(dst, "seed-workload-" + os.path.basename(path)), "wb") as f:
        f.write(m.SerializeToString())
PY
  fi
fi
# A YAML dictionary: syntax tokens plus every key the shipped files use.
dict="$build/fuzz-yaml.dict"
{
  printf '"%s"\n' ': ' '- ' '[' ']' '{' '}' ', ' '"' "'" '&a ' '*a' '<<: ' '!!str ' '|\x0a' '>\x0a' '#' '---\x0a' '\x0a  ' \
    ' KiB' ' MiB' ' GiB' 'true' 'false' '-1' '0' '1e308' '9223372036854775807' '-9223372036854775808' \
    '18446744073709551615' 'nan' '.inf' 'grid' 'zip' 'list' 'random' \
    '(' ')' '((((' '))))' '**' '//' '%' ' not ' '!' ' and ' ' or ' '${' 'abs(' 'pow(' 'if(' \
    'constraints:' 'derived:' 'expr:' 'arrival_s' 'arrival_s,size' ',' '\x0d' '1e9' '4.9e-324' '16777216' \
    'inf' '-0' '0x1p-1074'
  cat configs/*.yaml configs/hosts/*.yaml configs/baselines/*.yaml experiments/*.yaml $(find workloads -name '*.yaml') | grep -o '[A-Za-z_][A-Za-z0-9_]*:' |
    sort -u | sed 's/.*/"&"/'
} > "$dict"

export TMPDIR="$build/fuzz-tmp"
status=0
summary=()
for t in "${targets[@]}"; do
  art="$build/fuzz-artifacts/$t"
  rm -rf "$art"; mkdir -p "$art" "$TMPDIR"
  log="$build/fuzz-$t.log"
  dict_arg=()
  [ "$t" = onnx ] || dict_arg=(-dict="$dict")
  echo "== fuzz_$t: ${secs} s (log: $log)" >&2
  rc=0
  "$build/tests/fuzz/fuzz_$t" "$corpus/$t" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$art/" "${dict_arg[@]}" >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  found=$(find "$art" -type f | wc -l)
  summary+=("$(printf '%-12s %8ss %12s execs %8s exec/s %6s corpus %3s artifacts (exit %s)' "$t" "$secs" \
    "${execs:-?}" "${rate:-?}" "$(ls "$corpus/$t" | wc -l)" "$found" "$rc")")
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    grep -m1 -A12 -E 'ERROR: |\*\*\* |runtime error' "$log" >&2 || tail -20 "$log" >&2
  fi
done
rm -rf "$TMPDIR"
printf '%s\n' "${summary[@]}"
exit "$status"
