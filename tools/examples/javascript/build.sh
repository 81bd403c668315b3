#!/usr/bin/env bash
# Builds the JavaScript example tool into target/examples/primes.wasm and prints that path.
#
# Installs the pinned build tools (package.json, package-lock.json: componentize-js and jco)
# into target/interop/js-tools first when they are missing or the pins changed; node_modules
# never lands in the source tree. Needs Node 20+ with npm and access to the npm registry;
# runs unattended; does nothing when the component is newer than every input. Progress goes
# to stderr, the output path alone to stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
tools="$repo/target/interop/js-tools"
out="$repo/target/examples/primes.wasm"
componentize="$tools/node_modules/@bytecodealliance/componentize-js/src/cli.js"

# The build tools, pinned (exact versions and a lockfile): a newer componentize-js may import
# newer WASI versions than the host's wasmtime provides. Reinstalled when the pins change.
if [ ! -f "$componentize" ] || ! cmp -s "$here/package-lock.json" "$tools/package-lock.json"; then
    echo "installing componentize-js (pinned in $here/package.json) into $tools" >&2
    mkdir -p "$tools"
    cp "$here/package.json" "$here/package-lock.json" "$tools/"
    (cd "$tools" && npm install --no-audit --no-fund --loglevel=error </dev/null >&2)
fi

# Up to date: the component is newer than the tool, the contract, the pins and this script.
if [ -f "$out" ] && [ -z "$(find "$here/primes.js" "$here/package-lock.json" "$here/build.sh" "$repo/wit" \
    -type f -newer "$out")" ]; then
    echo "$out"
    exit 0
fi

mkdir -p "$(dirname "$out")"
echo "building $out (about 20 s)" >&2
# --wit/-n: Cordon's contract, world `cordon-tool`. -d: leave out every WASI feature of the
# JavaScript engine that the tool does not use, so the component imports only the contract
# (no wasi:* at all): `stdio` (console.*; the host discards guest output anyway), `random`
# (Math.random becomes deterministic), `clocks` (Date.now, setTimeout), `http` (fetch) and
# `fetch-event`. A tool that needs one drops its `-d` (the host provides wasi:cli, clocks, io,
# random, filesystem and wasi:http within the tool's net: grants; never wasi:sockets).
node "$componentize" "$here/primes.js" \
    --wit "$repo/wit" -n cordon-tool \
    -d stdio -d random -d clocks -d http -d fetch-event \
    -o "$out.tmp" </dev/null >&2
mv "$out.tmp" "$out"
echo "$out"
