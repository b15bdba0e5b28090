#!/usr/bin/env bash
# The portable build (no -march: one binary for every x86-64 CPU, each kernel
# compiled for SSSE3 ... AVX3_DL and chosen at run time, as packagers build
# it): builds the ops library and its tests in build-portable/ and runs the
# kernel tests on every target this CPU can execute. Then checks that the
# kernels compile where the build machine's best Highway target is AVX3_DL
# with AVX-VNNI (-march=sapphirerapids; compiled, not run).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=Release -DQINFER_NATIVE=OFF -DQINFER_BENCH=OFF >/dev/null
cmake --build build-portable -j"$(nproc)" --target test_ops
./build-portable/test_ops --gtest_brief=1
cmake -S . -B build-spr -DCMAKE_BUILD_TYPE=Release -DQINFER_NATIVE=OFF -DQINFER_TESTS=OFF -DQINFER_BENCH=OFF \
      -DCMAKE_CXX_FLAGS=-march=sapphirerapids >/dev/null
cmake --build build-spr -j"$(nproc)" --target qinfer_ops
echo "kernels compile with -march=sapphirerapids (AVX3_DL baseline)"
