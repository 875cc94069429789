#!/usr/bin/env bash
# Point queries through workers against one process, on one table in a fresh MinIO:
# `bash scripts/bench-workers.sh SIEVE` (a release build). Loads t10b (SIEVE_BENCH_ROWS, default
# 100M; the issue's figure is 1B), then from Python (PyMySQL), on c2 with 50 present and 50 absent
# keys, against SIEVE_BENCH_WORKERS (default 4) `sieve worker`s under a coordinator (`sieve serve
# --workers …`) and a plain `sieve serve`, all over the same storage:
#   - warm: the median of 50 point queries (each key asked once before), on the plain server and
#     on the coordinator with node filters on and off (`SET sieve.node_filters`), and the workers
#     each query contacts (EXPLAIN ANALYZE's workers_contacted);
#   - CPU per query: each process's user+system time (/proc/PID/stat) over 100 more warm queries,
#     divided by 100 — what N machines would each spend, which 2 shared cores cannot show;
#   - each worker's index cache (EXPLAIN ANALYZE VERBOSE's index_cache_bytes per task) against the
#     plain server's, and queries/s from 16 concurrent clients on each server;
#   - cold: 15 present and 15 absent keys, each on freshly started processes (a plain server, or
#     the workers and a coordinator), timing the one query after the client has connected.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: bench-workers.sh SIEVE" >&2; exit 2; }
sieve=$(realpath "$1")
rows="${SIEVE_BENCH_ROWS:-100M}"
workers="${SIEVE_BENCH_WORKERS:-4}"
python3 -c 'import pymysql' 2>/dev/null || pip install --quiet pymysql
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_STORAGE="$SIEVE_TEST_S3_URL/workers"
export SIEVE_SIDECAR_CACHE_MIB="${SIEVE_SIDECAR_CACHE_MIB:-2048}"
# Room for every group's filter at 1B rows (4.2 GB measured for c1 and c2).
export SIEVE_NODE_FILTER_MIB="${SIEVE_NODE_FILTER_MIB:-8192}"
export SIEVE_CLUSTER_SECRET="bench-workers-$RANDOM$RANDOM$RANDOM"
"$sieve" load t10b --rows "$rows" 2>&1 | tail -3

python3 - "$sieve" "$workers" <<'PY'
import os, random, re, socket, statistics, subprocess, sys, threading, time
import pymysql

sieve, n_workers = sys.argv[1], int(sys.argv[2])
TICK = os.sysconf("SC_CLK_TCK")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    return port

def wait_port(port, proc, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{proc.args} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close(); return
        except OSError:
            time.sleep(0.02)
    sys.exit(f"{proc.args} did not listen on {port}")

class Processes:
    """A plain server, or workers and a coordinator over them; stopped by stop()."""
    def __init__(self, n_workers):
        self.procs, self.workers = [], []
        log = lambda name: open(f"/tmp/sieve-bench-{name}.log", "a")
        urls = []
        for i in range(n_workers):
            port = free_port()
            p = subprocess.Popen([sieve, "worker", "--port", str(port)], stderr=log(f"worker-{i}"))
            self.procs.append(p); self.workers.append(p); urls.append(f"http://127.0.0.1:{port}")
            wait_port(port, p)
        self.port = free_port()
        args = [sieve, "serve", "--port", str(self.port)] + (["--workers", ",".join(urls)] if urls else [])
        self.server = subprocess.Popen(args, stderr=log("coordinator" if urls else "plain"))
        self.procs.append(self.server)
        wait_port(self.port, self.server)
    def connect(self):
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", autocommit=True)
    def stop(self):
        for p in self.procs: p.kill()
        for p in self.procs: p.wait()

def run(conn, sql):
    with conn.cursor() as c:
        c.execute(sql)
        return c.fetchall()

def cpu_seconds(proc):
    fields = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime

def metric(plan, name):
    """A counter or gauge of the scan, summed ("1.23 K" style values included)."""
    total = 0.0
    for value in re.findall(rf"[ \[]{name}=([0-9.]+(?: [KMGT])?)", plan):
        number, _, unit = value.partition(" ")
        total += float(number) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[unit]
    return total

plain, cluster = Processes(0), Processes(n_workers)
plain_conn, cluster_conn = plain.connect(), cluster.connect()
(count,), = run(plain_conn, "select count(*) from t10b")
random.seed(7)
present = [run(plain_conn, f"select c2 from t10b where c1 = {random.randrange(count)}")[0][0] for _ in range(50)]
absent = [f"0.{random.randrange(10**15):015d}x" for _ in range(50)]
lookup = lambda key: f"select c1 from t10b where c2 = '{key}'"
explain = lambda conn, key, verbose="": "\n".join(
    str(col) for row in run(conn, f"explain analyze {verbose} " + lookup(key)) for col in row)

def median_ms(conn, keys):
    for k in keys:  # warm
        run(conn, lookup(k))
    times = []
    for k in keys:
        t = time.perf_counter(); run(conn, lookup(k)); times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)

