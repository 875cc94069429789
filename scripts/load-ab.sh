#!/usr/bin/env bash
# Loads t10b into a fresh local directory with each given `sieve` binary, alternating, twice
# each (the same rows: the generator is seeded), and prints wall time, CPU time and max RSS per run.
#   bash scripts/load-ab.sh OLD_SIEVE NEW_SIEVE [ROWS]    (ROWS: default 100M)
set -euo pipefail
rows=${3:-100M}
for run in 1 2; do
  for sieve in "$1" "$2"; do
    dir=$(mktemp -d)
    /usr/bin/time -f "$sieve run $run: %e s wall, %U s user, %S s sys, %M KiB max RSS" \
      "$sieve" --storage "$dir" load t10b --rows "$rows" 2>&1 | grep -E "^loaded|wall|locators"
    rm -rf "$dir"
  done
done
