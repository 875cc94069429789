#!/usr/bin/env bash
# Served point lookups over the MySQL protocol, measured with sysbench (Debian's package; installed
# if missing): `bash scripts/bench-serving.sh SIEVE` loads t10b (SIEVE_BENCH_ROWS, default 100M)
# into a fresh MinIO with `sieve load`, serves it with `sieve serve`, and runs
# scripts/serving/lookup.lua (one server-side prepared `select c1 from t10b where c2 = ?` per
# connection, keys drawn from a file) for SIEVE_BENCH_SECONDS (default 10) per run at each of
# SIEVE_BENCH_THREADS (default "1 16 64") connections, over:
#   - hot present: 1000 keys of the table; hot absent: 1000 keys not in it;
#   - uniform present: 20000 keys drawn uniformly over the table, with kept lookup results off
#     (`set sieve.lookup_cache = false`), so each lookup reads its pages (from the data cache
#     when an earlier lookup read them).
#   - hot present text: the hot present keys as text queries; its baseline is the same server
#     with `set sieve.text_lookups = false` (every text parsed), not the full path.
# SIEVE_BENCH_KEYS (default "hot-present hot-absent uniform-present") chooses among them. Each
# run is made with the short path and the caches on and, right after it in the same server, off
# (`set sieve.short_path = false; set sieve.data_cache = false`: the full path, the baseline),
# and reports lookups/s, p95 latency,
# the server's CPU per lookup (user + system from /proc), MinIO's requests per lookup (its
# Prometheus counters, read 12 s after a run) and the bytes the server's GETs fetched per lookup
# (its own `sieve_object_store_transferred_bytes_total{operation="get"}`, from --metrics-port),
# then the ratios. The client runs on the same cores; keep the machine
# otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-serving.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-100M}"
seconds="${SIEVE_BENCH_SECONDS:-10}"
threads_list="${SIEVE_BENCH_THREADS:-1 16 64}"
key_sets="${SIEVE_BENCH_KEYS:-hot-present hot-absent uniform-present}"
if ! command -v sysbench >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq sysbench; } >/dev/null
fi
export MINIO_PROMETHEUS_AUTH_TYPE=public
source scripts/minio.sh
work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; minio_stop; rm -rf "$work"; }
trap cleanup EXIT
minio_start
storage="s3://sieve-test/serving"

"$sieve" --storage "$storage" load t10b --rows "$rows" 2>&1 | grep -E "loaded|locator groups|c2 locator"

port=$(free_port)
metrics_port=$(free_port)
# sysbench opens all its connections at once from one address: more than the login throttle
# lets wait by default (16 per address), with caching_sha2_password's first logins slow.
printf 'max_pending_logins = 256\nmax_pending_logins_per_address = 256\n' >"$work/sieve.toml"
RUST_LOG=info "$sieve" --storage "$storage" --config "$work/sieve.toml" serve --port "$port" \
  --metrics-port "$metrics_port" >"$work/serve.log" 2>&1 &
server=$!
wait_for_port "$port"

# The key files, and the routing filters loaded (in the background, from the first lookup).
python3 - "$port" "$rows" "$work" "$key_sets" <<'PY'
import random, re, sys, time
import pymysql

port, rows_text, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]
scale = {"k": 10**3, "M": 10**6, "B": 10**9}
rows = int(float(rows_text[:-1]) * scale[rows_text[-1]]) if rows_text[-1] in scale else int(rows_text)
cur = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True).cursor()

def present(n):
    # One point lookup per key: at 1B rows an IN list of 500 c1 keys took 11-14 s.
    keys = []
    for _ in range(n):
        cur.execute("select c2 from t10b where c1 = %d" % random.randrange(rows))
        keys += [r[0] for r in cur.fetchall()]
    return keys

