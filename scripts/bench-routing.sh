#!/usr/bin/env bash
# Routing filters at scale: `bash scripts/bench-routing.sh SIEVE` loads t10b (SIEVE_BENCH_ROWS,
# default 100M; SIEVE_BENCH_BLOCK_ROWS, default 1M; locator groups of 128M rows) into a fresh
# MinIO with `sieve load` (which merges locator groups as it commits, if any are to merge), serves it with `sieve serve`, waits for the routing filters to load, then runs
# point lookups on c2 over one MySQL connection (PyMySQL, text protocol), keys uniform over the
# table, present and absent, with `SET sieve.routing` on and off alternating per key (routing off
# is the baseline, in the same run):
#   - per lookup from EXPLAIN ANALYZE: locator groups probed, index bytes fetched, prune_time;
#   - lookups/s over SIEVE_BENCH_QUERIES (default 500) lookups per case, and the server's CPU
#     per lookup (user + system from /proc over the case);
#   - the load's rows/s and max RSS, the groups left, the routing filters' memory (from the log).
# All of it twice: serving with no disk cache (every locator page not in memory is a ranged GET
# to MinIO), then, restarted, with `--disk-cache` (the routing filters' load keeps each
# locator's pages on local disk, where lookups read them).
# Keep the machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-routing.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-100M}"
block_rows="${SIEVE_BENCH_BLOCK_ROWS:-1M}"
queries="${SIEVE_BENCH_QUERIES:-500}"
source scripts/minio.sh
work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; minio_stop; rm -rf "$work"; }
trap cleanup EXIT
minio_start
storage="s3://sieve-test/routing"

/usr/bin/time -f "load max RSS %M KiB" "$sieve" --storage "$storage" load t10b --rows "$rows" \
  --block-rows "$block_rows" 2>&1 \
  | grep -E "loaded|locator groups|index c2 locator|max RSS"

cat > "$work/measure.py" <<'EOF'
import random, re, statistics, sys, time
import pymysql

port, pid, rows_text, queries = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
scale = {"k": 10**3, "M": 10**6, "B": 10**9}
rows = int(float(rows_text[:-1]) * scale[rows_text[-1]]) if rows_text[-1] in scale else int(rows_text)
conn = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
cur = conn.cursor()

def one(sql):
    cur.execute(sql)
    return cur.fetchall()

def cpu():
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in s (USER_HZ 100)

def metric(plan, name):
    found = re.findall(rf"{name}=([0-9.]+)\s*([A-Za-zµ]*)", plan)
    if not found:
        return 0.0
    value, unit = found[0]
    value = float(value)
    return value * {"K": 1e3, "M": 1e6, "ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1, "s": 1e3}.get(unit, 1)

random.seed(7)
present = [one(f"select c2 from t10b where c1 = {random.randrange(rows)}")[0][0] for _ in range(queries)]
absent = [f"{random.random()}x" for _ in range(queries)]
# Keys of their own for EXPLAIN ANALYZE, per case: what a lookup of a key not looked up before
# reads (the timed keys' locator pages are cached by then).
fresh = {
    (kind, routing): [
        one(f"select c2 from t10b where c1 = {random.randrange(rows)}")[0][0]
        if kind == "present" else f"{random.random()}x"
        for _ in range(50)
    ]
    for kind in ("present", "absent")
    for routing in ("true", "false")
}

# Wait for the routing filters (loaded in the background on the first lookup).
deadline = time.time() + 600
while True:
    one("set sieve.routing = true")
    plan = "\n".join(str(r) for r in one(f"explain analyze select c1 from t10b where c2 = '{absent[0]}'"))
    if metric(plan, "locator_groups_probed") == 0 or time.time() > deadline:
        break
    time.sleep(1)

print(f"| keys | routing | lookups/s | p50 ms | CPU ms/lookup | groups probed | index fetched | prune_time ms |")
print("|---|---|---|---|---|---|---|---|")
for kind, keys in (("present", present), ("absent", absent)):
    for routing in ("true", "false"):
        one(f"set sieve.routing = {routing}")
        times, c0, t0 = [], cpu(), time.time()
        for key in keys:
            start = time.perf_counter()
            one(f"select c1 from t10b where c2 = '{key}'")
            times.append(time.perf_counter() - start)
        elapsed, used = time.time() - t0, cpu() - c0
        probed, index, prune = [], [], []
        for key in fresh[(kind, routing)]:
            plan = "\n".join(str(r) for r in one(f"explain analyze select c1 from t10b where c2 = '{key}'"))
            probed.append(metric(plan, "locator_groups_probed"))
            index.append(metric(plan, "index_bytes_fetched"))
            prune.append(metric(plan, "prune_time"))
        print(f"| {kind} | {'on' if routing == 'true' else 'off'} | {len(keys) / elapsed:.0f} | "
              f"{statistics.median(times) * 1000:.2f} | {used / len(keys) * 1000:.2f} | "
              f"{statistics.mean(probed):.2f} | {statistics.median(index) / 1000:.1f} KB | "
              f"{statistics.median(prune):.2f} |")
EOF

# $1: what the pass is; the rest: flags for `sieve serve`.
measure() {
  local what=$1
  shift
  port=$(free_port)
  RUST_LOG=info "$sieve" --storage "$storage" "$@" serve --port "$port" >"$work/serve.log" 2>&1 &
  server=$!
  wait_for_port "$port"
  echo "### $what"
  python3 "$work/measure.py" "$port" "$server" "$rows" "$queries"
  grep -E "routing filters loaded" "$work/serve.log" | tail -1
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=""
}
measure "locator pages from MinIO (no disk cache)"
measure "with --disk-cache (locator pages on local disk)" --disk-cache "$work/disk-cache"
du -sh "$work/disk-cache"
