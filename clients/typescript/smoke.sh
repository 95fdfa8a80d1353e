#!/usr/bin/env bash
# Runs the TypeScript smoke test against a live `finsvc demo` on a free
# loopback port. Needs Node.js and npm; without them it fails in CI (CI set)
# and is skipped locally.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  if [ -n "${CI:-}" ]; then
    echo "typescript smoke: FAILED: node/npm not found; install Node.js and npm (Debian: apt-get install -y nodejs npm)" >&2
    exit 1
  fi
  echo "typescript smoke: skipped: node/npm not found"
  exit 0
fi

tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/finsvc" "$root/cmd/finsvc"
"$tmp/finsvc" demo --addr 127.0.0.1:0 --data "$tmp/data" >"$tmp/demo.log" 2>&1 &
pid=$!
for _ in $(seq 1 150); do
  [ -s "$tmp/data/demo.json" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then cat "$tmp/demo.log" >&2; echo "typescript smoke: demo exited early" >&2; exit 1; fi
  sleep 0.2
done
[ -s "$tmp/data/demo.json" ] || { cat "$tmp/demo.log" >&2; echo "typescript smoke: demo.json never appeared" >&2; exit 1; }

cd "$here"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent smoke -- "$tmp/data/demo.json" || { echo "--- demo log ---" >&2; tail -50 "$tmp/demo.log" >&2; exit 1; }
