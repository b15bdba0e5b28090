#!/usr/bin/env bash
# The kernels on 64-bit ARM: cross-compiles the ops library and its tests with
# Debian's aarch64 toolchain into build-arm64/ (Highway's NEON target; SVE's is
# left out, CMakeLists.txt says why) and runs the kernel tests under
# qemu-aarch64 (user mode). Installs the cross toolchain, qemu and the arm64
# libraries (adding arm64 to dpkg's architectures) when missing.
#   scripts/test_kernels_arm64.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! dpkg --print-foreign-architectures | grep -x arm64 >/dev/null; then
  echo "test_kernels_arm64: adding arm64 to dpkg's architectures"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO dpkg --add-architecture arm64
fi
scripts/apt_install.sh test_kernels_arm64 g++-aarch64-linux-gnu qemu-user libhwy-dev:arm64 libgtest-dev:arm64
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
      -DQINFER_NATIVE=OFF -DQINFER_KERNELS_ONLY=ON >/dev/null
cmake --build build-arm64 -j"$(nproc)" --target test_ops
# The arm64 C library of multiarch (libc6:arm64, /lib/ld-linux-aarch64.so.1),
# not the cross toolchain's: under qemu 7.2 with the latter, creating a thread
# hangs.
qemu-aarch64 ./build-arm64/test_ops --gtest_brief=1
