#!/usr/bin/env bash
# Point lookups over an attached Iceberg table against the same lookups over Sieve's own table
# (issue 51): `bash scripts/bench-iceberg.sh SIEVE` (a release build). In one fresh MinIO:
#   - `sieve load t10b --rows ROWS` writes Sieve's own t10b (SIEVE_BENCH_ROWS, default 100M);
#   - PyIceberg (SqlCatalog on SQLite, warehouse s3://sieve-test/lake) writes a t10b of the same
#     shape (c1 the row number, c2 a random decimal as text) in appends of SIEVE_BENCH_FILE_ROWS
#     rows (default 10M) with its default Parquet settings (1M-row row groups, 1 MB pages, zstd
#     or SIEVE_BENCH_CODEC, no page index; SIEVE_BENCH_PAGE_ROWS and SIEVE_BENCH_PAGE_BYTES set
#     the table's page row limit and page size, e.g. 4096 and 32768 for pages of 4096 rows),
#     keeping SIEVE_BENCH_KEYS_N (default 2000) of its c2
#     values drawn uniformly;
#   - one `sieve serve` attaches the catalog (its indexer idle) and runs CREATE INDEX on c2
#     (`USING SIEVE_BENCH_FILTER`; unset, the attached default, binary_fuse16): rows per server
#     CPU second, and the MiB of index it then holds;
#   - sysbench (scripts/serving/lookup.lua: a prepared `select c1 from T where c2 = ?` per
#     connection) for SIEVE_BENCH_SECONDS (default 10) at each of SIEVE_BENCH_THREADS (default
#     "1 16 64") connections, on each table, for uniform present keys (drawn over the table, as
#     many from Sieve's own; kept results off), uniform absent ones, and hot present ones (the
#     first SIEVE_BENCH_HOT_N, default 100, of the present keys, kept results on): lookups/s,
#     p95, server CPU and MinIO requests per lookup, KB the server fetched per lookup, and the
#     ratios of the attached table to Sieve's own (the issue's aim: within 1.5x for lookups/s
#     and KB); and the attached table again with `sieve.direct_reads` off ("scanned": its pages
#     read by DataFusion's scan), the direct read's baseline in the same run;
#   - cold: a fresh server's first lookup of a present key on each table (the attached one
#     indexed), and the MinIO requests it made (its round trips are at most that many);
#   - with SIEVE_BENCH_WORKERS=N, the attached table's lookups again through a coordinator over
#     N `sieve worker`s (each given the same catalog; the coordinator chooses the files, their
#     owners read them): lookups/s, p95 and server CPU summed over all N+1 processes, against
#     the one process above in the same run; then each process's resident size and the index
#     it holds, as its log says (the coordinator all of it, a worker its own files' entries);
#   - the same present keys (SIEVE_BENCH_OTHER_N of them, default 20) looked up one at a time
#     through PyIceberg's scan (`row_filter`) and DuckDB's `iceberg_scan` (duckdb 1.5.5 with its
#     iceberg, avro and httpfs extension wheels, installed if missing), against Sieve's attached
#     table at one connection.
# Each table has each key looked up once before the runs, as a served table has its pages in the
# data cache (data_cache_mib, default 256: all of Sieve's own table's keys' pages fit, not all of
# the attached table's, ~300 KB a key).
# The client runs on the same cores; keep the machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-iceberg.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-100M}"
file_rows="${SIEVE_BENCH_FILE_ROWS:-10000000}"
keys_n="${SIEVE_BENCH_KEYS_N:-2000}"
seconds="${SIEVE_BENCH_SECONDS:-10}"
threads_list="${SIEVE_BENCH_THREADS:-1 16 64}"
other_n="${SIEVE_BENCH_OTHER_N:-20}"
hot_n="${SIEVE_BENCH_HOT_N:-100}"
filter="${SIEVE_BENCH_FILTER:-binary_fuse16}"
workers="${SIEVE_BENCH_WORKERS:-0}"
source scripts/serving/measure.sh
need_sysbench
if ! python3 -c "import duckdb_extension_iceberg, duckdb_extension_avro, duckdb_extension_httpfs" 2>/dev/null; then
  python3 -m pip install -q duckdb==1.5.5 duckdb-extension-iceberg==1.5.5 duckdb-extension-avro==1.5.5 \
    duckdb-extension-httpfs==1.5.5
