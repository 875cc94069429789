#!/usr/bin/env bash
# COPY INTO from MinIO: `bash scripts/bench-copy.sh SIEVE` (a release build). Loads t10b
# (SIEVE_BENCH_ROWS, default 10M) into a fresh MinIO with `sieve load`, serves a fresh local
# directory whose configuration names that table's prefix in external_locations, and copies the
# table's own Parquet blocks into a new table `(c1 bigint unsigned, c2 varchar)` (indexed as a
# CREATE TABLE indexes by default) SIEVE_BENCH_RUNS (default 3) times, each into a new table.
# The baseline, in the same server right after each COPY: the same rows made inside the server
# by a CTAS from numbers() (no files to read). Prints per run the wall time, rows/s and the
# server's CPU seconds, then the medians, rows per server CPU second, the ratio and the server's
# peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-copy.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-10M}"
runs="${SIEVE_BENCH_RUNS:-3}"
source scripts/minio.sh
root=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; minio_stop; rm -rf "$root"; }
trap cleanup EXIT
minio_start
source_url="$SIEVE_TEST_S3_URL/copy-source"
"$sieve" --storage "$source_url" load t10b --rows "$rows" 2>&1 | tr '\r' '\n' | grep -E '^loaded' || true
count=$("$sieve" --storage "$source_url" sql -e "select count(*) as n from t10b" | awk '/^\| [0-9]/ {print $2}')
printf 'external_locations = [{ url = "%s" }]\n' "$source_url" > "$root/sieve.toml"
port=$(free_port)
"$sieve" --storage "$root/data" --config "$root/sieve.toml" serve --port "$port" > "$root/server.log" 2>&1 &
server=$!
wait_for_port "$port"
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
ticks=$(getconf CLK_TCK)
timed() {
  local before after start end
  before=$(cpu); start=$(date +%s.%N)
  mysql -h127.0.0.1 -P"$port" -uroot -e "$1" > /dev/null
  end=$(date +%s.%N); after=$(cpu)
  python3 -c "print(f'{$end - $start:.3f} {($after - $before) / $ticks:.2f}')"
}
results="$root/results"
for run in $(seq "$runs"); do
  copy=$(timed "create table t$run (c1 bigint unsigned, c2 varchar); copy into t$run from '$source_url/' pattern = '[.]parquet\$' file_format = (type = parquet)")
  base=$(timed "create table b$run as select number as c1, cast(rand() as string) as c2 from numbers($count)")
  copied=$(mysql -h127.0.0.1 -P"$port" -uroot -N -B -e "select count(*) from t$run")
  [ "$copied" = "$count" ] || { echo "run $run copied $copied rows, not $count" >&2; exit 1; }
  echo "$copy $base" >> "$results"
  read -r cs cc bs bc <<< "$copy $base"
  python3 -c "print(f'run $run: COPY INTO {$cs} s ({$count / $cs:,.0f} rows/s, server CPU {$cc} s); CTAS from numbers() {$bs} s ({$count / $bs:,.0f} rows/s, server CPU {$bc} s)')"
done
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
python3 - "$results" "$count" "$hwm" <<'PY'
import statistics, sys
runs = [list(map(float, line.split())) for line in open(sys.argv[1])]
rows, hwm = int(sys.argv[2]), int(sys.argv[3])
copy = statistics.median(r[0] for r in runs)
copy_cpu = statistics.median(r[1] for r in runs)
base = statistics.median(r[2] for r in runs)
print(f"median COPY INTO: {rows / copy:,.0f} rows/s ({rows / copy_cpu:,.0f} rows per server CPU second)")
print(f"median CTAS from numbers(): {rows / base:,.0f} rows/s")
print(f"COPY / CTAS rate: {base / copy:.2f}x; server peak RSS {hwm / 1024:,.0f} MiB")
PY
