#!/usr/bin/env bash
# The locator at scale: `bash scripts/bench-locator.sh SIEVE` loads t10b (SIEVE_BENCH_ROWS,
# default 1B) into a fresh MinIO once per block size (SIEVE_BENCH_BLOCKS, default "1M 100k":
# 1000 and 10,000 blocks at 1B rows), then runs point queries on c2 with the locator on and off
# (`SET sieve.locator`, the per-block sidecars as baseline) in the same script:
#   - cold: a fresh process per query, on/off alternating per key; warm: one process per mode,
#     the second of two passes; SIEVE_BENCH_QUERIES (default 50) present and absent keys each;
#     medians in ms of the query's own time, and off/on ratios;
#   - the cold query's counts from EXPLAIN ANALYZE (index and data bytes read, pages, blocks);
#   - false block reads: blocks read over 1000 absent keys, warm, locator on.
# With SIEVE_BENCH_OPTIMIZE=1 it then runs OPTIMIZE (which merges locator groups by tiers; its
# time and max RSS) and measures the locator side again: before and after in one script
# (SIEVE_BENCH_OPTIMIZE=only: after only).
# Needs ~12 GB of disk per billion rows per block size. Keep the machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-locator.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-1B}"
queries="${SIEVE_BENCH_QUERIES:-50}"
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_SIDECAR_CACHE_MIB="${SIEVE_SIDECAR_CACHE_MIB:-4096}"

seconds() { grep -o '([0-9.]* sec)' | tr -d '(sec)'; }
median() { sort -g | awk '{v[NR]=$1} END {printf "%.1f", v[int((NR+1)/2)] * 1000}'; }
ratio() { python3 -c "print(f'{$1 / $2:.1f}')"; }
declare -A warm
metrics() { grep -oE '[ ,[](index_bytes_fetched|locator_groups_probed|bytes_scanned|pages_read|blocks_read|blocks_pruned_by_locator)=[^],]*' | sed 's/^.//' | tr '\n' ' '; }

# measure [on]: with "on", the locator-on side only (after OPTIMIZE: the sidecars are as before).
measure() {
  echo "| case | locator on | locator off | off / on |"
  echo "|---|---|---|---|"
  for kind in present absent; do
    declare -n keys=$kind
    on=(); off=()
    for key in "${keys[@]}"; do
      on+=("$("$sieve" sql -e "set sieve.locator = true; select c1 from t10b where c2 = '$key'" | seconds | tail -1)")
      [ "${1:-}" = on ] || off+=("$("$sieve" sql -e "set sieve.locator = false; select c1 from t10b where c2 = '$key'" | seconds | tail -1)")
    done
    a=$(printf '%s\n' "${on[@]}" | median)
    if [ "${1:-}" = on ]; then
      echo "| $kind cold, median ms | $a | – | – |"
    else
      b=$(printf '%s\n' "${off[@]}" | median)
      echo "| $kind cold, median ms | $a | $b | $(ratio "$b" "$a")× |"
    fi
    warm[false]=1
    for mode in true $([ "${1:-}" = on ] || echo false); do
      warm[$mode]=$( (echo "set sieve.locator = $mode;"; for pass in 1 2; do for key in "${keys[@]}"; do echo "select c1 from t10b where c2 = '$key';"; done; done) \
        | "$sieve" sql | seconds | tail -n "$queries" | median)
    done
    if [ "${1:-}" = on ]; then
      echo "| $kind warm, median ms | ${warm[true]} | – | – |"
    else
      echo "| $kind warm, median ms | ${warm[true]} | ${warm[false]} | $(ratio "${warm[false]}" "${warm[true]}")× |"
    fi
  done
  for kind in present absent; do
    declare -n keys=$kind
    for mode in true $([ "${1:-}" = on ] || echo false); do
      echo "$kind, locator $mode, cold: $("$sieve" sql -e "set sieve.locator = $mode; explain analyze select c1 from t10b where c2 = '${keys[1]}'" | metrics)"
    done
  done
  false_reads=$(for i in $(seq 1 1000); do echo "select c1 from t10b where c2 = '0.$(printf '%04d' "$i")987654321098';"; done \
    | "$sieve" sql | grep -oE 'blocks read [0-9]+' | awk '{s += $3} END {print s + 0}')
  echo "false block reads over 1000 absent keys (locator on): $false_reads"
  "$sieve" sql -e "select column_name, kind, blocks, keys, bytes, round(bits_per_key, 2) as bits_per_key, groups from sieve_index_stats('t10b') where column_name = 'c2'"
}

for block_rows in ${SIEVE_BENCH_BLOCKS:-1M 100k}; do
  export SIEVE_STORAGE="$SIEVE_TEST_S3_URL/locator-$block_rows"
  echo "## t10b, $rows rows, $block_rows-row blocks"
  /usr/bin/time -f "load: %e s wall, %M KiB max RSS" "$sieve" load t10b --rows "$rows" --block-rows "$block_rows" 2>&1 | grep -v '^\s*$' | tail -8
  total=$("$sieve" sql -e "select count(*) from t10b" | awk -F'|' 'NR==4 {gsub(/ /, "", $2); print $2}')
  ids=$(python3 -c "n, q = $total, $queries; print(','.join(str(i * n // q + 12345) for i in range(q)))")
  mapfile -t present < <("$sieve" sql -e "select c2 from t10b where c1 in ($ids)" | awk -F'|' 'NR>3 && NF>2 {gsub(/ /, "", $2); print $2}')
  absent=(); for i in $(seq 1 "$queries"); do absent+=("0.$(printf '%03d' "$i")1234567890123"); done
  [ "${SIEVE_BENCH_OPTIMIZE:-}" = only ] || measure
  if [ -n "${SIEVE_BENCH_OPTIMIZE:-}" ]; then
    /usr/bin/time -f "optimize: %e s wall, %M KiB max RSS" "$sieve" sql -e "optimize table t10b" 2>&1 | grep -v '^\s*$'
    echo "### after OPTIMIZE (locator on; off is as before)"
    measure on
  fi
  du -sh "$MINIO_DATA"
done
