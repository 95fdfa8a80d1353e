#!/usr/bin/env bash
# Installs the Go client module (clients/go) into a scratch module outside
# the repository, as an integrator would (require + replace to this
# checkout, the module proxy for the rest), and runs smoke/main.go with it
# against a live `finsvc demo` on a free loopback port; then example/main.go,
# the Go example of docs/clients.md (a Go test keeps the two identical), where the
# smoke left demo-data/ and tokens.json as the README's steps do.
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
cp "$here/smoke/main.go" "$tmp/scratch/"
mkdir "$tmp/scratch/example"
cp "$here/example/main.go" "$tmp/scratch/example/"
cd "$tmp/scratch"
go mod init example.test/scratch >/dev/null 2>&1
go mod edit -require=github.com/finsvc/finsvc/clients/go@v0.0.0 -replace="github.com/finsvc/finsvc/clients/go=$root/clients/go"
go mod tidy >/dev/null 2>&1 || go mod tidy
# What the program compiles is the client and its runtime: no package of the
# server module, its web framework, spec validator or database layer.
if go list -deps ./... | grep -E '^(github.com/finsvc/finsvc/(pkg|gen|openapi|cmd)|github.com/labstack/|gorm.io/|github.com/getkin/|github.com/jackc/)'; then
  echo "go client smoke: the client pulls in server dependencies" >&2
  exit 1
fi
go build -o smoke .
go build -o example-bin ./example

for _ in $(seq 1 150); do
  [ -s "$tmp/data/demo.json" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then cat "$tmp/demo.log" >&2; echo "go client smoke: demo exited early" >&2; exit 1; fi
  sleep 0.2
done
[ -s "$tmp/data/demo.json" ] || { cat "$tmp/demo.log" >&2; echo "go client smoke: demo.json never appeared" >&2; exit 1; }
fail() { echo "--- demo log ---" >&2; tail -50 "$tmp/demo.log" >&2; exit 1; }
./smoke "$tmp/data/demo.json" || fail
mkdir demo-data && cp "$tmp/data/demo.json" demo-data/
./example-bin || fail
echo "go example: ok"