fi
export MINIO_PROMETHEUS_AUTH_TYPE=public
source scripts/minio.sh
work=$(mktemp -d)
pids=()
# A server stopped before (kill fails) must not stop the cleanup: set -e holds in traps too.
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; minio_stop; rm -rf "$work"; }
trap cleanup EXIT
minio_start
storage="s3://sieve-test/native"
warehouse="s3://sieve-test/lake"

"$sieve" --storage "$storage" load t10b --rows "$rows" 2>&1 | grep -E "loaded|c2 locator"
python3 scripts/serving/pyiceberg_t10b.py "$work" "$warehouse" "$rows" "$file_rows" "$keys_n"

port=$(free_port) metrics_port=$(free_port)
serve() {
  RUST_LOG=info "$sieve" --storage "$storage" --config "$work/sieve.toml" serve --port "$port" \
    --metrics-port "$metrics_port" >>"$work/serve.log" 2>&1 &
  server=$!
  pids+=("$server")
  wait_for_port "$port"
}
ask() { mysql -h127.0.0.1 -P"$port" -uroot -N -e "$1"; }

serve
ticks=$(getconf CLK_TCK)
c0=$(proc_cpu "$server"); start=$(date +%s.%N)
ask "create index ix_c2 on lake.ns.t10b (c2) using $filter" >/dev/null
end=$(date +%s.%N); c1=$(proc_cpu "$server")
python3 -c "
rows = '$rows'; scale = {'k': 10**3, 'M': 10**6, 'B': 10**9}
n = int(float(rows[:-1]) * scale[rows[-1]]) if rows[-1] in scale else int(rows)
cpu = ($c1 - $c0) / $ticks
print(f'CREATE INDEX on c2 using $filter: {$end - $start:.1f} s, server CPU {cpu:.1f} s, {n / cpu:,.0f} rows per CPU second')"
# Its first lookup loads the index: the log says how much of it the process holds.
ask "select c1 from lake.ns.t10b where c2 = '$(head -1 "$work/attached-present.keys")'" >/dev/null
echo "attached index held: $(grep 'loaded: entries of' "$work/serve.log" | tail -1 | sed 's/.*loaded: //')"
native_key=$(ask "select c2 from t10b where c1 = 12345")
kill "$server"; wait "$server" 2>/dev/null || true

# Cold: a fresh server's first lookup of a present key on each table (the attached one indexed).
echo
echo "| cold first lookup | ms | MinIO requests |"
echo "|---|---|---|"
for table in "lake.ns.t10b:$(head -1 "$work/attached-present.keys")" "t10b:$native_key"; do
  name=${table%%:*} key=${table#*:}
  serve
  r0=$(minio_requests)
  start=$(date +%s%N)
  ask "select c1 from $name where c2 = '$key'" >/dev/null
  end=$(date +%s%N)
  r1=$(minio_requests)
  echo "| $name | $(( (end - start) / 1000000 )) | $((r1 - r0)) |"
  kill "$server"; wait "$server" 2>/dev/null || true
done
serve

# Keys: as many present ones from Sieve's own table, drawn over its rows; absent ones.
python3 - "$port" "$rows" "$work" "$keys_n" "$hot_n" <<'PY'
import random, sys
import pymysql
port, rows_text, work, n, hot = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
scale = {"k": 10**3, "M": 10**6, "B": 10**9}
rows = int(float(rows_text[:-1]) * scale[rows_text[-1]]) if rows_text[-1] in scale else int(rows_text)
cur = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True).cursor()
random.seed(31)
keys = []
for _ in range(n):
    cur.execute("select c2 from t10b where c1 = %d" % random.randrange(rows))
    keys += [r[0] for r in cur.fetchall()]
with open(f"{work}/native-present.keys", "w") as f:
    f.write("\n".join(keys) + "\n")
absent = [f"{random.random()}x" for _ in range(n)]
for table in ["native", "attached"]:
    with open(f"{work}/{table}-absent.keys", "w") as f:
        f.write("\n".join(absent) + "\n")
for table in ["native", "attached"]:
    present = open(f"{work}/{table}-present.keys").read().split()
    with open(f"{work}/{table}-hot.keys", "w") as f:
        f.write("\n".join(present[:hot]) + "\n")
# Each key looked up once (kept results off, as the uniform runs are): its pages are in the data
# cache if they fit.
cur.execute("set sieve.lookup_cache = false")
for table, name in [("native", "t10b"), ("attached", "lake.ns.t10b")]:
    for kind in ["present", "absent"]:
        for key in open(f"{work}/{table}-{kind}.keys").read().split():
            cur.execute(f"select c1 from {name} where c2 = '{key}'")
            cur.fetchall()
PY

