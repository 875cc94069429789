#!/usr/bin/env bash
# Point lookups after a DELETE, cuckoo against binary_fuse8 (seed 000): `bash
# scripts/bench-deletes.sh SIEVE` (a release build). In a fresh MinIO, loads t10b's shape
# (SIEVE_BENCH_ROWS, default 100M) twice, as `t_cuckoo` and `t_binary_fuse8`, starts `sieve
# serve`, and from Python (PyMySQL), per table:
#   - deletes 10% of the rows (`c1 % 10 = 0`), timed, with the affected row count;
#   - lookups on c2 of 50 deleted keys, 50 live keys and 50 absent keys: blocks read per query
#     (EXPLAIN ANALYZE) and the median of 50 warm queries (each key asked once before);
#   - the same deleted keys before the DELETE, as the baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: bench-deletes.sh SIEVE" >&2; exit 2; }
sieve=$(realpath "$1")
rows="${SIEVE_BENCH_ROWS:-100M}"
source scripts/minio.sh
server=""
trap '[ -n "$server" ] && kill "$server"; minio_stop' EXIT
minio_start
export SIEVE_STORAGE="$SIEVE_TEST_S3_URL/deletes"
export SIEVE_SIDECAR_CACHE_MIB="${SIEVE_SIDECAR_CACHE_MIB:-2048}"
for filter in cuckoo binary_fuse8; do
  "$sieve" load "t_$filter" --rows "$rows" --filter "$filter" 2>&1 | tail -1
done
port=$(free_port)
"$sieve" serve --port "$port" 2>/tmp/sieve-bench-deletes.log &
server=$!
sleep 2

python3 - "$port" <<'PY'
import random, re, statistics, sys, time
import pymysql

conn = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", autocommit=True)

def run(sql):
    with conn.cursor() as c:
        c.execute(sql)
        return c.fetchall(), c.rowcount

lookup = lambda table, key: f"select c1 from {table} where c2 = '{key}'"

def blocks_read(table, keys):
    counts = []
    for k in keys:
        plan = "".join(str(r) for r in run("explain analyze " + lookup(table, k))[0])
        counts.append(sum(int(n) for n in re.findall(r"(\d+) read", plan)))
    return statistics.mean(counts)

def median_ms(table, keys):
    for k in keys:  # warm
        run(lookup(table, k))
    times = []
    for k in keys:
        t = time.perf_counter(); run(lookup(table, k)); times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)

print("| table | keys | blocks read per lookup | median warm ms |")
print("|---|---|---|---|")
for filter in ["cuckoo", "binary_fuse8"]:
    table = f"t_{filter}"
    (((count,),), _) = run(f"select count(*) from {table}")
    random.seed(11)
    key_of = lambda c1: run(f"select c2 from {table} where c1 = {c1}")[0][0][0]
    doomed = [key_of(random.randrange(count // 10) * 10) for _ in range(50)]
    live = [key_of(random.randrange(count // 10) * 10 + 1) for _ in range(50)]
    absent = [f"0.{random.randrange(10**15):015d}x" for _ in range(50)]
    print(f"| {table} | to be deleted, before | {blocks_read(table, doomed):.2f} | {median_ms(table, doomed):.2f} |")
    t = time.perf_counter()
    _, affected = run(f"delete from {table} where c1 % 10 = 0")
    took = time.perf_counter() - t
    for name, keys in [("deleted", doomed), ("live", live), ("absent", absent)]:
        print(f"| {table} | {name} | {blocks_read(table, keys):.2f} | {median_ms(table, keys):.2f} |")
    print(f"| {table} | DELETE of {affected} of {count} rows | | {took * 1000:.0f} |")
PY
