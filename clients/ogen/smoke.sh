#!/usr/bin/env bash
# Generates a Go client with ogen (a strict generator, pinned in go.mod's
# tool directive) from the spec a live `finsvc demo` serves, in a scratch
# directory outside the repository, builds it with main.go, and runs it
# against the demo: the generated decoders check every response strictly.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$root" && go build -o "$tmp/finsvc" ./cmd/finsvc)
"$tmp/finsvc" demo --addr 127.0.0.1:0 --data "$tmp/data" >"$tmp/demo.log" 2>&1 &
pid=$!

mkdir "$tmp/scratch"
cp "$here/main.go" "$here/ogen.yml" "$here/go.mod" "$here/go.sum" "$tmp/scratch/"
cd "$tmp/scratch"

for _ in $(seq 1 150); do
  [ -s "$tmp/data/demo.json" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then cat "$tmp/demo.log" >&2; echo "ogen smoke: demo exited early" >&2; exit 1; fi
  sleep 0.2
done
[ -s "$tmp/data/demo.json" ] || { cat "$tmp/demo.log" >&2; echo "ogen smoke: demo.json never appeared" >&2; exit 1; }
fail() { echo "--- demo log ---" >&2; tail -50 "$tmp/demo.log" >&2; exit 1; }

# The spec as served (operational endpoints answer on any host).
base=$(sed -n 's/.*"base_url": *"\([^"]*\)".*/\1/p' "$tmp/data/demo.json")
curl -fsS "http://127.0.0.1:${base##*:}/openapi.yaml" -o served.yaml || fail
go tool ogen -config ogen.yml -target api -package api -clean -loglevel error served.yaml
go build -mod=readonly -o smoke .
./smoke "$tmp/data/demo.json" || fail