echo
echo "| keys | connections | table | lookups/s | p95 ms | server CPU ms/lookup | requests/lookup | KB fetched/lookup |"
echo "|---|---|---|---|---|---|---|---|"
declare -A rate kb cpu one_rate one_cpu
for kind in present absent hot; do
  set_kept=$([ $kind = hot ] || echo "set sieve.lookup_cache = false")
  label=$([ $kind = hot ] && echo "hot present" || echo "uniform $kind")
  for threads in $threads_list; do
    for table in native attached scanned; do
      name=$([ $table = native ] && echo t10b || echo lake.ns.t10b)
      # The attached table with its pages read by DataFusion's scan: the direct read's baseline.
      set=$([ $table = scanned ] && echo "set sieve.direct_reads = false; $set_kept" || echo "$set_kept")
      keys=$([ $table = native ] && echo native || echo attached)
      c0=$(proc_cpu "$server") r0=$(minio_requests) b0=$(fetched_bytes "$metrics_port")
      out=$(SIEVE_SET="$set" SIEVE_LOOKUP="select c1 from $name where c2 = ?" \
        SIEVE_KEYS="$work/$keys-$kind.keys" sysbench scripts/serving/lookup.lua --db-driver=mysql \
        --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root --mysql-db=default \
        --threads="$threads" --time="$seconds" --percentile=95 run 2>&1) || { echo "$out" >&2; exit 1; }
      c1=$(proc_cpu "$server") b1=$(fetched_bytes "$metrics_port") r1=$(minio_requests)
      n=$(echo "$out" | awk '/transactions:/ {print $2}')
      per_s=$(echo "$out" | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}')
      p95=$(echo "$out" | awk '/95th percentile/ {print $3}')
      ms=$(python3 -c "print(f'{($c1 - $c0) * 1000 / $ticks / $n:.3f}')")
      cpu[$table]=$ms
      req=$(python3 -c "print(f'{($r1 - $r0) / $n:.2f}')")
      kb[$table]=$(python3 -c "print(f'{($b1 - $b0) / $n / 1000:.1f}')")
      rate[$table]=$per_s
      echo "| $label | $threads | $table | $per_s | $p95 | $ms | $req | ${kb[$table]} |"
    done
    one_rate[$kind $threads]=${rate[attached]} one_cpu[$kind $threads]=${cpu[attached]}
    python3 -c "
kb = ${kb[native]}
print(f'| $label | $threads | attached/native | {${rate[attached]} / ${rate[native]}:.3f}x | | | | '
      + (f'{${kb[attached]} / kb:.1f}x' if kb > 0 else '-') + ' |')
print(f'| $label | $threads | attached/scanned | {${rate[attached]} / ${rate[scanned]}:.3f}x | | '
      + f'{${cpu[attached]} / ${cpu[scanned]}:.3f}x | | |')"
  done
done

if [ "$workers" -gt 0 ]; then
  # The attached table through a coordinator: its workers read the files the coordinator chose.
  cluster=()
  urls=()
  for _ in $(seq "$workers"); do
    wport=$(free_port)
    RUST_LOG=info "$sieve" --storage "$storage" --config "$work/sieve.toml" worker --port "$wport" \
      >"$work/worker-$wport.log" 2>&1 &
    cluster+=($!) pids+=($!) urls+=("http://127.0.0.1:$wport")
    wait_for_port "$wport"
  done
  cport=$(free_port)
  RUST_LOG=info "$sieve" --storage "$storage" --config "$work/sieve.toml" serve --port "$cport" \
    --metrics-port "$(free_port)" --workers "$(IFS=,; echo "${urls[*]}")" >>"$work/coordinator.log" 2>&1 &
  cluster+=($!) pids+=($!)
  wait_for_port "$cport"
  # Each key looked up once, as for the one process: the workers' data caches hold its pages.
  for kind in present absent; do
    { echo "set sieve.lookup_cache = false;"
      sed "s/.*/select c1 from lake.ns.t10b where c2 = '&';/" "$work/attached-$kind.keys"
    } | mysql -h127.0.0.1 -P"$cport" -uroot -N >/dev/null
  done
  echo
  echo "| keys | connections | cluster ($workers workers) lookups/s | p95 ms | CPU ms/lookup summed | cluster/one lookups/s | cluster/one CPU |"
  echo "|---|---|---|---|---|---|---|"
  for kind in present absent hot; do
    set_kept=$([ $kind = hot ] || echo "set sieve.lookup_cache = false")
    label=$([ $kind = hot ] && echo "hot present" || echo "uniform $kind")
    for threads in $threads_list; do
      c0=$(proc_cpu "${cluster[@]}")
      out=$(SIEVE_SET="$set_kept" SIEVE_LOOKUP="select c1 from lake.ns.t10b where c2 = ?" \
        SIEVE_KEYS="$work/attached-$kind.keys" sysbench scripts/serving/lookup.lua --db-driver=mysql \
        --mysql-host=127.0.0.1 --mysql-port="$cport" --mysql-user=root --mysql-db=default \
        --threads="$threads" --time="$seconds" --percentile=95 run 2>&1) || { echo "$out" >&2; exit 1; }
      c1=$(proc_cpu "${cluster[@]}")
      n=$(echo "$out" | awk '/transactions:/ {print $2}')
      per_s=$(echo "$out" | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}')
      p95=$(echo "$out" | awk '/95th percentile/ {print $3}')
      python3 -c "
