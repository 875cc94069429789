#!/usr/bin/env bash
# The point-query scale benchmark against a fresh MinIO: loads t10b (SIEVE_BENCH_ROWS, default
# 10M rows) with Databend's CTAS, then prints blocks read and latency medians/p95 for present and
# absent c2 keys, pruning on (warm and cold cache) against pruning off, all in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sieve-target}"
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_BENCH_URL="${SIEVE_TEST_S3_URL}/bench"
cargo bench -p sieve-benches --bench point_query
