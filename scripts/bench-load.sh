#!/usr/bin/env bash
# The scale benchmark: loads t10b (SIEVE_BENCH_ROWS rows, default 1B) into a fresh MinIO with
# `sieve load` (binary_fuse8 on c1 and c2), prints its summary, then times point queries on c2:
# cold (a fresh `sieve sql` process per query) and warm (one process, second pass), 10 present
# and 10 absent keys. Needs ~12 GB of disk per billion rows.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sieve-target}"
rows="${SIEVE_BENCH_ROWS:-1B}"
cargo build --release -q -p sieve-cli
sieve="$CARGO_TARGET_DIR/release/sieve"
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_STORAGE="$SIEVE_TEST_S3_URL/scale"

/usr/bin/time -f "load: %e s wall, %M KiB max RSS" "$sieve" load t10b --rows "$rows"
du -sh "$MINIO_DATA"

total=$("$sieve" sql -e "select count(*) from t10b" | awk -F'|' 'NR==4 {gsub(/ /, "", $2); print $2}')
ids=$(python3 -c "n=$total; print(','.join(str(i * n // 10 + 12345) for i in range(10)))")
mapfile -t present < <("$sieve" sql -e "select c2 from t10b where c1 in ($ids)" | awk -F'|' 'NR>3 && NF>2 {gsub(/ /, "", $2); print $2}')
absent=(); for i in $(seq 10 19); do absent+=("0.${i}123456789012345"); done

seconds() { grep -o '([0-9.]* sec)' | tr -d '(sec)' ; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)] * 1000 " ms"}'; }
for kind in present absent; do
  declare -n keys=$kind
  cold=$(for k in "${keys[@]}"; do "$sieve" sql -e "select c1 from t10b where c2 = '$k'" | seconds; done | median)
  warm=$(for pass in 1 2; do for k in "${keys[@]}"; do echo "select c1 from t10b where c2 = '$k';"; done; done \
    | SIEVE_SIDECAR_CACHE_MIB=${SIEVE_SIDECAR_CACHE_MIB:-4096} "$sieve" sql | seconds | tail -n 10 | median)
  echo "$kind keys: cold median $cold, warm median $warm (sidecar cache ${SIEVE_SIDECAR_CACHE_MIB:-4096} MiB)"
done
