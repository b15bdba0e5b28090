#!/usr/bin/env bash
# The portable build (no -march: one binary for every x86-64 CPU, each kernel
# compiled for SSSE3 ... AVX3_DL and chosen at run time, as packagers build
# it): builds the ops library and its tests in build-portable/ and runs the
# kernel tests on every target this CPU can execute. Then checks that the
# kernels compile where the build machine's best Highway target is AVX3_DL
# with AVX-VNNI (-march=sapphirerapids; compiled, not run), and that clang
# compiles them for every target too (it applies target attributes unlike GCC).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=Release -DQINFER_NATIVE=OFF -DQINFER_BENCH=OFF >/dev/null
cmake --build build-portable -j"$(nproc)" --target test_ops
./build-portable/test_ops --gtest_brief=1
cmake -S . -B build-spr -DCMAKE_BUILD_TYPE=Release -DQINFER_NATIVE=OFF -DQINFER_TESTS=OFF -DQINFER_BENCH=OFF \
      -DCMAKE_CXX_FLAGS=-march=sapphirerapids >/dev/null
cmake --build build-spr -j"$(nproc)" --target qinfer_ops
echo "kernels compile with -march=sapphirerapids (AVX3_DL baseline)"
scripts/apt_install.sh test_kernels_portable clang-14
CXX=clang++-14 cmake -S . -B build-portable-clang -DCMAKE_BUILD_TYPE=Release -DQINFER_NATIVE=OFF -DQINFER_TESTS=OFF \
      -DQINFER_BENCH=OFF >/dev/null
cmake --build build-portable-clang -j"$(nproc)" --target qinfer_ops
echo "kernels compile with clang 14 for every target"
