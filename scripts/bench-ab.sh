#!/usr/bin/env bash
# A/B point queries of two sieve binaries on one table in a fresh MinIO, in one script so both
# see the same machine state: `bash scripts/bench-ab.sh OLD_SIEVE NEW_SIEVE` (build OLD from an
# earlier commit first). Each binary loads t10b (SIEVE_BENCH_ROWS, default 200M; the same rows,
# the loader is seeded) under its own prefix, so the two may write different formats. Then for 10
# present and 10 absent c2 keys: cold (a process per query, alternating OLD and NEW) and warm (one
# process per binary, second pass), medians in ms; then each binary's sidecar bytes per query.
set -euo pipefail
cd "$(dirname "$0")/.."
old="${1:?usage: bench-ab.sh OLD_SIEVE NEW_SIEVE}"
new="${2:?usage: bench-ab.sh OLD_SIEVE NEW_SIEVE}"
rows="${SIEVE_BENCH_ROWS:-200M}"
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_SIDECAR_CACHE_MIB="${SIEVE_SIDECAR_CACHE_MIB:-2048}"
SIEVE_STORAGE="$SIEVE_TEST_S3_URL/ab-old" "$old" load t10b --rows "$rows" 2>&1 | tail -3
SIEVE_STORAGE="$SIEVE_TEST_S3_URL/ab-new" "$new" load t10b --rows "$rows" 2>&1 | tail -3
# Each binary reads the table it wrote.
sieve_old() { SIEVE_STORAGE="$SIEVE_TEST_S3_URL/ab-old" "$old" "$@"; }
sieve_new() { SIEVE_STORAGE="$SIEVE_TEST_S3_URL/ab-new" "$new" "$@"; }

seconds() { grep -o '([0-9.]* sec)' | tr -d '(sec)'; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)] * 1000}'; }
total=$(sieve_new sql -e "select count(*) from t10b" | awk -F'|' 'NR==4 {gsub(/ /, "", $2); print $2}')
ids=$(python3 -c "n=$total; print(','.join(str(i * n // 10 + 12345) for i in range(10)))")
mapfile -t present < <(sieve_new sql -e "select c2 from t10b where c1 in ($ids)" | awk -F'|' 'NR>3 && NF>2 {gsub(/ /, "", $2); print $2}')
absent=(); for i in $(seq 10 19); do absent+=("0.${i}123456789012345"); done
queries() { for key in "$@"; do echo "select c1 from t10b where c2 = '$key';"; done; }

for kind in present absent; do
  declare -n keys=$kind
  cold_old=(); cold_new=()
  for key in "${keys[@]}"; do
    cold_old+=("$(sieve_old sql -e "select c1 from t10b where c2 = '$key'" | seconds)")
    cold_new+=("$(sieve_new sql -e "select c1 from t10b where c2 = '$key'" | seconds)")
  done
  a=$(printf '%s\n' "${cold_old[@]}" | median); b=$(printf '%s\n' "${cold_new[@]}" | median)
  warm_old=$( (queries "${keys[@]}"; queries "${keys[@]}") | sieve_old sql | seconds | tail -n 10 | median)
  warm_new=$( (queries "${keys[@]}"; queries "${keys[@]}") | sieve_new sql | seconds | tail -n 10 | median)
  echo "$kind keys: cold $a ms old, $b ms new ($(python3 -c "print(round($a / $b, 2))")×); warm $warm_old ms old, $warm_new ms new"
done
for binary in sieve_old sieve_new; do
  echo "$binary: $("$binary" sql -e "explain analyze select c1 from t10b where c2 = '${absent[0]}'" | grep -oE '(sidecar_bytes_fetched|snapshot_time|prune_time)=[^,]*' | tr '\n' ' ')"
done
