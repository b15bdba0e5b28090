#!/usr/bin/env bash
# Builds (if needed) and runs the whole test suite with CTest, then qinfer serve
# through the official openai client (scripts/test_openai_client.sh).
#   scripts/test.sh                 Release build in build/
#   BUILD=build-asan SANITIZE=ON scripts/test.sh   the same suite under ASan+UBSan
#     (clang 14, scripts/sanitized_build.sh; without the micro-benchmarks, and
#     the openai-client suite without the nginx scale-out test, whose server
#     side serve.test.mjs already covers)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SANITIZE=${SANITIZE:-OFF}
CLIENT_TESTS=()
if [ "$SANITIZE" = ON ]; then
  CLIENT_TESTS=(serve load)
  scripts/sanitized_build.sh "$BUILD"
else
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DQINFER_SANITIZE=OFF -DQINFER_BENCH=ON >/dev/null
  cmake --build "$BUILD" -j"$(nproc)"
fi
(cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" "$@")
BUILD="$BUILD" scripts/test_openai_client.sh "${CLIENT_TESTS[@]}"
