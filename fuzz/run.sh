#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default: $CORDON_FUZZ_SECS, else 20)
# and fails on the first crash, printing each target's run length and executions.
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`); the nightly-only flags
# it passes to rustc are allowed on stable by RUSTC_BOOTSTRAP=1.
# Usage: bash fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-${CORDON_FUZZ_SECS:-20}}"
export RUSTC_BOOTSTRAP=1
targets=(framing jsonrpc cursor cursor_mutate)

# Coverage-guided builds without a sanitizer: the code under test is safe Rust,
# so AddressSanitizer adds build and run time, not findings. Debug assertions
# (overflow checks) stay on.
cargo fuzz build --sanitizer none

mkdir -p target/logs
for target in "${targets[@]}"; do
    # New inputs go to a scratch corpus; the committed seeds are only read.
    scratch="target/corpus/$target"
    mkdir -p "$scratch"
    extra=()
    if [ -f "dict/$target.dict" ]; then
        extra+=("-dict=dict/$target.dict")
    fi
    log="target/logs/$target.log"
    start=$(date +%s)
    if ! cargo fuzz run --sanitizer none "$target" "$scratch" "corpus/$target" -- \
        -max_total_time="$secs" -timeout=10 -print_final_stats=1 "${extra[@]}" >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzz target $target failed: the crashing input is in fuzz/artifacts/$target/" >&2
        exit 1
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz $target: $(($(date +%s) - start)) s, $execs executions, no crash"
done
