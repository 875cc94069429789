#!/usr/bin/env bash
# What merging locator groups as a load commits costs it: `bash scripts/bench-load-merges.sh SIEVE
# [ROWS]` (a release build; ROWS default 1B, ~12 GB of disk per billion rows). Loads t10b into a
# fresh MinIO twice: as `sieve load` does by default (a commit every 256 blocks, each asking for
# a merge in the background, sharing the cores with the load), then committing once at the end
# (`--commit-blocks 1000000`: no merge until the load is done). Prints each load's summary (its
# rate excludes the wait for merges, which it reports after), wall and CPU time and max RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-load-merges.sh SIEVE [ROWS]}")"
rows="${2:-1B}"
source scripts/minio.sh
trap minio_stop EXIT
for flags in "" "--commit-blocks 1000000"; do
  minio_start
  echo "== sieve load t10b --rows $rows $flags"
  /usr/bin/time -f "wall %e s, user %U s, sys %S s, max RSS %M KiB" \
    "$sieve" --storage "$SIEVE_TEST_S3_URL/load" load t10b --rows "$rows" $flags 2>&1 \
    | tr '\r' '\n' | grep -E "^(loaded|default|locator|  index|wall)"
  minio_stop
done
