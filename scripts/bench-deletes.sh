#!/usr/bin/env bash
# Point lookups after a DELETE, cuckoo against binary_fuse8 (seed 000): `bash
# scripts/bench-deletes.sh SIEVE` (a release build). In a fresh MinIO, loads t10b's shape
# (SIEVE_BENCH_ROWS, default 100M) twice, as `t_cuckoo` and `t_binary_fuse8`, starts `sieve
# serve`, and from Python (PyMySQL), per table:
#   - lookups on c2 of 50 keys to be deleted, 50 that stay and 50 absent ones: blocks read per
#     query (EXPLAIN ANALYZE), the median of 50 warm queries (each key asked once before) and of
#     SIEVE_BENCH_COLD (default 15) cold ones (a fresh `sieve sql` process per query, the
#     query's own time), before the DELETE (the baseline), after it and after OPTIMIZE;
#   - deletes 10% of the rows (`c1 % 10 = 0`) and runs OPTIMIZE TABLE, both timed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: bench-deletes.sh SIEVE" >&2; exit 2; }
sieve=$(realpath "$1")
rows="${SIEVE_BENCH_ROWS:-100M}"
python3 -c "import pymysql" 2>/dev/null || python3 -m pip install -q pymysql
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

python3 - "$port" "$sieve" <<'PY'
import os, random, re, statistics, subprocess, sys, time
import pymysql

conn = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", autocommit=True)
sieve, cold_queries = sys.argv[2], int(os.environ.get("SIEVE_BENCH_COLD", "15"))

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

def warm_ms(table, keys):
    for k in keys:  # warm
        run(lookup(table, k))
    times = []
    for k in keys:
        t = time.perf_counter(); run(lookup(table, k)); times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)

def cold_ms(table, keys):
    times = []
    for k in keys[:cold_queries]:
        out = subprocess.run([sieve, "sql", "-e", lookup(table, k)], capture_output=True, text=True, check=True).stdout
        times.append(float(re.findall(r"\(([0-9.]+) sec\)", out)[-1]) * 1000)
    return statistics.median(times)

print("| table | when | keys | blocks read per lookup | median warm ms | median cold ms |")
print("|---|---|---|---|---|---|")
for filter in ["cuckoo", "binary_fuse8"]:
    table = f"t_{filter}"
    (((count,),), _) = run(f"select count(*) from {table}")
    random.seed(11)
    key_of = lambda c1: run(f"select c2 from {table} where c1 = {c1}")[0][0][0]
    doomed = [key_of(random.randrange(count // 10) * 10) for _ in range(50)]
    live = [key_of(random.randrange(count // 10) * 10 + 1) for _ in range(50)]
    absent = [f"0.{random.randrange(10**15):015d}x" for _ in range(50)]
    def measure(when):
        for name, keys in [("deleted", doomed), ("live", live), ("absent", absent)]:
            print(f"| {table} | {when} | {name} | {blocks_read(table, keys):.2f} | {warm_ms(table, keys):.2f} | {cold_ms(table, keys):.1f} |", flush=True)
    measure("before DELETE")
    t = time.perf_counter()
    _, affected = run(f"delete from {table} where c1 % 10 = 0")
    deleting = time.perf_counter() - t
    measure("after DELETE")
    t = time.perf_counter()
    ((optimized,), _) = run(f"optimize table {table}")
    optimizing = time.perf_counter() - t
    measure("after OPTIMIZE")
    print(f"{table}: DELETE of {affected} of {count} rows {deleting:.1f} s; OPTIMIZE {optimizing:.1f} s, "
          f"answered (blocks_removed, blocks_written, rows_written, rows_purged, sidecars_rebuilt) = {optimized}", flush=True)
PY
