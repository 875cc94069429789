#!/usr/bin/env bash
# CREATE INDEX over an attached Iceberg table: `bash scripts/bench-iceberg-index.sh SIEVE` (a
# release build). PyIceberg writes a t10b-shaped table (c1 bigint = row number, c2 = a random
# decimal as text) of SIEVE_BENCH_ROWS rows (default 20M) in files of SIEVE_BENCH_FILE_ROWS
# (default 2M) into a local warehouse; a server attaches its catalog (the indexer idle) and runs,
# SIEVE_BENCH_RUNS times (default 3) each: CREATE INDEX on c1, on c2 (then dropped), and the
# baseline, a scan reading the same column in the same server (`select count(distinct cN)`
# reads and hashes it too, but builds no filter). Prints each run's wall time and server CPU
# seconds (user + system from /proc), then the medians as rows per server CPU second (the
# issue's target: 2M rows/s per core) and the ratio to the scan, and the server's peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-iceberg-index.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-20000000}"
file_rows="${SIEVE_BENCH_FILE_ROWS:-2000000}"
runs="${SIEVE_BENCH_RUNS:-3}"
source scripts/minio.sh  # free_port, wait_for_port
root=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT
python3 - "$root" "$rows" "$file_rows" <<'PY'
import sys
import numpy as np
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
root, rows, file_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
catalog = SqlCatalog("writers", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
catalog.create_namespace("ns")
schema = pa.schema([pa.field("c1", pa.int64()), pa.field("c2", pa.string())])
table = catalog.create_table("ns.t10b", schema=schema)
rng = np.random.default_rng(42)
for first in range(0, rows, file_rows):
    n = min(file_rows, rows - first)
    c2 = pa.array(rng.random(n).astype(str))
    table.append(pa.table({"c1": pa.array(np.arange(first, first + n), pa.int64()), "c2": c2}))
files = len(table.scan().plan_files())
print(f"table: {rows:,} rows in {files} files")
PY
cat > "$root/sieve.toml" <<TOML
[[iceberg_catalogs]]
name = "lake"
uri = "sqlite://$root/catalog.db"
catalog_name = "writers"
warehouse = "file://$root"
index_interval_s = 86400
TOML
port=$(free_port)
"$sieve" --storage "$root/data" --config "$root/sieve.toml" serve --port "$port" > "$root/server.log" 2>&1 &
server=$!
wait_for_port "$port"
ticks=$(getconf CLK_TCK)
results=$(mktemp)
timed() {
  local before after start end
  before=$(awk '{print $14 + $15}' "/proc/$server/stat"); start=$(date +%s.%N)
  mysql -h127.0.0.1 -P"$port" -uroot -e "$1" > /dev/null
  end=$(date +%s.%N); after=$(awk '{print $14 + $15}' "/proc/$server/stat")
  python3 -c "print(f'{$end - $start:.3f} {($after - $before) / $ticks:.2f}')"
}
for run in $(seq "$runs"); do
  for column in c1 c2; do
    built=$(timed "create index ix_$column on lake.ns.t10b ($column)")
    scan=$(timed "select count(distinct $column) from lake.ns.t10b")
    mysql -h127.0.0.1 -P"$port" -uroot -e "drop index ix_$column on lake.ns.t10b"
    echo "$column $built $scan" >> "$results"
    read -r bw bc sw sc <<< "$built $scan"
    python3 -c "print(f'run $run, $column: CREATE INDEX {$bw} s (server CPU {$bc} s, {$rows / $bc:,.0f} rows per CPU s); scan {$sw} s (server CPU {$sc} s)')"
  done
done
python3 - "$results" "$rows" "$(awk '/VmHWM/ {print $2}' "/proc/$server/status")" <<'PY'
import statistics, sys
runs = [line.split() for line in open(sys.argv[1])]
rows, hwm = int(sys.argv[2]), int(sys.argv[3])
for column in ["c1", "c2"]:
    mine = [list(map(float, r[1:])) for r in runs if r[0] == column]
    wall, cpu = statistics.median(r[0] for r in mine), statistics.median(r[1] for r in mine)
    scan_cpu = statistics.median(r[3] for r in mine)
    print(f"median CREATE INDEX on {column}: {rows / wall:,.0f} rows/s, {rows / cpu:,.0f} rows per server "
          f"CPU second; CPU {cpu / scan_cpu:.2f}x the scan's ({scan_cpu:.2f} s)")
print(f"server peak RSS {hwm / 1024:,.0f} MiB")
PY
rm -f "$results"
