#!/usr/bin/env bash
# Fuzzes every parser that takes outside input with libFuzzer, in the
# sanitizer build (clang 14, ASan + UBSan: scripts/sanitized_build.sh, the
# build the suite under the sanitizers runs in; BUILD, default build-asan),
# each target seeded from tests/fuzz/corpus/<target>:
#   jinja        a whole chat template (seeded with the real Qwen3 template)
#   request      an HTTP request body through the server's request mapping
#                and the Qwen3 chat template, and the reply splitter; GBNF
#                grammars and regexes (structured outputs) compiled and masked
#   safetensors  a whole .safetensors file
#   tokenizer    text through the real Qwen3 tokenizer
# The Jinja engine gets FUZZ_SECONDS (default 40), the others half of it
# each. A crash, sanitizer report, leak, time-out or out-of-memory fails the
# script and leaves the input in BUILD (crash-*, timeout-*, oom-*).
#   scripts/fuzz.sh            build + 100 s of fuzzing
#   FUZZ_SECONDS=600 scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-asan}
TARGETS=(jinja request safetensors tokenizer)
scripts/sanitized_build.sh "$BUILD" "${TARGETS[@]/%/_fuzz}"
seconds=${FUZZ_SECONDS:-40}
corpora=$PWD/tests/fuzz/corpus
cd "$BUILD"
for t in "${TARGETS[@]}"; do
  corpus=$t-corpus
  mkdir -p "$corpus"
  cp "$corpora/$t"/* "$corpus"/
  budget=$seconds; [ "$t" = jinja ] || budget=$((seconds / 2))
  echo "fuzz: $t for $budget s"
  ./"$t"_fuzz -max_total_time="$budget" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$corpus" 2>&1 | tail -n 8
done
echo "fuzz: no findings"
