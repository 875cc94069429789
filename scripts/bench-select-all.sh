#!/usr/bin/env bash
# Memory of a whole-table read through the MySQL protocol, as the table grows:
# `bash scripts/bench-select-all.sh SIEVE [ROWS…]` (a release build; default sizes 10M 100M).
# For each size: loads t10b into a fresh local directory, starts `sieve serve`, runs
# `mysql -e "select * from t10b" > /dev/null` and prints the wall time, rows/s, the server's CPU
# seconds for it (and rows per server CPU second), the server's peak RSS (VmHWM, a fresh server
# per size) and the mysql client's (it buffers the whole result); then
# the same query through Arrow Flight SQL (ADBC's driver, reading the record batches as they
# come, and the whole result into pandas), in the same server.
set -euo pipefail
sieve="${1:?usage: bench-select-all.sh SIEVE [ROWS…]}"
shift
sizes=("$@")
[ $# -eq 0 ] && sizes=(10M 100M)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
flight_port=$(free_port)
root=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT

for size in "${sizes[@]}"; do
  dir="$root/$size"
  "$sieve" --storage "$dir" load t10b --rows "$size" 2>&1 | tr '\r' '\n' | grep -E '^loaded' || true
  "$sieve" --storage "$dir" serve --port "$port" --flight-port "$flight_port" > "$root/server-$size.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do
    mysql -h127.0.0.1 -P"$port" -uroot -e "select 1" > /dev/null 2>&1 && break
    sleep 0.1
  done
  rows=$(mysql -h127.0.0.1 -P"$port" -uroot -N -B -e "select count(*) from t10b")
  cpu_before=$(awk '{print $14 + $15}' "/proc/$server/stat")
  /usr/bin/time -o "$root/time" -f "%e %M" mysql -h127.0.0.1 -P"$port" -uroot -e "select * from t10b" > /dev/null
  cpu=$(awk -v b="$cpu_before" -v t="$(getconf CLK_TCK)" '{print ($14 + $15 - b) / t}' "/proc/$server/stat")
  read -r secs client_kib < "$root/time"
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
  python3 - "$flight_port" <<'PY'
import sys, time
import adbc_driver_flightsql.dbapi as flight_sql
conn = flight_sql.connect(f"grpc://127.0.0.1:{sys.argv[1]}", db_kwargs={"username": "root", "password": ""}, autocommit=True)
cur = conn.cursor()
start = time.perf_counter()
cur.execute("select * from t10b")
rows = sum(batch.num_rows for batch in cur.fetch_record_batch())
arrow = time.perf_counter() - start
start = time.perf_counter()
cur.execute("select * from t10b")
frame = cur.fetch_df()
pandas = time.perf_counter() - start
print(f"  Flight SQL (ADBC): {rows:,} rows as Arrow batches in {arrow:.2f} s ({rows / arrow:,.0f} rows/s); into pandas {pandas:.2f} s ({len(frame) / pandas:,.0f} rows/s)")
PY
  hwm_after=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
  echo "  server peak RSS after the Flight SQL reads: $((hwm_after / 1024)) MiB"
  kill "$server"; wait "$server" 2>/dev/null || true; server=
  rm -rf "$dir"
  python3 -c "print(f'$size: {$rows:,} rows in {$secs} s ({$rows / $secs:,.0f} rows/s); server CPU {$cpu} s ({$rows / $cpu:,.0f} rows per server CPU second, {$cpu / $secs / 2:.0%} of 2 cores); server peak RSS {$hwm / 1024:,.0f} MiB; mysql client peak RSS {$client_kib / 1024:,.0f} MiB')"
done
