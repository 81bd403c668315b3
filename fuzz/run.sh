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

# Runs one target for $secs; its log is target/logs/TARGET.log.
run_target() {
    local target=$1 scratch="target/corpus/$1" log="target/logs/$1.log" extra=()
    # New inputs go to a scratch corpus; the committed seeds are only read.
    mkdir -p "$scratch"
    if [ -f "dict/$target.dict" ]; then
        extra+=("-dict=dict/$target.dict")
    fi
    cargo fuzz run --sanitizer none "$target" "$scratch" "corpus/$target" -- \
        -max_total_time="$secs" -timeout=10 -print_final_stats=1 "${extra[@]}" >"$log" 2>&1
}

# Two targets at a time (a run is single-threaded; CI has two cores).
failed=()
for ((i = 0; i < ${#targets[@]}; i += 2)); do
    pair=("${targets[@]:i:2}")
    pids=()
    start=$(date +%s)
    for target in "${pair[@]}"; do
        run_target "$target" &
        pids+=($!)
    done
    for n in "${!pair[@]}"; do
        target=${pair[$n]}
        if ! wait "${pids[$n]}"; then
            failed+=("$target")
            continue
        fi
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "target/logs/$target.log" | grep -o '[0-9]*$' || echo '?')
        echo "fuzz $target: $(($(date +%s) - start)) s, $execs executions, no crash"
    done
done
for target in "${failed[@]}"; do
    tail -n 60 "target/logs/$target.log"
    echo "fuzz target $target failed: the crashing input is in fuzz/artifacts/$target/" >&2
done
[ ${#failed[@]} -eq 0 ]
