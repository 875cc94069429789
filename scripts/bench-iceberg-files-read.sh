#!/usr/bin/env bash
# The data files each build's lookups read on one attached Iceberg table (issue 51): counts,
# not timings, so false reads of an index show whatever the machine does meanwhile.
# `bash scripts/bench-iceberg-files-read.sh SIEVE...` (release builds). In one fresh MinIO,
# PyIceberg writes t10b (scripts/serving/pyiceberg_t10b.py: SIEVE_BENCH_ROWS, default 10M;
# SIEVE_BENCH_FILE_BYTES, PyIceberg's target file size, default 30000: ~10,000 files of ~1,000
# rows). Then per build: a fresh server on storage of its own attaches the catalog, runs
# CREATE INDEX on c2 (binary_fuse16), and sums EXPLAIN ANALYZE's blocks_read (data files read)
# over 1,000 absent keys and the 1,000 present ones.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: bench-iceberg-files-read.sh SIEVE..." >&2; exit 2; }
source scripts/serving/measure.sh
source scripts/minio.sh
work=$(mktemp -d); server=
cleanup() { [ -n "$server" ] && { kill "$server" 2>/dev/null || true; }; minio_stop; rm -rf "$work"; }
trap cleanup EXIT
minio_start
SIEVE_BENCH_FILE_BYTES="${SIEVE_BENCH_FILE_BYTES:-30000}" python3 scripts/serving/pyiceberg_t10b.py \
  "$work" s3://sieve-test/lake "${SIEVE_BENCH_ROWS:-10M}" 10000000000 1000
# Absent keys: t10b's c2 is a double as text, so none ends in "x".
python3 -c 'import random; random.seed(7); print("\n".join(f"{random.random()}x" for _ in range(1000)))' \
  > "$work/absent.keys"
for sieve in "$@"; do
  name=$(basename "$sieve")
  port=$(free_port)
  "$sieve" --storage "s3://sieve-test/sieve-$name" --config "$work/sieve.toml" serve --port "$port" \
    >>"$work/serve.log" 2>&1 &
  server=$!
  wait_for_port "$port"
  mysql -h127.0.0.1 -P"$port" -uroot -N -e "create index ix_c2 on lake.ns.t10b (c2) using binary_fuse16" >/dev/null
  python3 - "$port" "$name" "$work/absent.keys" "$work/attached-present.keys" <<'PY'
import re, sys
import pymysql
cur = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", autocommit=True).cursor()
cur.execute("set sieve.lookup_cache = false")
for kind, path in (("absent", sys.argv[3]), ("present", sys.argv[4])):
    keys, read = open(path).read().split(), 0
    for key in keys:
        cur.execute("explain analyze select c1 from lake.ns.t10b where c2 = %s", (key,))
        read += sum(int(n) for r in cur.fetchall() for n in re.findall(r"blocks_read=(\d+)", str(r)))
    print(f"{sys.argv[2]}: {read} data files read by {len(keys)} {kind} keys")
PY
  kill "$server"; wait "$server" 2>/dev/null || true; server=
done
