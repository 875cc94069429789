#!/usr/bin/env bash
# The warm fixed cost of a point query no block survives, on a table of many blocks in a fresh
# MinIO: `bash scripts/bench-fixed-cost.sh SIEVE` (a release build). Loads t10b
# (SIEVE_BENCH_ROWS, default 100M) in blocks of SIEVE_BENCH_BLOCK_ROWS (default 100000, so 1000
# blocks), then in one process runs an absent-key query 5 times to warm the caches and 31 times
# each as a plain query and under EXPLAIN ANALYZE. Prints medians: the statement's wall time as
# `sieve sql` reports it, and the scan's snapshot_time (finding the snapshot and its blocks) and
# prune_time (min/max, then every block's filter), with blocks read, which must be 0.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="${1:?usage: bench-fixed-cost.sh SIEVE}"
rows="${SIEVE_BENCH_ROWS:-100M}"
block_rows="${SIEVE_BENCH_BLOCK_ROWS:-100000}"
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_STORAGE="$SIEVE_TEST_S3_URL/fixed-cost"
export SIEVE_SIDECAR_CACHE_MIB="${SIEVE_SIDECAR_CACHE_MIB:-2048}"
"$sieve" load t10b --rows "$rows" --block-rows "$block_rows" 2>&1 | tail -3

query="select c1 from t10b where c2 = '0.5123456789012345'"
{
  for _ in $(seq 5); do echo "$query;"; done
  for _ in $(seq 31); do echo "$query;"; done
  for _ in $(seq 31); do echo "explain analyze $query;"; done
} | "$sieve" sql > /tmp/sieve-fixed-cost.out
python3 - /tmp/sieve-fixed-cost.out <<'PY'
import re, statistics, sys
text = open(sys.argv[1]).read()
walls = [float(s) * 1000 for s in re.findall(r"\(([0-9.]+) sec\)", text)][5:36]
def ms(v):
    n, unit = re.fullmatch(r"([0-9.]+)(ns|µs|ms|s)", v).groups()
    return float(n) * {"ns": 1e-6, "µs": 1e-3, "ms": 1, "s": 1000}[unit]
metric = lambda name: [ms(v) for v in re.findall(name + r"=([0-9.]+(?:ns|µs|ms|s))", text)]
read = set(re.findall(r"blocks_read=(\d+)", text))
total = set(re.findall(r"blocks_total=(\d+)", text))
print(f"blocks total {sorted(total)}, read {sorted(read)}")
print(f"plain query wall, median of {len(walls)}: {statistics.median(walls):.3f} ms")
for name in ["snapshot_time", "prune_time"]:
    values = metric(name)
    print(f"{name}, median of {len(values)}: {statistics.median(values):.3f} ms")
PY
