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
# run is made, one after the other in the same server, on each of SIEVE_BENCH_PATHS (default
# "short scan full"):
#   - short: the short path and the caches on, located pages decoded directly;
#   - scan: the same with `set sieve.direct_reads = false` (located pages read through
#     DataFusion's Parquet scan: the direct read's baseline);
#   - full: `set sieve.short_path = false; set sieve.data_cache = false` (the full path, the
#     short path's baseline);
# and reports lookups/s, p95 latency,
# the server's CPU per lookup (user + system from /proc) and context switches per lookup (every
# thread's, voluntary or not: how often its threads slept and were woken), MinIO's requests per lookup (its
# Prometheus counters, read 12 s after a run) and the bytes the server's GETs fetched per lookup
# (its own `sieve_object_store_transferred_bytes_total{operation="get"}`, from --metrics-port),
# then the ratios against the last path. With a second binary (`bench-serving.sh SIEVE OTHER`:
# two builds, e.g. two allocators), both serve the same table side by side, each run is made on
# both in turn, and the ratios are against SIEVE's last path. With SIEVE_BENCH_OWN_TABLES=1, OTHER
# loads and serves its own copy of the table (the loader is seeded: the same rows), for builds that
# write different layouts (e.g. slice sizes). With SIEVE_BENCH_WORKERS=N (issue
# 49), the second server is a coordinator (`sieve serve --workers …`) over N `sieve worker`s of
# the same build instead, its CPU summed over all N+1 processes and its KB fetched too (where the
# build's workers take --metrics-port; left out otherwise); the table is then loaded in locator groups of SIEVE_BENCH_GROUP_ROWS rows
# (default 25M, so 100M rows make 4 groups for the workers to share). With two builds and
# SIEVE_BENCH_WORKERS, each build in turn serves the same table as one process and as a cluster
# whose workers listen on the same ports as the other build's did: rendezvous hashing places
# groups by worker address, so both clusters have the same placement (which a run's own random
# ports would not give), and each phase's ratios are against its own one process. uniform-absent: 20000 keys
# not in the table, with kept results off. Every server looks up each uniform key once before
# the runs, so their pages are in its data cache. With SIEVE_BENCH_PERF=DIR, each run's server
# processes are profiled (`perf record --call-graph dwarf` at 299 Hz) into
# DIR/KEYS-CONNECTIONS-LABEL.data. The client runs on the same cores; keep the machine otherwise
# idle. Or pin each process to cores of its own with `taskset` (issue 49's scale measurement;
# each variable a CPU list, unset: not pinned): SIEVE_BENCH_PIN_ONE (the one process, or each
# server without workers), SIEVE_BENCH_PIN_COORDINATOR, SIEVE_BENCH_PIN_WORKERS (one list per
# worker, separated by spaces), SIEVE_BENCH_PIN_CLIENT (sysbench) and SIEVE_BENCH_PIN_MINIO. On
# 16 cores: SIEVE_BENCH_PIN_ONE=0-1 SIEVE_BENCH_PIN_COORDINATOR=0-1
# SIEVE_BENCH_PIN_WORKERS="2-3 4-5 6-7" SIEVE_BENCH_PIN_CLIENT=8-15 SIEVE_BENCH_PIN_MINIO=8-15
# (the one process and the coordinator share cores: they are measured in turn).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench-serving.sh SIEVE [OTHER_SIEVE]" >&2; exit 2; }
binaries=()
for b in "$@"; do binaries+=("$(realpath "$b")"); done
sieve=${binaries[0]}
rows="${SIEVE_BENCH_ROWS:-100M}"
seconds="${SIEVE_BENCH_SECONDS:-10}"
threads_list="${SIEVE_BENCH_THREADS:-1 16 64}"
key_sets="${SIEVE_BENCH_KEYS:-hot-present hot-absent uniform-present}"
paths="${SIEVE_BENCH_PATHS:-short scan full}"
source scripts/serving/measure.sh
need_sysbench
export MINIO_PROMETHEUS_AUTH_TYPE=public
workers="${SIEVE_BENCH_WORKERS:-0}"
# Room for the uniform keys' pages (~40 KB each) in every server's data cache.
export SIEVE_DATA_CACHE_MIB="${SIEVE_DATA_CACHE_MIB:-2048}"
load_flags=()
if [ "$workers" -gt 0 ]; then
  [ "${SIEVE_BENCH_OWN_TABLES:-0}" != 1 ] || { echo "a cluster's workers serve the one table" >&2; exit 2; }
  load_flags=(--locator-group-rows "${SIEVE_BENCH_GROUP_ROWS:-25000000}")
  export SIEVE_CLUSTER_SECRET="bench-serving-$RANDOM$RANDOM"
