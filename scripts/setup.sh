#!/usr/bin/env bash
# Installs what is missing (Debian/Ubuntu), builds qinfer into build/, then runs
# the main job: text generation with Qwen/Qwen3-0.6B when it is in the Hugging
# Face cache, otherwise with the small random-weight checkpoint in the repo.
#   scripts/setup.sh            install + build + demo
#   scripts/setup.sh --no-run   install + build only (CI)
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config git nlohmann-json3-dev libhwy-dev libonig-dev libutf8proc-dev libicu-dev
      libcli11-dev libcpp-httplib-dev libgtest-dev libgmock-dev libbenchmark-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq || true
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

[ "${1:-}" = "--no-run" ] && exit 0

if ./build/qinfer generate -m Qwen/Qwen3-0.6B --help >/dev/null 2>&1 && ./build/qinfer resolve -m Qwen/Qwen3-0.6B >/dev/null 2>&1; then
  ./build/qinfer generate -m Qwen/Qwen3-0.6B -p "The capital of France is" -n 32 --temp 0
else
  echo
  echo "Qwen/Qwen3-0.6B is not in the Hugging Face cache; running the tiny checkpoint shipped in"
  echo "tests/data/models/tiny instead. Its weights are RANDOM, so the text is gibberish: this only"
  echo "shows the pipeline works. For real output: huggingface-cli download Qwen/Qwen3-0.6B"
  echo "then run: ./build/qinfer generate -m Qwen/Qwen3-0.6B -p \"The capital of France is\""
  echo
  ./build/qinfer generate -m tests/data/models/tiny --prompt-ids 785,6722,315,9625,374 -n 16 --temp 0 --json
fi
