#!/usr/bin/env bash
# Builds the Python example tool into target/examples/csv_rows.wasm and prints that path.
#
# Installs componentize-py (pinned) into target/interop/venv first if it is missing; the
# venv is the one .ci/run creates for the Python MCP client, made here if absent. Needs
# python3 (3.10+) with venv and PyPI; runs unattended; does nothing when the component is
# newer than every input. Progress goes to stderr, the output path alone to stdout.
set -euo pipefail

COMPONENTIZE_PY_VERSION=0.25.1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
venv="$repo/target/interop/venv"
out="$repo/target/examples/csv_rows.wasm"

# The build tool, pinned: a new componentize-py may import newer WASI versions than the
# host's wasmtime provides.
if [ "$("$venv/bin/componentize-py" --version 2>/dev/null)" != "componentize-py $COMPONENTIZE_PY_VERSION" ]; then
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    echo "installing componentize-py $COMPONENTIZE_PY_VERSION into $venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "componentize-py==$COMPONENTIZE_PY_VERSION"
fi

# Up to date: the component is newer than the app, its WIT, the contract and this script.
if [ -f "$out" ] && [ -z "$(find "$here/app.py" "$here/wit" "$repo/wit" "$here/build.sh" -type f -newer "$out")" ]; then
    echo "$out"
    exit 0
fi

# The app is built from a copy under target/: componentize-py runs it once at build time
# (then snapshots it) and would leave a __pycache__ beside the source.
src="$repo/target/examples/csv_rows.src"
rm -rf "$src" && mkdir -p "$src" && cp "$here/app.py" "$src/"
echo "building $out (about half a minute)" >&2
# -d: the Cordon contract (world cordon-tool) and this example's own world, which adds
# WASI's preopens to it. -p: where the app module (app.py) is.
"$venv/bin/componentize-py" \
    -d "$repo/wit" -d "$here/wit" -w cordon-examples:csv-rows/csv-tool \
    componentize app -p "$src" -o "$out.tmp" >&2
mv "$out.tmp" "$out"
echo "$out"
