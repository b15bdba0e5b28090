#!/usr/bin/env bash
# Builds (if needed) and runs the whole test suite with CTest, then qinfer serve
# through the official openai client (scripts/test_openai_client.sh).
#   scripts/test.sh                 Release build in build/
#   BUILD=build-asan SANITIZE=ON scripts/test.sh   the same suite under ASan+UBSan
#     (without the micro-benchmarks, and the openai-client suite without the
#     nginx scale-out test, whose server side serve.test.mjs already covers)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SANITIZE=${SANITIZE:-OFF}
TYPE=Release BENCH=ON CLIENT_TESTS=()
if [ "$SANITIZE" = ON ]; then
  TYPE=RelWithDebInfo BENCH=OFF CLIENT_TESTS=(serve load)
fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=$TYPE -DQINFER_SANITIZE="$SANITIZE" -DQINFER_BENCH=$BENCH >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
(cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" "$@")
BUILD="$BUILD" scripts/test_openai_client.sh "${CLIENT_TESTS[@]}"
