#!/usr/bin/env bash
# qinfer against llama.cpp and ik_llama.cpp on the synthetic Qwen3 0.6B:
# pp512 and tg128 per weight format, the engines taking turns within each
# round (this machine's speed moves between runs: only figures of one round
# compare). The peers are built beforehand as ../shared/PEERS.md says; either
# may be left out. Prints docs/performance.md's table (cells: round 1 /
# round 2 / ...) and the ratios against each peer per round; every command
# and its raw output stay in WORK/logs.
#
#   bench/compare_peers.sh [--llama-cpp TREE] [--ik-llama-cpp TREE]
#       [--formats "q8 q4 bf16"] [--rounds 2] [--threads 2] [--amx]
#       [--simd TARGET] [--work /tmp/qinfer-peers] [--qinfer build/qinfer]
#       [--converter ../shared/tools/hf_to_gguf.py]
#
# TREE: a peer's source tree with its build in TREE/build (llama-bench,
# llama-quantize). --amx adds a qinfer column with QINFER_AMX=1 (the AMX
# tiles); --simd runs qinfer's kernels of that target (`qinfer --version`).
# qinfer: `bench -p 512 -n 128 --kv f16` (tg128 after the prompt) and
# `-p 16 -n 128` (tg128 at a short context, as llama-bench's tg128);
# the peers: `llama-bench -p 512 -n 128 -r 3 -fa 1` (ik_llama.cpp: -rtr 1).
# The GGUFs are converted from the same checkpoint (Q4_0 with --pure).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
llama="" ik="" formats="q8 q4 bf16" rounds=2 threads=2 amx=0 simd="" work=/tmp/qinfer-peers
qinfer=$root/build/qinfer converter=$root/../shared/tools/hf_to_gguf.py
usage() { sed -n '10,13p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --llama-cpp) llama=$(realpath "$2"); shift ;;
    --ik-llama-cpp) ik=$(realpath "$2"); shift ;;
    --formats) formats=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --threads) threads=$2; shift ;;
    --amx) amx=1 ;;
    --simd) simd=$2; shift ;;
    --work) work=$2; shift ;;
    --qinfer) qinfer=$(realpath "$2"); shift ;;
    --converter) converter=$(realpath "$2"); shift ;;
    *) echo "compare_peers: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
for f in $formats; do
  case $f in q8 | q4 | bf16) ;; *) echo "compare_peers: format '$f' is none of q8 q4 bf16" >&2; exit 2 ;; esac
done
[ -x "$qinfer" ] || { echo "compare_peers: no qinfer binary at $qinfer (build it first)" >&2; exit 1; }
for tree in $llama $ik; do
  [ -x "$tree/build/bin/llama-bench" ] || { echo "compare_peers: no $tree/build/bin/llama-bench" >&2; exit 1; }
done
mkdir -p "$work/logs"
results=$work/results.tsv
: >"$results"

# Logs a command and its output under WORK/logs; prints the output.
run_logged() {
  local log=$work/logs/$1
  shift
  { printf '$'; printf ' %q' "$@"; echo; } >"$log"
  local status=0
  "$@" >>"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    echo "compare_peers: $(basename "$1") failed (exit $status); its log, $log, ends:" >&2
    tail -5 "$log" >&2
    exit 1
  fi
  sed 1d "$log"
}

# The checkpoints: bf16 as generated, q8/q4 quantized by qinfer; their GGUFs.
[ -f "$work/bf16/config.json" ] ||
  run_logged make-model "$qinfer" make-test-model --preset qwen3-0.6b --dtype bf16 --out "$work/bf16" >/dev/null
for f in $formats; do
  [ "$f" = bf16 ] || [ -f "$work/$f/config.json" ] ||
    run_logged "quantize-$f" "$qinfer" quantize -m "$work/bf16" --to "$f" -o "$work/$f" >/dev/null
done
gguf_tree=${llama:-$ik}
if [ -n "$gguf_tree" ]; then
  [ -f "$converter" ] || { echo "compare_peers: no GGUF converter at $converter (--converter)" >&2; exit 1; }
  scripts/apt_install.sh compare_peers python3-numpy
  # Debian's python3, whose numpy that installs (not one that PATH may put first)
  [ -f "$work/m-bf16.gguf" ] || run_logged convert /usr/bin/python3 "$converter" "$work/bf16" --outfile "$work/m-bf16.gguf" \
    --outtype bf16 --llama-cpp "$gguf_tree" >/dev/null
  for f in $formats; do
    [ "$f" = bf16 ] || [ -f "$work/m-${f}_0.gguf" ] || run_logged "gguf-$f" "$gguf_tree/build/bin/llama-quantize" \
      --pure "$work/m-bf16.gguf" "$work/m-${f}_0.gguf" "${f}_0" >/dev/null
  done
