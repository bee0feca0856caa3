#!/usr/bin/env bash
# The whole test suite: lint, types, then pytest on SQLite and PostgreSQL, printing the 25
# slowest steps. Starts PostgreSQL if it is not running and installs Debian's chromium for
# the browser tests. `--fast` (make test-fast): pytest only, without the tests marked slow
# or browser. Further arguments go to pytest. Tests run in TELLTALE_TEST_WORKERS pytest-xdist
# workers (default 2; 0 runs them in this process): on the 2-core machine two workers took
# 98-151 s where one took 141-190 s for the same 485 tests (busy machine, interleaved runs).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
WORKERS=(-n "${TELLTALE_TEST_WORKERS:-2}")
FAST=0
if [ "${1:-}" = "--fast" ]; then FAST=1; shift; fi

run_pytest() {  # exits with pytest's status; collecting nothing is a failure
  set +e
  $BIN/pytest "${WORKERS[@]}" "$@"
  local rc=$?
  set -e
  if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
  exit "$rc"
}

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  echo "PostgreSQL is not answering; starting it"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432 || { echo "PostgreSQL is required and not reachable" >&2; exit 1; }

if [ "$FAST" -eq 1 ]; then run_pytest -m "not slow and not browser" "$@"; fi

if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian chromium for the browser tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: could not install chromium" >&2
fi

echo "== ruff"; $BIN/ruff check app detectors pipelines bench tests
echo "== mypy"; $BIN/mypy
echo "== pytest"
run_pytest --durations=25 "$@"