def contacted(conn, keys):
    return statistics.mean(metric(explain(conn, k), "workers_contacted") for k in keys)

def cpu_ms_per_query(conn, procs, keys, rounds=2):
    before = [cpu_seconds(p) for p in procs]
    for _ in range(rounds):
        for k in keys: run(conn, lookup(k))
    n = rounds * len(keys)
    return [(cpu_seconds(p) - b) * 1000 / n for p, b in zip(procs, before)]

# Node filters load in the background on the first lookup: wait until an absent key asks no one.
deadline = time.time() + 900
while contacted(cluster_conn, absent[:1]) and time.time() < deadline:
    time.sleep(1)

print(f"t10b, {count} rows; {n_workers} workers; medians of 50 warm point queries on c2 (ms), workers contacted per query")
print("| server | present ms | absent ms | ratio to one process (present / absent) | workers per present | per absent |")
print("|---|---|---|---|---|---|")
base_present, base_absent = median_ms(plain_conn, present), median_ms(plain_conn, absent)
print(f"| one process | {base_present:.2f} | {base_absent:.2f} | 1 / 1 | - | - |")
for setting in ["true", "false"]:
    run(cluster_conn, f"set sieve.node_filters = {setting}")
    p, a = median_ms(cluster_conn, present), median_ms(cluster_conn, absent)
    print(f"| {n_workers} workers, node filters {'on' if setting == 'true' else 'off'} | {p:.2f} | {a:.2f} "
          f"| {p / base_present:.2f} / {a / base_absent:.2f} "
          f"| {contacted(cluster_conn, present):.2f} | {contacted(cluster_conn, absent):.2f} |")
run(cluster_conn, "set sieve.node_filters = true")

print("\nCPU ms per warm query (user+system, 100 queries each)")
print("| keys | one process | coordinator | workers (each) | workers (sum) |")
print("|---|---|---|---|---|")
for name, keys in [("present", present), ("absent", absent)]:
    (one,) = cpu_ms_per_query(plain_conn, [plain.server], keys)
    *each, coordinator = cpu_ms_per_query(cluster_conn, cluster.workers + [cluster.server], keys)
    print(f"| {name} | {one:.2f} | {coordinator:.2f} | {' / '.join(f'{w:.2f}' for w in each)} | {sum(each):.2f} |")

# Every owner asked (node filters off), so each task reports its worker's cache.
run(cluster_conn, "set sieve.node_filters = false")
plan = explain(cluster_conn, present[0], "verbose")
run(cluster_conn, "set sieve.node_filters = true")
urls = dict(re.findall(r"t(\d+): SieveScanExec: [^\n]*?workers=\[(\S+)\]", plan))
cache = {task: metric(f" index_cache_bytes={value}", "index_cache_bytes")
         for task, value in re.findall(r"index_cache_bytes=\{(\d+):([0-9.]+(?: [KMGT])?)\}", plan)}
plain_cache = metric(explain(plain_conn, present[0]), "index_cache_bytes")
print(f"\nindex cache after the warm runs: one process {plain_cache / 2**20:.1f} MiB; "
      + ", ".join(f"worker {url} {cache.get(task, 0) / 2**20:.1f} MiB" for task, url in sorted(urls.items())))

def throughput(port, seconds=10, clients=16):
    done = [0] * clients
    stop = time.time() + seconds
    def client(i):
        conn = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
        while time.time() < stop:
            run(conn, lookup(present[(i * 7 + done[i]) % len(present)])); done[i] += 1
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads: t.start()
    for t in threads: t.join()
    return sum(done) / seconds

qps_plain, qps_cluster = throughput(plain.port), throughput(cluster.port)
print(f"\npresent-key lookups/s, 16 clients, 10 s: one process {qps_plain:.0f}, "
      f"{n_workers} workers {qps_cluster:.0f} (ratio {qps_cluster / qps_plain:.2f})")
for i, w in enumerate(cluster.workers):
    rss = re.search(r"VmRSS:\s+(\d+) kB", open(f"/proc/{w.pid}/status").read()).group(1)
    print(f"worker {i}: RSS {int(rss) / 1024:.0f} MiB")
plain.stop(); cluster.stop()

def cold_ms(n, keys):
    times = []
    for k in keys:
        procs = Processes(n)
        conn = procs.connect()
        t = time.perf_counter(); run(conn, lookup(k)); times.append((time.perf_counter() - t) * 1000)
        procs.stop()
    return statistics.median(times)

print("\ncold: medians of 15 queries, each on freshly started processes (ms)")
print("| keys | one process | workers + coordinator | ratio |")
print("|---|---|---|---|")
for name, keys in [("present", present[:15]), ("absent", absent[:15])]:
    one, many = cold_ms(0, keys), cold_ms(n_workers, keys)
    print(f"| {name} | {one:.0f} | {many:.0f} | {many / one:.2f} |")
PY
grep "node filters loaded" /tmp/sieve-bench-coordinator.log | tail -1
