#!/usr/bin/env bash
# Whether large statement texts stall the other clients: `bash scripts/bench-stall.sh SIEVE`
# serves an empty embedded store; three PyMySQL clients loop sending a large text (150,000 nested
# parentheses, refused as too deep, then a valid 150,000-item IN list) while a fourth sends
# `select 1` for SIEVE_BENCH_SECONDS (default 20) each round. Prints the fourth client's latency
# (p50, p99, max) with no sender (the baseline, same server) and under each kind of sender, and
# how many large texts the senders got answered. Issue 53's target: p99 <= 50 ms under senders.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 SIEVE" >&2; exit 1; }
python3 -c "import pymysql" 2>/dev/null || { echo "PyMySQL is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
source "$(dirname "$0")/serving/start.sh"
sieve_start "$1" "$work/data" "$work"
port=$SIEVE_PORT
PORT=$port SECONDS_EACH=${SIEVE_BENCH_SECONDS:-20} python3 - <<'EOF'
import os, threading, time
import pymysql

port, seconds = int(os.environ["PORT"]), float(os.environ["SECONDS_EACH"])
def connect():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="x",
                           max_allowed_packet=64 << 20)
texts = {
    "none": None,
    "150,000 parentheses": "select " + "(" * 150_000 + "1" + ")" * 150_000,
    "150,000-item IN list": "select count(*) from numbers(10) where number in ("
        + ", ".join(str(i) for i in range(150_000)) + ")",
}
for name, text in texts.items():
    stop, answered = threading.Event(), [0]
    def send():
        c = connect()
        while not stop.is_set():
            try:
                with c.cursor() as cur:
                    cur.execute(text)
                    cur.fetchall()
            except pymysql.MySQLError:
                pass
            answered[0] += 1
    senders = [threading.Thread(target=send) for _ in range(3 if text else 0)]
    for s in senders:
        s.start()
    time.sleep(1 if text else 0)
    probe, latencies = connect(), []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.monotonic()
        with probe.cursor() as cur:
            cur.execute("select 1")
            cur.fetchall()
        latencies.append((time.monotonic() - began) * 1000)
        time.sleep(0.005)
    stop.set()
    for s in senders:
        s.join()
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    print(f"senders: {name:22} select 1 x{len(latencies)}: p50 {pick(0.5):.2f} ms, "
          f"p99 {pick(0.99):.2f} ms, max {latencies[-1]:.2f} ms; large texts answered: {answered[0]}")
EOF
