#!/usr/bin/env bash
# Point queries through workers against one process, on one table in a fresh MinIO:
# `bash scripts/bench-workers.sh SIEVE` (a release build). Loads t10b (SIEVE_BENCH_ROWS, default
# 100M; the issue's figure is 1B), starts SIEVE_BENCH_WORKERS (default 4) `sieve worker`s, a
# coordinator (`sieve serve --workers …`) and a plain `sieve serve` over the same storage, then
# from Python (PyMySQL) measures, warm (each key asked once before):
#   - the median of 50 point queries on c2, present and absent keys, on the plain server and on
#     the coordinator with node filters on and off (`SET sieve.node_filters`);
#   - the workers each query contacts (EXPLAIN ANALYZE's workers=[…]), on and off;
#   - queries/s of present-key lookups from 16 concurrent clients, on each server;
#   - each worker's RSS afterwards (its caches: sidecars, locator pages, footers).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: bench-workers.sh SIEVE" >&2; exit 2; }
sieve=$(realpath "$1")
rows="${SIEVE_BENCH_ROWS:-100M}"
workers="${SIEVE_BENCH_WORKERS:-4}"
source scripts/minio.sh
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; minio_stop; }
trap cleanup EXIT
minio_start
export SIEVE_STORAGE="$SIEVE_TEST_S3_URL/workers"
export SIEVE_SIDECAR_CACHE_MIB="${SIEVE_SIDECAR_CACHE_MIB:-2048}"
"$sieve" load t10b --rows "$rows" 2>&1 | tail -3

urls=""
worker_pids=""
for i in $(seq "$workers"); do
  port=$(free_port)
  "$sieve" worker --port "$port" 2>"/tmp/sieve-bench-worker-$i.log" &
  pids+=($!); worker_pids="$worker_pids $!"
  urls="$urls${urls:+,}http://127.0.0.1:$port"
done
cluster_port=$(free_port); plain_port=$(free_port)
sleep 1
"$sieve" serve --port "$cluster_port" --workers "$urls" 2>/tmp/sieve-bench-coordinator.log &
pids+=($!)
"$sieve" serve --port "$plain_port" 2>/tmp/sieve-bench-plain.log &
pids+=($!)
sleep 2

python3 - "$plain_port" "$cluster_port" "$workers" $worker_pids <<'PY'
import random, re, statistics, sys, threading, time
import pymysql

plain_port, cluster_port, n_workers = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
worker_pids = sys.argv[4:]
connect = lambda port: pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
plain, cluster = connect(plain_port), connect(cluster_port)

def run(conn, sql):
    with conn.cursor() as c:
        c.execute(sql)
        return c.fetchall()

(count,), = run(plain, "select count(*) from t10b")
random.seed(7)
present = [run(plain, f"select c2 from t10b where c1 = {random.randrange(count)}")[0][0] for _ in range(50)]
absent = [f"0.{random.randrange(10**15):015d}x" for _ in range(50)]
lookup = lambda key: f"select c1 from t10b where c2 = '{key}'"

def median_ms(conn, keys):
    for k in keys:  # warm
        run(conn, lookup(k))
    times = []
    for k in keys:
        t = time.perf_counter(); run(conn, lookup(k)); times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)

def contacted(conn, keys):
    counts = []
    for k in keys:
        plan = "".join(str(r) for r in run(conn, "explain analyze " + lookup(k)))
        found = set()
        for part in plan.split("workers=[")[1:]:
            found.update(part[: part.index("]")].split())
        counts.append(len(found))
    return statistics.mean(counts)

# Node filters load in the background on the first lookup: wait until an absent key asks no one.
deadline = time.time() + 600
while contacted(cluster, absent[:1]) and time.time() < deadline:
    time.sleep(1)

rows = []
base_present, base_absent = median_ms(plain, present), median_ms(plain, absent)
rows.append(("one process", base_present, base_absent, "-", "-"))
for setting in ["true", "false"]:
    run(cluster, f"set sieve.node_filters = {setting}")
    p, a = median_ms(cluster, present), median_ms(cluster, absent)
    rows.append((f"{n_workers} workers, node filters {'on' if setting == 'true' else 'off'}",
                 p, a, contacted(cluster, present), contacted(cluster, absent)))
run(cluster, "set sieve.node_filters = true")
print(f"t10b, {count} rows; medians of 50 warm point queries on c2 (ms), and workers contacted per query")
print("| server | present ms | absent ms | ratio to one process (present/absent) | workers per present | per absent |")
print("|---|---|---|---|---|---|")
for name, p, a, cp, ca in rows:
    ratio = f"{p / base_present:.2f} / {a / base_absent:.2f}"
    fmt = lambda v: v if isinstance(v, str) else f"{v:.2f}"
    print(f"| {name} | {p:.2f} | {a:.2f} | {ratio} | {fmt(cp)} | {fmt(ca)} |")

def throughput(port, seconds=10, clients=16):
    done = [0] * clients
    stop = time.time() + seconds
    def client(i):
        conn = connect(port)
        while time.time() < stop:
            run(conn, lookup(present[(i * 7 + done[i]) % len(present)])); done[i] += 1
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads: t.start()
    for t in threads: t.join()
    return sum(done) / seconds

qps_plain, qps_cluster = throughput(plain_port), throughput(cluster_port)
print(f"\npresent-key lookups/s, 16 clients, 10 s: one process {qps_plain:.0f}, "
      f"{n_workers} workers {qps_cluster:.0f} (ratio {qps_cluster / qps_plain:.2f})")
for pid in worker_pids:
    rss = re.search(r"VmRSS:\s+(\d+) kB", open(f"/proc/{pid}/status").read()).group(1)
    print(f"worker pid {pid}: RSS {int(rss) / 1024:.0f} MiB")
PY
grep "node filters loaded" /tmp/sieve-bench-coordinator.log | tail -1
