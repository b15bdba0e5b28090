#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang 14 under ASan + UBSan
# (installing clang and its runtime when missing) and fuzzes every parser
# that takes outside input, each seeded from tests/fuzz/corpus/<target>:
#   jinja        a whole chat template (seeded with the real Qwen3 template)
#   request      an HTTP request body through the server's request mapping
#                and the Qwen3 chat template, and the reply splitter
#   safetensors  a whole .safetensors file
#   tokenizer    text through the real Qwen3 tokenizer
# The Jinja engine gets FUZZ_SECONDS (default 40), the others half of it
# each. The kernels are built for this CPU only (the parsers are what is
# fuzzed; the portable kernels are scripts/test_kernels_portable.sh's). A crash, sanitizer report, leak, time-out or out-of-memory fails the
# script and leaves the input in build-fuzz/ (crash-*, timeout-*, oom-*).
#   scripts/fuzz.sh            build + 100 s of fuzzing
#   FUZZ_SECONDS=600 scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/apt_install.sh fuzz clang-14 libclang-rt-14-dev
# -O1 with line tables, as the sanitizer suite: a third less compile time than
# -O2 -g (344 against ~530 CPU-s) and no fewer executions per second.
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DQINFER_NATIVE=ON -DQINFER_TESTS=OFF -DQINFER_BENCH=OFF -DQINFER_FUZZ=ON \
      "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" >/dev/null
TARGETS=(jinja request safetensors tokenizer)
cmake --build build-fuzz -j"$(nproc)" --target "${TARGETS[@]/%/_fuzz}"
seconds=${FUZZ_SECONDS:-40}
cd build-fuzz
for t in "${TARGETS[@]}"; do
  corpus=$t-corpus
  mkdir -p "$corpus"
  cp ../tests/fuzz/corpus/"$t"/* "$corpus"/
  budget=$seconds; [ "$t" = jinja ] || budget=$((seconds / 2))
  echo "fuzz: $t for $budget s"
  ./"$t"_fuzz -max_total_time="$budget" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$corpus" 2>&1 | tail -n 8
done
echo "fuzz: no findings"
