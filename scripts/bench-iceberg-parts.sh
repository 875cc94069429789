#!/usr/bin/env bash
# An attached table a writer appends to between the indexer's passes, its index in a part per
# pass or with small parts merged (issue 51): `bash scripts/bench-iceberg-parts.sh BASE NEW`
# (release builds: BASE writes a part per pass, NEW merges small parts). In one fresh MinIO,
# PyIceberg writes t10b (scripts/serving/pyiceberg_t10b.py: SIEVE_BENCH_ROWS, default 10M, in
# one append; SIEVE_BENCH_KEYS_N present keys, default 1000). A server of each build, on storage
# of its own, runs CREATE INDEX on c2 and follows the table, its indexer passing every second,
# while PyIceberg appends SIEVE_BENCH_APPENDS files (default 200) of SIEVE_BENCH_APPEND_ROWS rows
# (default 10,000), each indexed by both servers before the next
# (scripts/serving/pyiceberg_appends.py; a key of each file joins the present keys). Then NEW
# alone, its indexer idle, serves each storage in turn, SIEVE_BENCH_ROUNDS times (default 2):
# BASE's parts, then NEW's: the same build and table, only the parts differ. Each run: the first
# lookup's milliseconds (it loads the index), every present and absent key looked up once
# (answers checked), then sysbench (scripts/serving/lookup.lua, kept results off) on the uniform
# present keys and on as many absent ones, SIEVE_BENCH_SECONDS each (default 15), at each of
# SIEVE_BENCH_THREADS connections (default 16). Prints each storage's parts, each run's lookups/s
# and server CPU per lookup, and the medians with merged/per-pass ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
base="$(realpath "${1:?usage: bench-iceberg-parts.sh BASE NEW}")"
new="$(realpath "${2:?usage: bench-iceberg-parts.sh BASE NEW}")"
rows="${SIEVE_BENCH_ROWS:-10M}"
keys_n="${SIEVE_BENCH_KEYS_N:-1000}"
appends="${SIEVE_BENCH_APPENDS:-200}"
append_rows="${SIEVE_BENCH_APPEND_ROWS:-10000}"
rounds="${SIEVE_BENCH_ROUNDS:-2}"
seconds="${SIEVE_BENCH_SECONDS:-15}"
threads_list="${SIEVE_BENCH_THREADS:-16}"
source scripts/serving/measure.sh
need_sysbench
source scripts/minio.sh
work=$(mktemp -d)
servers=()
cleanup() { for pid in ${servers[@]+"${servers[@]}"}; do kill "$pid" 2>/dev/null || true; done; minio_stop; rm -rf "$work"; }
trap cleanup EXIT
minio_start
warehouse="s3://sieve-test/lake"
python3 scripts/serving/pyiceberg_t10b.py "$work" "$warehouse" "$rows" 1000000000000 "$keys_n"
first=$(python3 -c "import sys; r = sys.argv[1]; s = {'k': 10**3, 'M': 10**6, 'B': 10**9}; print(int(float(r[:-1]) * s[r[-1]]) if r[-1] in s else int(r))" "$rows")
sed 's/^index_interval_s = .*/index_interval_s = 1/' "$work/sieve.toml" > "$work/following.toml"
ports=()
for build in base new; do
  sieve=$([ $build = base ] && echo "$base" || echo "$new")
  port=$(free_port)
  "$sieve" --storage "s3://sieve-test/sieve-$build" --config "$work/following.toml" serve \
    --port "$port" >>"$work/follow-$build.log" 2>&1 &
  servers+=($!)
  wait_for_port "$port"
  mysql -h127.0.0.1 -P"$port" -uroot -N -e "create index ix_c2 on lake.ns.t10b (c2)" >/dev/null
  ports+=("$port")
done
python3 scripts/serving/pyiceberg_appends.py "$work" "$warehouse" "$first" "$appends" "$append_rows" "${ports[@]}"
for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
servers=()
python3 -c 'import random, sys; print("\n".join(f"{random.random()}x" for _ in range(int(sys.argv[1]))))' \
  "$(wc -l < "$work/attached-present.keys")" > "$work/attached-absent.keys"
echo
for build in base new; do
  python3 - "$build" <<'PY'
