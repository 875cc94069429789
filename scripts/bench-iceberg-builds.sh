#!/usr/bin/env bash
# Two builds of Sieve on the same attached Iceberg table, alternating, in one script so both see
# the same machine state (issue 51): `bash scripts/bench-iceberg-builds.sh BASE NEW` (release
# builds; BASE from an earlier commit). In one fresh MinIO, PyIceberg writes t10b
# (scripts/serving/pyiceberg_t10b.py: SIEVE_BENCH_ROWS, default 10M, in files of
# SIEVE_BENCH_FILE_ROWS, default 10M; SIEVE_BENCH_KEYS_N present keys, default 1000; its Parquet
# codec SIEVE_BENCH_CODEC, default PyIceberg's zstd; its pages' row limit and size
# SIEVE_BENCH_PAGE_ROWS and SIEVE_BENCH_PAGE_BYTES, default PyIceberg's; its row groups' rows
# SIEVE_BENCH_GROUP_ROWS, default PyIceberg's 1M; SIEVE_BENCH_FILE_BYTES, PyIceberg's target file
# size, cuts each append into many files: 30000 makes 10M rows ~10,000 files). Then
# SIEVE_BENCH_ROUNDS times (default 2), BASE then NEW: a fresh server of the build, on storage
# of its own, attaches the catalog (its indexer idle), runs CREATE INDEX on c2 (USING
# SIEVE_BENCH_FILTER, default binary_fuse16: each build's own index), looks every key up once
# (every answer checked, the absent keys too where they are measured; the caches then hold the
# pages), and runs sysbench
# (scripts/serving/lookup.lua, kept results off) on the uniform present keys (absent ones, as
# many, with SIEVE_BENCH_KIND=absent) for SIEVE_BENCH_SECONDS (default 10) at each of SIEVE_BENCH_THREADS (default "1 16") connections.
# Prints each run's lookups/s and server CPU per lookup, then per connection count the medians
# of each build and NEW's ratios to BASE, CREATE INDEX's wall and server CPU seconds, the
# first lookup's milliseconds (it loads the index), the server's resident memory after its
# runs, and what each build's log says its indexes hold.
# With SIEVE_BENCH_PERF=DIR, each sysbench run's server
# is profiled (`perf record --call-graph dwarf` at 299 Hz) into DIR/BUILD-ROUND-CONNECTIONS.data.
# The client runs on the same cores; keep the machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
base="$(realpath "${1:?usage: bench-iceberg-builds.sh BASE NEW}")"
new="$(realpath "${2:?usage: bench-iceberg-builds.sh BASE NEW}")"
rows="${SIEVE_BENCH_ROWS:-10M}"
file_rows="${SIEVE_BENCH_FILE_ROWS:-10000000}"
keys_n="${SIEVE_BENCH_KEYS_N:-1000}"
rounds="${SIEVE_BENCH_ROUNDS:-2}"
seconds="${SIEVE_BENCH_SECONDS:-10}"
threads_list="${SIEVE_BENCH_THREADS:-1 16}"
filter="${SIEVE_BENCH_FILTER:-binary_fuse16}"
kind="${SIEVE_BENCH_KIND:-present}"
case "$kind" in present|absent) ;; *) echo "SIEVE_BENCH_KIND is present or absent, not $kind" >&2; exit 2 ;; esac
source scripts/serving/measure.sh
need_sysbench
source scripts/minio.sh
work=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && { kill "$server" 2>/dev/null || true; }; minio_stop; rm -rf "$work"; }
trap cleanup EXIT
minio_start
warehouse="s3://sieve-test/lake"
python3 scripts/serving/pyiceberg_t10b.py "$work" "$warehouse" "$rows" "$file_rows" "$keys_n"
# Absent keys: t10b's c2 is a double as text, so none ends in "x"; within every file's bounds.
python3 -c 'import random, sys; print("\n".join(f"{random.random()}x" for _ in range(int(sys.argv[1]))))' \
  "$keys_n" > "$work/attached-absent.keys"