# Only the key sets this run asks for: 20,000 uniform lookups take minutes at 1B rows. Each set
# has its own seed, so a set's keys do not depend on which others are drawn.
wanted = set(sys.argv[4].replace("hot-present-text", "hot-present").split())
wanted.add("hot-absent")  # the routing filters' readiness is checked with one of them
draw = {
    "hot-present": lambda: present(1000),
    "hot-absent": lambda: [f"{random.random()}x" for _ in range(1000)],
    "uniform-present": lambda: present(20000),
}
files = {}
for seed, (name, keys) in enumerate(draw.items()):
    if name in wanted:
        random.seed(30 + seed)
        files[name] = keys()
for name, keys in files.items():
    with open(f"{work}/{name}.keys", "w") as f:
        f.write("\n".join(keys) + "\n")
deadline = time.time() + 600
while time.time() < deadline:
    cur.execute(f"explain analyze select c1 from t10b where c2 = '{files['hot-absent'][0]}'")
    plan = "\n".join(str(r) for r in cur.fetchall())
    if re.search(r"locator_groups_probed=0\b", plan):
        break
    time.sleep(1)
PY
grep -E "routing filters loaded" "$work/serve.log" | tail -1 || true

cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }   # utime + stime, in 1/100 s
# MinIO publishes its request counters with a delay of a few seconds: read them after it.
requests() {
  sleep 12
  curl -s "$AWS_ENDPOINT/minio/v2/metrics/cluster" \
    | awk '/^minio_s3_requests_total\{/ {sum += $NF} END {print sum + 0}'
}

# Sieve counts the bytes its own GETs fetched (MinIO's sent-bytes counter stayed 0 here).
fetched() {
  curl -s "http://127.0.0.1:$metrics_port/metrics" \
    | awk '/^sieve_object_store_transferred_bytes_total\{.*operation="get"/ {sum += $NF} END {print sum + 0}'
}

echo
echo "| keys | connections | path | lookups/s | p95 ms | server CPU ms/lookup | requests/lookup | KB fetched/lookup |"
echo "|---|---|---|---|---|---|---|---|"
declare -A rate cost
for keys in $key_sets; do
  file="$keys" text=""
  if [ "$keys" = hot-present-text ]; then
    file=hot-present text="select c1 from t10b where c2 = '%s'"
  fi
  for threads in $threads_list; do
    for path in short full; do
      on=$([ $path = short ] && echo true || echo false)
      setting="set sieve.short_path = $on; set sieve.data_cache = $on"
      [ "$keys" = uniform-present ] && setting="$setting; set sieve.lookup_cache = false"
      [ -n "$text" ] && setting="set sieve.text_lookups = $on"
      c0=$(cpu)
      r0=$(requests)
      b0=$(fetched)
      out=$(SIEVE_SET="$setting" SIEVE_TEXT="$text" SIEVE_KEYS="$work/$file.keys" sysbench scripts/serving/lookup.lua \
        --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root \
        --mysql-db=default --threads="$threads" --time="$seconds" --percentile=95 run 2>&1) || {
        echo "$out" >&2
        exit 1
      }
      c1=$(cpu)
      b1=$(fetched)
      r1=$(requests)
      n=$(echo "$out" | awk '/transactions:/ {print $2}')
      per_s=$(echo "$out" | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}')
      p95=$(echo "$out" | awk '/95th percentile/ {print $3}')
      ms=$(python3 -c "print(f'{($c1 - $c0) * 10 / $n:.3f}')")
      req=$(python3 -c "print(f'{($r1 - $r0) / $n:.2f}')")
      kb=$(python3 -c "print(f'{($b1 - $b0) / $n / 1000:.1f}')")
      rate[$path]=$per_s
      cost[$path]=$ms
      echo "| $keys | $threads | $path | $per_s | $p95 | $ms | $req | $kb |"
    done
    python3 -c "print(f'| $keys | $threads | short/full | {${rate[short]} / ${rate[full]}:.2f}x | | {${cost[short]} / ${cost[full]}:.2f}x | | |')"
  done
done
