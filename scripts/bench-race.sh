#!/usr/bin/env bash
# Writers and readers racing on one table through the MySQL protocol (issue 53.5):
# `bash scripts/bench-race.sh SIEVE [STORAGE]` serves STORAGE (default: a fresh local directory;
# an s3:// URL with the AWS_* variables set, e.g. by scripts/minio.sh) and runs
# SIEVE_BENCH_CONNECTIONS (default 64) PyMySQL connections, half doing 5-row INSERTs and half
# looking up the newest key some writer has committed (every fourth statement a count(*)), until
# SIEVE_BENCH_STATEMENTS (default 50,000) statements have run. Prints the statements per kind,
# how many failed (with the first errors), lookups that missed a committed row, and whether the
# final count equals five rows per committed INSERT, the blocks and locator groups left, and its
# progress every twentieth of the run (at least 1,000 statements). The issue's target: 0 failures.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SIEVE [STORAGE]" >&2; exit 1; }
python3 -c "import pymysql" 2>/dev/null || { echo "PyMySQL is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
storage=${2:-$work/data}
source "$(dirname "$0")/serving/start.sh"
sieve_start "$1" "$storage" "$work"
port=$SIEVE_PORT
PORT=$port CONNECTIONS=${SIEVE_BENCH_CONNECTIONS:-64} STATEMENTS=${SIEVE_BENCH_STATEMENTS:-50000} python3 - <<'EOF'
import itertools, os, threading, time
import pymysql

port, connections = int(os.environ["PORT"]), int(os.environ["CONNECTIONS"])
statements = int(os.environ["STATEMENTS"])
progress = max(1000, statements // 20)
def connect():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="x", autocommit=True)
table = f"race_{int(time.time())}"
with connect().cursor() as cur:
    cur.execute(f"create table {table} (k bigint, w int, v varchar(64)) with (index_columns = 'k')")
writers = connections // 2
committed = [0] * writers
counter, lock = itertools.count(), threading.Lock()
ran = {"insert": 0, "lookup": 0, "count": 0}
failures, missed = [], []
def note(kind):
    with lock:
        ran[kind] += 1
        done = sum(ran.values())
        if done % progress == 0:
            print(f"  {done} statements by {time.monotonic() - began:.0f} s: "
                  f"{len(failures)} failed, {len(missed)} missed", flush=True)
def work(i):
    c = connect()
    step = 0
    while next(counter) < statements:
        step += 1
        try:
            with c.cursor() as cur:
                if i < writers:
                    n = committed[i]
                    rows = ", ".join(f"({(i << 32) | (n * 5 + j)}, {i}, 'w{i}i{n}')" for j in range(5))
                    cur.execute(f"insert into {table} values {rows}")
                    committed[i] = n + 1
                    note("insert")
                elif step % 4 == 0:
                    before = sum(committed) * 5
                    cur.execute(f"select count(*) from {table}")
                    (count,) = cur.fetchone()
                    if count < before:
                        missed.append(f"count {count} after {before} rows were committed")
                    note("count")
                else:
                    w = (i + step) % writers
                    n = committed[w] - 1
                    if n < 0:
                        continue
                    cur.execute(f"select v from {table} where k = {(w << 32) | (n * 5 + 4)}")
                    rows = cur.fetchall()
                    if rows != ((f"w{w}i{n}",),):
                        missed.append(f"writer {w} insert {n}: {rows}")
                    note("lookup")
        except pymysql.MySQLError as e:
            failures.append(str(e))
            c = connect()
began = time.monotonic()
threads = [threading.Thread(target=work, args=(i,)) for i in range(connections)]
for t in threads:
    t.start()
for t in threads:
    t.join()
took = time.monotonic() - began
with connect().cursor() as cur:
    cur.execute(f"select count(*) from {table}")
    (final,) = cur.fetchone()
    # Blocks and locator groups left (small appends are compacted in the background).
    cur.execute(f"select kind, blocks, groups from sieve_index_stats('{table}') where column_name = 'k'")
    layout = ", ".join(f"{kind}: {blocks} blocks, {groups} groups" for kind, blocks, groups in cur.fetchall())
total = sum(ran.values())
print(f"{connections} connections, {total} statements in {took:.0f} s ({total / took:.0f}/s): "
      f"{ran['insert']} inserts, {ran['lookup']} lookups, {ran['count']} counts; "
      f"{len(failures)} failed, {len(missed)} missed a committed row; "
      f"final count {final}, {'equal to' if final == sum(committed) * 5 else 'NOT'} "
      f"5 x {sum(committed)} committed inserts; at the end {layout}")
for f in (failures + missed)[:5]:
    print("  ", f)
EOF
