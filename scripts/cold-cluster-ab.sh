#!/usr/bin/env bash
# A fresh cluster's first lookups, two builds A/B: `bash scripts/cold-cluster-ab.sh OLD NEW [ROWS]`
# loads t10b (ROWS, default 100M) into a fresh MinIO with NEW, then for 10 present keys,
# alternating the builds, starts 4 `sieve worker`s and a coordinator, connects, and times the
# first three lookups on c2 (the key, an absent one, the key again: node filters load in the
# background meanwhile). Prints each build's median per query.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: cold-cluster-ab.sh OLD NEW [ROWS]" >&2; exit 2; }
old=$(realpath "$1"); new=$(realpath "$2")
python3 -c 'import pymysql' 2>/dev/null || pip install --quiet pymysql
source scripts/minio.sh
trap minio_stop EXIT
minio_start
export SIEVE_STORAGE="$SIEVE_TEST_S3_URL/cold-ab"
export SIEVE_CLUSTER_SECRET="cold-ab-$RANDOM$RANDOM$RANDOM"
"$new" load t10b --rows "${3:-100M}" 2>&1 | tail -1
python3 - "$old" "$new" <<'PY'
import socket, statistics, subprocess, sys, time
import pymysql

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    return port

def wait(port):
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close(); return
        except OSError:
            time.sleep(0.01)
    sys.exit(f"nothing listens on {port}")

def query(conn, sql):
    with conn.cursor() as c:
        c.execute(sql); return c.fetchall()

def first_lookups(sieve, key):
    procs, urls = [], []
    for _ in range(4):
        port = free_port()
        procs.append(subprocess.Popen([sieve, "worker", "--port", str(port)], stderr=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}"); wait(port)
    port = free_port()
    procs.append(subprocess.Popen([sieve, "serve", "--port", str(port), "--workers", ",".join(urls)],
                                  stderr=subprocess.DEVNULL))
    wait(port)
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
    times = []
    for k in [key, key + "x", key]:
        t = time.perf_counter(); query(conn, f"select c1 from t10b where c2 = '{k}'")
        times.append((time.perf_counter() - t) * 1000)
    for p in procs: p.kill()
    for p in procs: p.wait()
    return times

builds = sys.argv[1:]
serve_port = free_port()
plain = subprocess.Popen([builds[1], "serve", "--port", str(serve_port)], stderr=subprocess.DEVNULL)
wait(serve_port)
conn = pymysql.connect(host="127.0.0.1", port=serve_port, user="root", autocommit=True)
(count,), = query(conn, "select count(*) from t10b")
keys = [query(conn, f"select c2 from t10b where c1 = {i * count // 10 + 12345}")[0][0] for i in range(10)]
plain.kill(); plain.wait()
results = {b: [] for b in builds}
for key in keys:
    for b in builds:
        results[b].append(first_lookups(b, key))
for b in builds:
    medians = [statistics.median(r[i] for r in results[b]) for i in range(3)]
    print(f"{b}: first / second / third lookup, medians of 10: " + " / ".join(f"{m:.0f} ms" for m in medians))
PY
