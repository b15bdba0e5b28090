#!/usr/bin/env bash
# Installs what is missing (Debian/Ubuntu), builds qinfer into build/, installs
# the binary into $QINFER_PREFIX/bin (default ~/.local/bin: no root needed),
# then runs the main job: text generation with Qwen/Qwen3-0.6B when it is in
# the Hugging Face cache, otherwise with the small random-weight checkpoint in
# the repo.
#   scripts/setup.sh            install packages + build + install qinfer + demo
#   scripts/setup.sh --no-run   install packages + build only (CI)
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config git nlohmann-json3-dev libhwy-dev libonig-dev libicu-dev
      libcli11-dev libcpp-httplib-dev libedit-dev libgtest-dev libgmock-dev libbenchmark-dev)
scripts/apt_install.sh setup "${PKGS[@]}"

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

[ "${1:-}" = "--no-run" ] && exit 0

prefix="${QINFER_PREFIX:-$HOME/.local}"
cmake --install build --prefix "$prefix" >/dev/null
echo "setup: installed $prefix/bin/qinfer"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "setup: $prefix/bin is not on PATH; add it:  export PATH=\"$prefix/bin:\$PATH\"" ;;
esac

err=$(mktemp)
if ./build/qinfer generate -m Qwen/Qwen3-0.6B -p "The capital of France is" -n 32 --temp 0 2>"$err"; then
  cat "$err" >&2
elif grep -q "not found in the Hugging Face cache" "$err"; then
  echo
  echo "Qwen/Qwen3-0.6B is not in the Hugging Face cache, so this runs the tiny checkpoint shipped in"
  echo "tests/data/models/tiny instead. Its weights are RANDOM: the text is gibberish and only shows the"
  echo "pipeline works. For the real model:  huggingface-cli download Qwen/Qwen3-0.6B"
  echo "then:  ./build/qinfer generate -m Qwen/Qwen3-0.6B -p \"The capital of France is\""
  echo
  ./build/qinfer generate -m tests/data/models/tiny -p "The capital of France is" -n 24 --temp 0
else
  cat "$err" >&2
  exit 1
fi
rm -f "$err"