import os, sys, boto3
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT"], region_name=os.environ["AWS_REGION"])
pages = s3.get_paginator("list_objects_v2").paginate(Bucket="sieve-test", Prefix=f"sieve-{sys.argv[1]}/attached/")
parts = [o for page in pages for o in page.get("Contents", []) if o["Key"].endswith(".part")]
print(f"{sys.argv[1]}'s storage: {len(parts)} parts, {sum(o['Size'] for o in parts) / 2**20:.1f} MiB")
PY
  grep -h "small parts merged" "$work/follow-$build.log" | tail -1 || true
done
ticks=$(getconf CLK_TCK)
echo
echo "| round | parts of | keys | connections | lookups/s | server CPU ms/lookup |"
echo "|---|---|---|---|---|---|"
: > "$work/runs"
for round in $(seq "$rounds"); do
  for build in base new; do
    port=$(free_port)
    "$new" --storage "s3://sieve-test/sieve-$build" --config "$work/sieve.toml" serve \
      --port "$port" >>"$work/serve-$build.log" 2>&1 &
    servers=($!)
    wait_for_port "$port"
    first_ms=$(python3 - "$port" "$work/attached-present.keys" "$work/attached-absent.keys" <<'PY'
import sys, time
import pymysql
cur = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", autocommit=True).cursor()
cur.execute("set sieve.lookup_cache = false")
for keys, present in ((sys.argv[2], True), (sys.argv[3], False)):
    for i, key in enumerate(open(keys).read().split()):
        started = time.monotonic()
        cur.execute("select c2, c1 from lake.ns.t10b where c2 = %s", (key,))
        rows = cur.fetchall()
        if i == 0 and present:
            print(f"{(time.monotonic() - started) * 1000:.0f}")
        assert (len(rows) == 1 and rows[0][0] == key) if present else not rows, key
PY
)
    echo "first $build $first_ms" >> "$work/runs"
    for kind in present absent; do
      for threads in $threads_list; do
        c0=$(proc_cpu "${servers[0]}")
        out=$(SIEVE_SET="set sieve.lookup_cache = false" SIEVE_LOOKUP="select c1 from lake.ns.t10b where c2 = ?" \
          SIEVE_KEYS="$work/attached-$kind.keys" sysbench scripts/serving/lookup.lua --db-driver=mysql \
          --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root --mysql-db=default \
          --threads="$threads" --time="$seconds" run 2>&1) || { echo "$out" >&2; exit 1; }
        c1=$(proc_cpu "${servers[0]}")
        n=$(echo "$out" | awk '/transactions:/ {print $2}')
        per_s=$(echo "$out" | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}')
        ms=$(python3 -c "print(f'{($c1 - $c0) * 1000 / $ticks / $n:.3f}')")
        echo "| $round | $build | $kind | $threads | $per_s | $ms |"
        echo "run $build $kind $threads $per_s $ms" >> "$work/runs"
      done
    done
    kill "${servers[0]}"; wait "${servers[0]}" 2>/dev/null || true; servers=()
  done
done
echo
python3 - "$work/runs" <<'PY'
import statistics, sys
lines = [line.split() for line in open(sys.argv[1])]
runs = [r[1:] for r in lines if r[0] == "run"]
print("| keys | connections | per-pass parts lookups/s | merged lookups/s | merged/per-pass | per-pass CPU ms | merged CPU ms | merged/per-pass CPU |")
print("|---|---|---|---|---|---|---|---|")
for kind, threads in dict.fromkeys((r[1], r[2]) for r in runs):
    med = lambda build, i: statistics.median(float(r[i]) for r in runs if r[:3] == [build, kind, threads])
    b, n, bc, nc = med("base", 3), med("new", 3), med("base", 4), med("new", 4)
    print(f"| {kind} | {threads} | {b:,.0f} | {n:,.0f} | {n / b:.2f}x | {bc:.3f} | {nc:.3f} | {nc / bc:.2f}x |")
first = lambda build: statistics.median(float(r[2]) for r in lines if r[:2] == ["first", build])
print(f"| first lookup ms (loads the index) | | {first('base'):.0f} | {first('new'):.0f} | {first('new') / first('base'):.2f}x | | | |")
PY
for build in base new; do
  echo "$build's parts: $(grep -h "indexes of attached table" "$work/serve-$build.log" | tail -1)"
done