fi
source scripts/minio.sh
# pin CPU_LIST: sets `pin` to the prefix that runs a command on those CPUs (none when the list is
# empty). A prefix, not a function: a server started in the background with it keeps its PID
# (taskset execs it), whose CPU is counted.
pin() {
  pin=()
  [ -z "$1" ] || pin=(taskset -c "$1")
}
read -ra worker_cpus <<<"${SIEVE_BENCH_PIN_WORKERS:-}"
[ ${#worker_cpus[@]} -eq 0 ] || [ ${#worker_cpus[@]} -eq "$workers" ] || {
  echo "SIEVE_BENCH_PIN_WORKERS names ${#worker_cpus[@]} CPU lists for $workers workers" >&2
  exit 2
}
work=$(mktemp -d)
pids=()
# A server stopped before (kill fails) must not stop the cleanup: set -e holds in traps too.
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; minio_stop; rm -rf "$work"; }
trap cleanup EXIT
minio_start
[ -z "${SIEVE_BENCH_PIN_MINIO:-}" ] || taskset -a -p -c "$SIEVE_BENCH_PIN_MINIO" "$MINIO_PID" >/dev/null
storage="s3://sieve-test/serving"

"$sieve" --storage "$storage" load t10b --rows "$rows" "${load_flags[@]}" 2>&1 | grep -E "loaded|locator groups|c2 locator"
storages=("$storage")
if [ "${SIEVE_BENCH_OWN_TABLES:-0}" = 1 ] && [ ${#binaries[@]} -eq 2 ]; then
  storages+=("$storage-other")
  "${binaries[1]}" --storage "${storages[1]}" load t10b --rows "$rows" 2>&1 | grep -E "loaded|locator groups|c2 locator"
fi

# sysbench opens all its connections at once from one address: the default bounds on pending
# logins (256 per address) let 64 of them log in together.
: >"$work/sieve.toml"
# One server per binary, over the same storage (an A/B of two builds: runs alternate).
# server_pids[i]: the processes whose CPU server i's lookups cost.
ports=() metrics_ports=() names=() server_pids=() served=()
# metrics_of[i]: the metrics ports whose bytes fetched server i's lookups cost (its own unless
# set).
metrics_of=()
serve() { # CPUS BINARY NAME [serve flags]: one more server, on those CPUs
  local cpus=$1 binary=$2 name=$3 i=${#ports[@]}
  shift 3
  ports+=("$(free_port)")
  metrics_ports+=("$(free_port)")
  names+=("$name")
  served+=("$binary")
  pin "$cpus"
  RUST_LOG=info "${pin[@]}" "$binary" --storage "${storages[$i]:-$storage}" --config "$work/sieve.toml" serve \
    --port "${ports[$i]}" --metrics-port "${metrics_ports[$i]}" "$@" >"$work/serve-$i.log" 2>&1 &
  pids+=($!)
  server_pids[$i]="${server_pids[$i]:-} $!"
  wait_for_port "${ports[$i]}"
}
# The workers' ports, the same for every phase (and so the same placement).
worker_ports=()
for _ in $(seq "$workers"); do worker_ports+=("$(free_port)"); done
start_servers() { # BINARY…: one server each, or, with workers, one process and a cluster of the one
  ports=() metrics_ports=() names=() server_pids=() served=() metrics_of=()
  for b in "$@"; do
    serve "${SIEVE_BENCH_PIN_ONE:-}" "$b" "$(basename "$b")"
  done
  [ "$workers" -gt 0 ] || return 0
  names[0]=one
  local urls=() cluster_pids="" port w=0 metrics=() cluster_metrics=""
  for port in "${worker_ports[@]}"; do
    pin "${worker_cpus[$w]:-}"
    w=$((w + 1))
    # Builds before 478ab36 serve no metrics from a worker.
    if "$1" worker --help | grep -q -- --metrics-port; then
      metrics=(--metrics-port "$(free_port)")
      cluster_metrics="$cluster_metrics ${metrics[1]}"
    fi
    RUST_LOG=info "${pin[@]}" "$1" --storage "$storage" --config "$work/sieve.toml" worker \
      --port "$port" "${metrics[@]}" >"$work/worker-$port.log" 2>&1 &
    pids+=($!)
    cluster_pids="$cluster_pids $!"
    wait_for_port "$port"
    urls+=("http://127.0.0.1:$port")
  done
  server_pids[1]=$cluster_pids
  serve "${SIEVE_BENCH_PIN_COORDINATOR:-}" "$1" cluster --workers "$(IFS=,; echo "${urls[*]}")"
  # The bytes a cluster fetched are its coordinator's and its workers'.
  [ -z "$cluster_metrics" ] || metrics_of[1]="${metrics_ports[1]}$cluster_metrics"
}
stop_servers() { # the phase's processes, their ports free again after
  local pid
  # shellcheck disable=SC2068 # one PID per word
  for pid in ${server_pids[@]}; do
    kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  done
}

measure() { # the servers started: keys, warm-up, every run, memory
# The key files, and the routing filters loaded (in the background, from the first lookup).
python3 - "$(IFS=,; echo "${ports[*]}")" "$rows" "$work" "$key_sets" ${workers#0} <<'PY'
import random, re, sys, time
import pymysql

ports, rows_text, work = [int(p) for p in sys.argv[1].split(",")], sys.argv[2], sys.argv[3]
port = ports[0]
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
    "uniform-absent": lambda: [f"{random.random()}x" for _ in range(20000)],
}
files = {}
for seed, (name, keys) in enumerate(draw.items()):
    if name in wanted:
        # Drawn once: a later phase (another build's servers) looks up the same keys.
        try:
            files[name] = open(f"{work}/{name}.keys").read().split("\n")[:-1]
        except FileNotFoundError:
            random.seed(30 + seed)
            files[name] = keys()
for name, keys in files.items():
    with open(f"{work}/{name}.keys", "w") as f:
        f.write("\n".join(keys) + "\n")
for port in ports[:1] if len(sys.argv) > 5 else ports:
    cur = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True).cursor()
    deadline = time.time() + 600
    while time.time() < deadline:
        cur.execute(f"explain analyze select c1 from t10b where c2 = '{files['hot-absent'][0]}'")
        plan = "\n".join(str(r) for r in cur.fetchall())
        if re.search(r"locator_groups_probed=0\b", plan):
            break
        time.sleep(1)
# Every key's pages in every server's data cache before any run (each key looked up once;
# uniform ones with kept results off, as they are run): the runs measure serving from memory,
# and no server's figures include fetches another already made (without this, the server
# measured second in a round was still fetching pages the first had cached rounds before).
for port in ports:
    cur = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True).cursor()
    for name, keys in files.items():
        cur.execute(f"set sieve.lookup_cache = {'false' if name.startswith('uniform') else 'true'}")
        for key in keys:
            cur.execute(f"select c1 from t10b where c2 = '{key}'")
            cur.fetchall()
if len(sys.argv) > 5:
    # The cluster: its workers load their groups' routing filters from their first lookups;
    # ready once every group has been asked and no worker has loaded more for 5 s.
    import glob
    cur = pymysql.connect(host="127.0.0.1", port=ports[1], user="root", autocommit=True).cursor()
    loaded = lambda: sum(open(f).read().count("routing filters loaded") for f in glob.glob(f"{work}/worker-*.log"))
    last, since = -1, time.time()
    while time.time() - since < 5:
        for key in files["hot-absent"][:200]:
            cur.execute(f"select c1 from t10b where c2 = '{key}'")
            cur.fetchall()
        if loaded() != last:
            last, since = loaded(), time.time()
    # The placement: the last of a worker's "routing filters loaded" lines counts its groups.
    groups = [re.findall(r"routing filters loaded: (\d+) groups", open(f).read()) for f in sorted(glob.glob(f"{work}/worker-*.log"))]
    print(f"cluster ready: {last} routing loads in the workers' logs; groups per worker (by port): "
          + ", ".join(found[-1] if found else "0" for found in groups))
PY
cat "$work"/serve-*.log | grep -E "routing filters loaded" | tail -1 || true

cpu() { # server $1's processes
  # shellcheck disable=SC2086 # one PID per word
  proc_cpu ${server_pids[$1]}
}
switches() { # server $1's processes
  # shellcheck disable=SC2086 # one PID per word
  proc_switches ${server_pids[$1]}
}

# A coordinator's lookups sent to workers (one per owner asked).
worker_lookups() {
  curl -s "http://127.0.0.1:${metrics_ports[$1]}/metrics" \
    | awk '/^sieve_worker_lookups_total\{/ {l += $NF} END {print l + 0}'
}

echo
echo "| keys | connections | path | lookups/s | p95 ms | server CPU ms/lookup | switches/lookup | requests/lookup | KB fetched/lookup | owners asked/lookup |"
echo "|---|---|---|---|---|---|---|---|---|---|"
declare -A rate cost
for keys in $key_sets; do
  file="$keys" text=""
  if [ "$keys" = hot-present-text ]; then
    file=hot-present text="select c1 from t10b where c2 = '%s'"
  fi
  for threads in $threads_list; do
    for run in $(for i in "${!served[@]}"; do for p in $paths; do echo "$i:$p"; done; done); do
      i=${run%%:*} path=${run#*:}
      label=$path
      [ ${#served[@]} -gt 1 ] && label="${names[$i]}:$path"
      on=$([ $path = full ] && echo false || echo true)
      direct=$([ $path = short ] && echo true || echo false)
      setting="set sieve.short_path = $on; set sieve.data_cache = $on; set sieve.direct_reads = $direct"
      [[ "$keys" = uniform-* ]] && setting="$setting; set sieve.lookup_cache = false"
      [ -n "$text" ] && setting="set sieve.text_lookups = $on"
      c0=$(cpu "$i") s0=$(switches "$i")
      r0=$(minio_requests)
      b0=$(fetched_bytes ${metrics_of[$i]:-${metrics_ports[$i]}})
      l0=$(worker_lookups "$i")
      perf_start "$keys-$threads-${label/:/-}.data" ${server_pids[$i]}
      pin "${SIEVE_BENCH_PIN_CLIENT:-}"
      out=$(SIEVE_SET="$setting" SIEVE_TEXT="$text" SIEVE_KEYS="$work/$file.keys" \
        "${pin[@]}" sysbench scripts/serving/lookup.lua \
        --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="${ports[$i]}" --mysql-user=root \
        --mysql-db=default --threads="$threads" --time="$seconds" --percentile=95 run 2>&1) || {
        echo "$out" >&2
        exit 1
      }
      c1=$(cpu "$i") s1=$(switches "$i")
      perf_stop
      b1=$(fetched_bytes ${metrics_of[$i]:-${metrics_ports[$i]}})
      l1=$(worker_lookups "$i")
      r1=$(minio_requests)
      n=$(echo "$out" | awk '/transactions:/ {print $2}')
      per_s=$(echo "$out" | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}')
      p95=$(echo "$out" | awk '/95th percentile/ {print $3}')
      ms=$(python3 -c "print(f'{($c1 - $c0) * 10 / $n:.3f}')")
      sw=$(python3 -c "print(f'{($s1 - $s0) / $n:.1f}')")
      req=$(python3 -c "print(f'{($r1 - $r0) / $n:.2f}')")
      kb=$(python3 -c "print(f'{($b1 - $b0) / $n / 1000:.1f}')")
      asked=-
      if [ "${names[$i]}" = cluster ]; then
        [ -n "${metrics_of[$i]:-}" ] || kb=-
        asked=$(python3 -c "print(f'{($l1 - $l0) / $n:.2f}')")
      fi
      rate[$label]=$per_s
      cost[$label]=$ms
      echo "| $keys | $threads | $label | $per_s | $p95 | $ms | $sw | $req | $kb | $asked |"
    done
    # Against the first binary's last path.
    base=${paths##* }
    [ ${#served[@]} -gt 1 ] && base="${names[0]}:$base"
    for label in "${!rate[@]}"; do
      [ "$label" = "$base" ] && continue
      python3 -c "print(f'| $keys | $threads | $label/$base | {${rate[$label]} / ${rate[$base]}:.2f}x | | {${cost[$label]} / ${cost[$base]}:.2f}x | | | | |')"
    done
    rate=() cost=()
  done
done

# Memory per process (issue 50's allocator, issue 49's roles): the peak and the current resident
# set of each server's processes (a cluster's workers and its coordinator).
echo
echo "| server | process | peak RSS MiB | RSS at end MiB |"
echo "|---|---|---|---|"
for i in "${!names[@]}"; do
  for pid in ${server_pids[$i]}; do
    role=$(tr '\0' ' ' <"/proc/$pid/cmdline" | grep -oE ' (serve|worker) ' | tr -d ' ')
    awk '/^VmHWM:/ {peak = $2} /^VmRSS:/ {now = $2} END {printf "| %s | %s | %d | %d |\n", name, role, peak / 1024, now / 1024}' \
      name="${names[$i]}" role="$role" "/proc/$pid/status"
  done
done
}

if [ "$workers" -gt 0 ]; then
  for b in "${binaries[@]}"; do
    [ ${#binaries[@]} -eq 1 ] || printf '\n## %s: one process and its cluster\n' "$(basename "$b")"
    start_servers "$b"
    measure
    stop_servers
  done
else
  start_servers "${binaries[@]}"
  measure
fi
