#!/usr/bin/env bash
# qinfer serve against llama-server on the same machine, same weights, same
# load (bench/serve_bench.mjs at several concurrency levels, interleaved):
#   bench/serve_compare.sh QINFER_MODEL_DIR GGUF [concurrency levels...]
# e.g. with the synthetic 0.6B (qinfer make-test-model --preset qwen3-0.6b,
# converted to Q4_0 GGUF as ../shared/PEERS.md says):
#   LLAMA_SERVER=/path/llama-server bench/serve_compare.sh /tmp/q06b-bf16 /tmp/m-q4_0.gguf 1 8 32
# WEIGHTS (q4) is qinfer's --weights; both use 2 threads, a 16-bit KV cache,
# --parallel / -np equal to the largest level and 1024 positions per sequence.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 gguf=$2; shift 2
levels=("$@"); ((${#levels[@]})) || levels=(1 8 32)
max=${levels[-1]}
QINFER=${QINFER:-build/qinfer}
LLAMA_SERVER=${LLAMA_SERVER:-llama-server}
IN=${IN:-128} OUT=${OUT:-64} THREADS=${THREADS:-2}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
"$QINFER" serve -m "$dir" --weights "${WEIGHTS:-q4}" --kv f16 -t "$THREADS" --parallel "$max" --ctx 1024 \
  --port 18431 2>/tmp/serve_compare_qinfer.log & pids+=($!)
"$LLAMA_SERVER" -m "$gguf" -t "$THREADS" -np "$max" -c $((1024 * max)) --host 127.0.0.1 --port 18432 \
  >/tmp/serve_compare_llama.log 2>&1 & pids+=($!)
for port in 18431 18432; do
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
done
printf '%-12s %5s %9s %11s %9s %9s %9s %9s %9s\n' server conc req/s "out tok/s" "ttft p50" "ttft p99" "tpot p50" "tpot p99" "itl p99"
for c in "${levels[@]}"; do
  n=$((c < 4 ? 8 : 2 * c))
  for s in qinfer:18431 llama-server:18432; do
    name=${s%%:*} port=${s##*:}
    node bench/serve_bench.mjs --url "http://127.0.0.1:$port" --requests "$n" --concurrency "$c" \
      --input-len "$IN" --output-len "$OUT" --json |
      node -e 'const s = JSON.parse(require("fs").readFileSync(0, "utf8")); const f = (x) => x.toFixed(1);
        console.log([process.argv[1].padEnd(12), String(s.concurrency).padStart(5), f(s.request_throughput).padStart(9),
          f(s.output_throughput).padStart(11), f(s.ttft_ms.p50).padStart(9), f(s.ttft_ms.p99).padStart(9),
          f(s.tpot_ms.p50).padStart(9), f(s.tpot_ms.p99).padStart(9), f(s.itl_ms.p99).padStart(9)].join(" ")
          + (s.failed ? `  (${s.failed} failed: ${s.first_failure})` : ""))' "$name"
  done
done
