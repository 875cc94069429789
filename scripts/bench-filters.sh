#!/usr/bin/env bash
# The filter comparison against a fresh MinIO: `sieve-bench filters --rows $SIEVE_BENCH_ROWS`
# (default 100M) loads t10b once per filter kind and writes filters.md/.csv/.json/.svg to
# bench-filters/. The sidecar cache is raised to 2 GiB (SIEVE_SIDECAR_CACHE_MIB) so that warm
# means warm for every kind: 100 blocks of binary_fuse16 on two columns are ~460 MB of sidecars.
# Needs ~1.2 GB of disk per 100M rows per kind, 8 tables (MinIO's data is deleted on exit).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sieve-target}"
cargo build --release -q -p sieve-cli --bin sieve-bench
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_SIDECAR_CACHE_MIB="${SIEVE_SIDECAR_CACHE_MIB:-2048}"
"$CARGO_TARGET_DIR/release/sieve-bench" --storage "$SIEVE_TEST_S3_URL/bench" \
  filters --rows "${SIEVE_BENCH_ROWS:-100M}" --out bench-filters "$@"