ms = ($c1 - $c0) * 1000 / $ticks / $n
print(f'| $label | $threads | $per_s | $p95 | {ms:.3f} | {$per_s / ${one_rate[$kind $threads]}:.2f}x | {ms / ${one_cpu[$kind $threads]}:.2f}x |')"
    done
  done
  for pid in "${cluster[@]}"; do
    awk -v pid="$pid" '/^VmRSS:/ {printf "process %s resident %d MiB\n", pid, $2 / 1024}' "/proc/$pid/status"
  done
  # The index each process holds: all of it on the coordinator, its own files' on a worker.
  for log in "$work"/worker-*.log "$work/coordinator.log"; do
    echo "$(basename "$log" .log): $(grep 'loaded: entries of' "$log" | tail -1 | sed 's/.*loaded: //')"
  done
fi

# The same present keys through PyIceberg's scan and DuckDB's iceberg_scan, one at a time.
echo
python3 - "$port" "$work" "$warehouse" "$other_n" <<'PY'
import glob, importlib, os, statistics, sys, time
import duckdb
import pymysql
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo
port, work, warehouse, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
keys = open(f"{work}/attached-present.keys").read().split()[:n]
s3 = {"s3.endpoint": os.environ["AWS_ENDPOINT"], "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
      "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"], "s3.region": os.environ["AWS_REGION"]}
table = SqlCatalog("writers", uri=f"sqlite:///{work}/catalog.db", warehouse=warehouse, **s3).load_table("ns.t10b")
db = duckdb.connect()
for ext in ["httpfs", "avro", "iceberg"]:
    module = importlib.import_module(f"duckdb_extension_{ext}")
    db.execute(f"LOAD '{glob.glob(os.path.dirname(module.__file__) + f'/extensions/*/{ext}.duckdb_extension')[0]}'")
endpoint = os.environ["AWS_ENDPOINT"].removeprefix("http://")
db.execute(f"""CREATE SECRET (TYPE s3, KEY_ID '{os.environ["AWS_ACCESS_KEY_ID"]}',
               SECRET '{os.environ["AWS_SECRET_ACCESS_KEY"]}', ENDPOINT '{endpoint}', URL_STYLE 'path',
               USE_SSL false, REGION '{os.environ["AWS_REGION"]}')""")
cur = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True).cursor()
cur.execute("set sieve.lookup_cache = false")
runs = {
    "Sieve, attached": lambda k: (cur.execute(f"select c1 from lake.ns.t10b where c2 = '{k}'"), cur.fetchall())[1],
    "PyIceberg scan": lambda k: table.scan(row_filter=EqualTo("c2", k), selected_fields=("c1",)).to_arrow().column(0).to_pylist(),
    "DuckDB iceberg_scan": lambda k: [r[0] for r in db.execute(
        f"select c1 from iceberg_scan('{table.metadata_location}') where c2 = ?", [k]).fetchall()],
}
print("| engine | keys | median ms | lookups/s (one at a time) | against Sieve |")
print("|---|---|---|---|---|")
base = None
for name, lookup in runs.items():
    times = []
    for k in keys:
        start = time.perf_counter()
        got = lookup(k)
        times.append(time.perf_counter() - start)
        assert len(got) == 1, (name, k, got)
    median = statistics.median(times)
    base = base or median
    print(f"| {name} | {len(keys)} | {median * 1000:.1f} | {1 / median:.1f} | {median / base:.1f}x the time |")
PY
echo
awk '/^VmHWM:/ {peak = $2} /^VmRSS:/ {now = $2} END {printf "server peak RSS %d MiB, at end %d MiB\n", peak / 1024, now / 1024}' \
  "/proc/$server/status"
