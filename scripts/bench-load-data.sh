#!/usr/bin/env bash
# LOAD DATA LOCAL INFILE through the stock mysql client: `bash scripts/bench-load-data.sh SIEVE`
# (a release build). Writes a CSV of SIEVE_BENCH_ROWS (default 10M) t10b-shaped rows
# (`c1,c2`: a number and a random decimal as text), serves a fresh local directory with
# `sieve serve`, and loads the file SIEVE_BENCH_RUNS (default 3) times into a new table
# `(c1 bigint, c2 varchar)` each, with `mysql --local-infile=1`. The baseline, in the same server
# right after each load: the same number of rows made inside the server by
# `create table … as select number as c1, cast(rand() as string) as c2 from numbers(N)` (no file,
# no parsing). Prints per run the wall time, rows/s and the server's CPU seconds (user + system
# from /proc), then the medians, the ratio of the two rates and the server's peak RSS.
set -euo pipefail
sieve="$(realpath "${1:?usage: bench-load-data.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-10000000}"
runs="${SIEVE_BENCH_RUNS:-3}"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
root=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT

awk -v n="$rows" 'BEGIN { srand(42); for (i = 0; i < n; i++) printf "%d,%.16f\n", i, rand() }' > "$root/rows.csv"
echo "file: $rows rows, $(du -m "$root/rows.csv" | cut -f1) MB"

"$sieve" --storage "$root/data" serve --port "$port" > "$root/server.log" 2>&1 &
server=$!
for _ in $(seq 300); do
  mysql -h127.0.0.1 -P"$port" -uroot -e "select 1" > /dev/null 2>&1 && break
  sleep 0.1
done
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
ticks=$(getconf CLK_TCK)
# Runs statement $2 as run $1; prints "seconds cpu_seconds".
timed() {
  local before after start end
  before=$(cpu); start=$(date +%s.%N)
  mysql -h127.0.0.1 -P"$port" -uroot --local-infile=1 -e "$2" > /dev/null
  end=$(date +%s.%N); after=$(cpu)
  python3 -c "print(f'{$end - $start:.3f} {($after - $before) / $ticks:.2f}')"
}
results="$root/results"
for run in $(seq "$runs"); do
  load=$(timed "$run" "create table t$run (c1 bigint, c2 varchar); load data local infile '$root/rows.csv' into table t$run fields terminated by ','")
  base=$(timed "$run" "create table b$run as select number as c1, cast(rand() as string) as c2 from numbers($rows)")
  loaded=$(mysql -h127.0.0.1 -P"$port" -uroot -N -B -e "select count(*) from t$run")
  [ "$loaded" = "$rows" ] || { echo "run $run loaded $loaded rows, not $rows" >&2; exit 1; }
  echo "$load $base" >> "$results"
  read -r ls lc bs bc <<< "$load $base"
  python3 -c "print(f'run $run: LOAD DATA {$ls} s ({$rows / $ls:,.0f} rows/s, server CPU {$lc} s); CTAS from numbers() {$bs} s ({$rows / $bs:,.0f} rows/s, server CPU {$bc} s)')"
done
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
python3 - "$results" "$rows" "$hwm" <<'PY'
import statistics, sys
runs = [list(map(float, line.split())) for line in open(sys.argv[1])]
rows, hwm = int(sys.argv[2]), int(sys.argv[3])
load = statistics.median(r[0] for r in runs)
load_cpu = statistics.median(r[1] for r in runs)
base = statistics.median(r[2] for r in runs)
print(f"median LOAD DATA: {rows / load:,.0f} rows/s ({rows / load_cpu:,.0f} rows per server CPU second)")
print(f"median CTAS from numbers(): {rows / base:,.0f} rows/s")
print(f"LOAD DATA / CTAS rate: {base / load:.2f}x; server peak RSS {hwm / 1024:,.0f} MiB")
PY
