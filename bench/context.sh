#!/usr/bin/env bash
# Benchmarks the always-loaded context in release mode: compile time of a 20 KiB context and the
# change-to-target latency of `kb watch`. Prints markdown tables (docs/performance.md quotes them).
# Usage: bench/context.sh [CHANGES (default 60)] [DEBOUNCE_MS (default 200)]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --bin kb --example context_bench
echo "machine: $(nproc) cores, $(date -u +%Y-%m-%d), $(rustc --version)"
echo
target/release/examples/context_bench target/release/kb "$@"
