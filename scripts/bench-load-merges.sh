#!/usr/bin/env bash
# What merging locator groups as a load commits costs it: `bash scripts/bench-load-merges.sh SIEVE
# [ROWS]` (a release build; ROWS default 1B, ~12 GB of disk per billion rows, and up to 2 GB of
# spilled keys in the temp dir). Loads t10b into a fresh MinIO three times: as `sieve load` does
# by default (groups of 128M rows built from spilled keys, a commit every two groups, each asking
# for a merge in the background); with the defaults before, groups of 8M rows and a commit every
# 256 blocks (sixteen groups merge into one of 128M as the load runs, sharing the cores with
# it); then committing once at the end (`--commit-blocks 1000000`: no merge until the load is
# done). Prints each load's summary (its rate excludes the wait for merges, which it reports
# after), wall and CPU time and max RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-load-merges.sh SIEVE [ROWS]}")"
rows="${2:-1B}"
source scripts/minio.sh
trap minio_stop EXIT
for flags in "" "--locator-group-rows 8M --commit-blocks 256" "--commit-blocks 1000000"; do
  minio_start
  echo "== sieve load t10b --rows $rows $flags"
  /usr/bin/time -f "wall %e s, user %U s, sys %S s, max RSS %M KiB" \
    "$sieve" --storage "$SIEVE_TEST_S3_URL/load" load t10b --rows "$rows" $flags 2>&1 \
    | tr '\r' '\n' | grep -E "^(loaded|default|locator|  index|wall)"
  minio_stop
done