fi
gguf() { [ "$1" = bf16 ] && echo "$work/m-bf16.gguf" || echo "$work/m-${1}_0.gguf"; }

# One qinfer bench: "pp_tok_s tg_tok_s" (env assignments before the arguments).
qinfer_bench() {
  local log=$1 env=$2 f=$3 p=$4
  local args=(bench -m "$work/$f" -p "$p" -n 128 -t "$threads" --kv f16 --json)
  [ -n "$simd" ] && args+=(--simd "$simd")
  run_logged "$log" env ${env:+"$env"} "$qinfer" "${args[@]}" |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["pp_tok_s"], j["tg_tok_s"], j["simd_target"])'
}
# One llama-bench: "pp_tok_s tg_tok_s".
peer_bench() {
  local log=$1 tree=$2 f=$3
  shift 3
  run_logged "$log" "$tree/build/bin/llama-bench" -m "$(gguf "$f")" -t "$threads" -p 512 -n 128 -r 3 -fa 1 "$@" -o json |
    python3 -c '
import json, sys
runs = json.load(sys.stdin)
pp = [r["avg_ts"] for r in runs if r["n_prompt"] > 0 and r["n_gen"] == 0]
tg = [r["avg_ts"] for r in runs if r["n_gen"] > 0 and r["n_prompt"] == 0]
print(pp[0], tg[0])'
}
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$results"; }

for round in $(seq 1 "$rounds"); do
  for f in $formats; do
    out=$(qinfer_bench "r$round-qinfer-$f-p512" "" "$f" 512)
    read -r pp tg target <<<"$out"
    record "$round" "$f" qinfer pp512 "$pp"
    record "$round" "$f" qinfer "tg128 after pp512" "$tg"
    out=$(qinfer_bench "r$round-qinfer-$f-p16" "" "$f" 16)
    read -r _ tg _ <<<"$out"
    record "$round" "$f" qinfer tg128 "$tg"
    echo "round $round $f: qinfer ($target) done" >&2
    if [ "$amx" = 1 ]; then
      out=$(qinfer_bench "r$round-qinfer-amx-$f-p512" QINFER_AMX=1 "$f" 512)
      read -r pp _ target <<<"$out"
      record "$round" "$f" "qinfer QINFER_AMX=1 ($target)" pp512 "$pp"
    fi
    if [ -n "$ik" ]; then
      out=$(peer_bench "r$round-ik-$f" "$ik" "$f" -rtr 1)
      read -r pp tg <<<"$out"
      record "$round" "$f" ik_llama.cpp pp512 "$pp"
      record "$round" "$f" ik_llama.cpp tg128 "$tg"
      echo "round $round $f: ik_llama.cpp done" >&2
    fi
    if [ -n "$llama" ]; then
      out=$(peer_bench "r$round-llama-$f" "$llama" "$f")
      read -r pp tg <<<"$out"
      record "$round" "$f" llama.cpp pp512 "$pp"
      record "$round" "$f" llama.cpp tg128 "$tg"
      echo "round $round $f: llama.cpp done" >&2
    fi
  done
done

echo "$("$qinfer" --version | head -2 | tr '\n' ' ')threads $threads, $rounds rounds, $(date -u +%F)"
python3 - "$results" <<'EOF'
import collections, sys
cells = collections.defaultdict(dict)  # (format, engine, metric) -> round -> tok/s
columns, formats = [], []
for line in open(sys.argv[1]):
    rnd, fmt, engine, metric, value = line.rstrip("\n").split("\t")
    cells[(fmt, engine, metric)][int(rnd)] = float(value)
    if (engine, metric) not in columns: columns.append((engine, metric))
    if fmt not in formats: formats.append(fmt)
columns.sort(key=lambda c: (c[1] != "pp512", c[1]))  # prefill columns first
print("\n| weights | " + " | ".join(f"{e} {m}" for e, m in columns) + " |")
print("|---" * (len(columns) + 1) + "|")
for fmt in formats:
    row = [" / ".join(f"{v:.1f}" for _, v in sorted(cells[(fmt, e, m)].items())) or "—" for e, m in columns]
    print(f"| {fmt} | " + " | ".join(row) + " |")
print()
for fmt in formats:
    for peer in ("ik_llama.cpp", "llama.cpp"):
        for metric in ("pp512", "tg128"):
            ours, theirs = cells.get((fmt, "qinfer", metric)), cells.get((fmt, peer, metric))
            if ours and theirs:
                ratios = " / ".join(f"{ours[r] / theirs[r]:.2f}x" for r in sorted(theirs) if r in ours)
                print(f"{fmt} {metric}: qinfer against {peer} {ratios}")
EOF
