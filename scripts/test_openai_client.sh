#!/usr/bin/env bash
# qinfer serve driven by the official openai npm client (tests/openai_client),
# alone and as three replicas behind nginx: installs Node, npm and nginx from
# Debian and the pinned client from npm when missing, then runs the tests
# against the qinfer binary of $BUILD (default build/).
#   scripts/test_openai_client.sh            every tests/openai_client/*.test.mjs
#   scripts/test_openai_client.sh serve load  those two only
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ -x /usr/sbin/nginx ] || missing+=(nginx)
scripts/apt_install.sh test_openai_client "${missing[@]}"
if [ ! -d tests/openai_client/node_modules/openai ]; then
  (cd tests/openai_client && npm ci --no-audit --no-fund --loglevel=error)
fi
tests=(tests/openai_client/)
(($#)) && tests=("${@/#/tests/openai_client/}") && tests=("${tests[@]/%/.test.mjs}")
QINFER="$BUILD/qinfer" node --test "${tests[@]}"
