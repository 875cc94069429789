#!/usr/bin/env bash
# Loads t10b into fresh storage with each given `sieve` binary, alternating, twice each (the
# same rows: the generator is seeded), and prints wall time, CPU time and max RSS per run.
#   bash scripts/load-ab.sh OLD_SIEVE NEW_SIEVE [ROWS]    (ROWS: default 100M)
# Storage: a fresh local directory per load, or with SIEVE_BENCH_MINIO=1 a fresh MinIO per load
# (scripts/minio.sh; it shares the cores with the load, as in production on one machine).
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${3:-100M}
old=$(realpath "$1")
new=$(realpath "$2")
[ "${SIEVE_BENCH_MINIO:-0}" = 1 ] && { source scripts/minio.sh; trap minio_stop EXIT; }
for run in 1 2; do
  for sieve in "$old" "$new"; do
    if [ "${SIEVE_BENCH_MINIO:-0}" = 1 ]; then
      minio_start >/dev/null
      storage="$SIEVE_TEST_S3_URL/load"
    else
      dir=$(mktemp -d)
      storage="$dir"
    fi
    /usr/bin/time -f "$sieve run $run: %e s wall, %U s user, %S s sys, %M KiB max RSS" \
      "$sieve" --storage "$storage" load t10b --rows "$rows" 2>&1 | grep -E "^loaded|wall|locators"
    if [ "${SIEVE_BENCH_MINIO:-0}" = 1 ]; then minio_stop; else rm -rf "$dir"; fi
  done
done
