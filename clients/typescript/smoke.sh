#!/usr/bin/env bash
# Packs the TypeScript client (@finsvc/client) and tries it as an integrator
# would: checks that src/schema.ts is fresh, builds and packs the package,
# installs the tarball into a scratch project in a temporary directory
# outside the repository, compiles smoke/*.ts there with tsc (NodeNext,
# strict), and runs them against a live `finsvc demo` on a free loopback
# port: smoke.ts (sign-in, API calls, refresh) and example.ts, docs/clients.md's
# TypeScript example, which a Go test keeps identical to that page.
# Needs Node.js and npm; without them it fails in CI (CI set) and is
# skipped locally.
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
npmq() { npm --no-audit --no-fund --loglevel=error "$@"; }

# The demo starts while npm works.
(cd "$root" && go build -o "$tmp/finsvc" ./cmd/finsvc)
"$tmp/finsvc" demo --addr 127.0.0.1:0 --data "$tmp/data" >"$tmp/demo.log" 2>&1 &
pid=$!

cd "$here"
npmq ci
# The generated types (and the money properties) are committed (they are the package's declarations):
# regenerate them and fail if they differ, as CI does for gen/.
npm run --silent generate >/dev/null
if ! git -C "$root" diff --exit-code --stat -- clients/typescript/src/schema.ts clients/typescript/src/decimal.gen.ts ||
  [ -n "$(git -C "$root" ls-files --others --exclude-standard -- clients/typescript/src)" ]; then
  echo "typescript smoke: clients/typescript/src/schema.ts or decimal.gen.ts differs from a fresh 'npm run generate': regenerate and commit it" >&2
  exit 1
fi
# prepack builds dist/ with tsc.
tarball="$tmp/$(npm pack --silent --pack-destination "$tmp" | tail -n 1)"
tar -tzf "$tarball" | grep -qx 'package/dist/index.d.ts' || { echo "typescript smoke: the tarball has no dist/index.d.ts" >&2; exit 1; }

# A scratch project outside the repository: only the tarball, the registry
# and the programs to compile; the compiler versions are the package's.
mkdir "$tmp/scratch"
cp smoke/*.ts smoke/tsconfig.json "$tmp/scratch/"
tsv=$(node -p 'require("./package.json").devDependencies.typescript')
ntv=$(node -p 'require("./package.json").devDependencies["@types/node"]')
cd "$tmp/scratch"
printf '{ "name": "scratch", "private": true, "type": "module" }\n' > package.json
npmq install "$tarball" "typescript@$tsv" "@types/node@$ntv"
npx --no-install tsc -p .

for _ in $(seq 1 150); do
  [ -s "$tmp/data/demo.json" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then cat "$tmp/demo.log" >&2; echo "typescript smoke: demo exited early" >&2; exit 1; fi
  sleep 0.2
done
[ -s "$tmp/data/demo.json" ] || { cat "$tmp/demo.log" >&2; echo "typescript smoke: demo.json never appeared" >&2; exit 1; }
mkdir demo-data && cp "$tmp/data/demo.json" demo-data/
fail() { echo "--- demo log ---" >&2; tail -50 "$tmp/demo.log" >&2; exit 1; }
node dist/smoke.js demo-data/demo.json || fail
# The README's example, run as written where the README's steps leave
# demo-data/ and tokens.json.
node dist/example.js || fail
echo "typescript example: ok"
