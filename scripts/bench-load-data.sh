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
source "$(dirname "$0")/bench-against-ctas.sh"
against_ctas "$port" "$server" "$rows" "LOAD DATA" \
  "create table {t} (c1 bigint, c2 varchar); load data local infile '$root/rows.csv' into table {t} fields terminated by ','"
