#!/usr/bin/env bash
# The warm fixed cost of a point query no block survives, on a table of many blocks in a fresh
# MinIO: `bash scripts/bench-fixed-cost.sh SIEVE [SIEVE…]` (release builds that read one format;
# each is measured in turn on the same table, for before/after). Loads t10b
# (SIEVE_BENCH_ROWS, default 100M) in blocks of SIEVE_BENCH_BLOCK_ROWS (default 100000, so 1000
# blocks) with binary_fuse16 filters (FPR 0.0015%, so that no block survives), then in one process runs an absent-key query 5 times to warm the caches and 31 times
# each as a plain query and under EXPLAIN ANALYZE. Prints medians: the statement's wall time as
# `sieve sql` reports it, and the scan's snapshot_time (finding the snapshot and its blocks) and
# prune_time (min/max, then every block's filter), with blocks read, which must be 0.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench-fixed-cost.sh SIEVE [SIEVE…]" >&2; exit 2; }
rows="${SIEVE_BENCH_ROWS:-100M}"
block_rows="${SIEVE_BENCH_BLOCK_ROWS:-100000}"
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_STORAGE="$SIEVE_TEST_S3_URL/fixed-cost"
export SIEVE_SIDECAR_CACHE_MIB="${SIEVE_SIDECAR_CACHE_MIB:-2048}"
"${@: -1}" load t10b --rows "$rows" --block-rows "$block_rows" --filter binary_fuse16 2>&1 | tail -3

query="select c1 from t10b where c2 = '0.5123456789012345'"
for sieve in "$@"; do
echo "== $sieve"
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
blocks = sorted(set(re.findall(r"blocks=(\d+) total, .*?, (\d+) read", text)))
print(f"(blocks total, read) over the EXPLAIN ANALYZE runs: {blocks}")
print(f"plain query wall, median of {len(walls)}: {statistics.median(walls):.3f} ms")
for name in ["snapshot_time", "prune_time"]:
    values = metric(name)
    print(f"{name}, median of {len(values)}: {statistics.median(values):.3f} ms")
PY
done