ticks=$(getconf CLK_TCK)
echo
echo "| round | build | connections | lookups/s | server CPU ms/lookup |"
echo "|---|---|---|---|---|"
: > "$work/runs"
: > "$work/index"
for round in $(seq "$rounds"); do
  for build in base new; do
    sieve=$([ $build = base ] && echo "$base" || echo "$new")
    port=$(free_port)
    "$sieve" --storage "s3://sieve-test/sieve-$build-$round" --config "$work/sieve.toml" serve \
      --port "$port" >>"$work/serve-$build.log" 2>&1 &
    server=$!
    wait_for_port "$port"
    c0=$(proc_cpu "$server"); t0=$(date +%s.%N)
    mysql -h127.0.0.1 -P"$port" -uroot -N -e "create index ix_c2 on lake.ns.t10b (c2) using $filter" >/dev/null
    t1=$(date +%s.%N); c1=$(proc_cpu "$server")
    echo "index $build $(python3 -c "print(f'{$t1 - $t0:.1f} {($c1 - $c0) / $ticks:.1f}')")" >> "$work/index"
    first_ms=$(python3 - "$port" "$work/attached-present.keys" "$work/attached-$kind.keys" <<'PY'
import sys, time
import pymysql
cur = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", autocommit=True).cursor()
cur.execute("set sieve.lookup_cache = false")
# The pages the measured lookup reads, c1's with c2's: warmed on c2 alone, a key's first
# sysbench lookup fetched its c1 page, a few percent of a profiled run's CPU. The first lookup
# loads the index: its time is printed.
for i, key in enumerate(open(sys.argv[2]).read().split()):
    started = time.monotonic()
    cur.execute("select c2, c1 from lake.ns.t10b where c2 = %s", (key,))
    rows = cur.fetchall()
    if i == 0:
        print(f"{(time.monotonic() - started) * 1000:.0f}")
    assert len(rows) == 1 and rows[0][0] == key, key
# The measured keys too where they are absent: their locator pages (one per part a key is
# asked of), which a lookup of a present key does not read, would be read in the measured run.
if sys.argv[3] != sys.argv[2]:
    for key in open(sys.argv[3]).read().split():
        cur.execute("select c2, c1 from lake.ns.t10b where c2 = %s", (key,))
        assert not cur.fetchall(), key
PY
)
    echo "first $build $first_ms" >> "$work/index"
    for threads in $threads_list; do
      c0=$(proc_cpu "$server")
      perf_start "$build-$round-$threads.data" "$server"
      out=$(SIEVE_SET="set sieve.lookup_cache = false" SIEVE_LOOKUP="select c1 from lake.ns.t10b where c2 = ?" \
        SIEVE_KEYS="$work/attached-$kind.keys" sysbench scripts/serving/lookup.lua --db-driver=mysql \
        --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root --mysql-db=default \
        --threads="$threads" --time="$seconds" run 2>&1) || { echo "$out" >&2; exit 1; }
      c1=$(proc_cpu "$server")
      perf_stop
      n=$(echo "$out" | awk '/transactions:/ {print $2}')
      per_s=$(echo "$out" | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}')
      ms=$(python3 -c "print(f'{($c1 - $c0) * 1000 / $ticks / $n:.3f}')")
      echo "| $round | $build | $threads | $per_s | $ms |"
      echo "$build $threads $per_s $ms" >> "$work/runs"
    done
    echo "memory $build $(awk '/VmRSS/ {print $2 / 1024}' "/proc/$server/status")" >> "$work/index"
    kill "$server"; wait "$server" 2>/dev/null || true; server=
  done
done
echo
python3 - "$work/runs" <<'PY'
import statistics, sys
runs = [line.split() for line in open(sys.argv[1])]
print("| connections | base lookups/s | new lookups/s | new/base | base CPU ms | new CPU ms | new/base CPU |")
print("|---|---|---|---|---|---|---|")
for threads in dict.fromkeys(r[1] for r in runs):
    med = lambda build, i: statistics.median(float(r[i]) for r in runs if r[0] == build and r[1] == threads)
    b, n, bc, nc = med("base", 2), med("new", 2), med("base", 3), med("new", 3)
    print(f"| {threads} | {b:,.0f} | {n:,.0f} | {n / b:.2f}x | {bc:.3f} | {nc:.3f} | {nc / bc:.2f}x |")
PY
python3 - "$work/index" "$rows" <<'PY'
import statistics, sys
lines = [line.split() for line in open(sys.argv[1])]
rows = float(sys.argv[2].upper().replace("M", "e6").replace("B", "e9"))
print()
print("| CREATE INDEX | base | new | new/base |")
print("|---|---|---|---|")
med = lambda what, build, i: statistics.median(float(r[i]) for r in lines if r[:2] == [what, build])
for name, i in (("wall s", 2), ("server CPU s", 3)):
    b, n = med("index", "base", i), med("index", "new", i)
    print(f"| {name} | {b:.1f} | {n:.1f} | {n / b:.2f}x |")
rate = lambda build: rows / med("index", build, 3) / 1e6
print(f"| M rows per CPU second | {rate('base'):.2f} | {rate('new'):.2f} | {rate('new') / rate('base'):.2f}x |")
b, n = med("first", "base", 2), med("first", "new", 2)
print(f"| first lookup ms (loads the index) | {b:.0f} | {n:.0f} | {n / b:.2f}x |")
b, n = med("memory", "base", 2), med("memory", "new", 2)
print(f"| server RSS MiB after the runs | {b:.0f} | {n:.0f} | {n / b:.2f}x |")
PY
for build in base new; do
  echo "$build: $(grep -h "indexes of attached table" "$work/serve-$build.log" | tail -1)"
done
