#!/usr/bin/env bash
# The cost of TLS on the MySQL port, in one server: `bash scripts/bench-tls.sh SIEVE` loads t10b
# (SIEVE_BENCH_ROWS, default 10M) into a local directory (TLS costs the same whatever the
# storage), serves it, and alternates plain and TLS runs, SIEVE_BENCH_RUNS (default 3) of each:
#   - served lookups: scripts/serving/lookup.lua (one server-side prepared `select c1 from t10b
#     where c2 = ?` per connection over 1000 present keys) with sysbench for SIEVE_BENCH_SECONDS
#     (default 10) at SIEVE_BENCH_THREADS (default 16) connections, `--mysql-ssl=on` or off;
#   - `select * from t10b` through the stock client (`--ssl` or `--skip-ssl`) to /dev/null.
# Reports the medians and the TLS/plain ratios. The clients run on the same cores; keep the
# machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-tls.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-10M}"
runs="${SIEVE_BENCH_RUNS:-3}"
seconds="${SIEVE_BENCH_SECONDS:-10}"
threads="${SIEVE_BENCH_THREADS:-16}"
command -v sysbench >/dev/null || { echo "sysbench is needed (apt-get install sysbench)" >&2; exit 1; }
source scripts/minio.sh   # free_port, wait_for_port
work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$sieve" --storage "$work/data" load t10b --rows "$rows" 2>&1 | grep -E "loaded" || true
count=$(python3 -c "import sys; t = sys.argv[1]; s = {'k': 10**3, 'M': 10**6, 'B': 10**9}
print(int(float(t[:-1]) * s[t[-1]]) if t[-1] in s else int(t))" "$rows")
port=$(free_port)
(cd "$work" && exec "$sieve" --storage "$work/data" serve --port "$port") >"$work/serve.log" 2>&1 &
server=$!
wait_for_port "$port"
python3 - "$port" "$count" "$work" <<'PY'
import random, sys
import pymysql
port, rows, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cur = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True).cursor()
random.seed(33)
ids = [random.randrange(rows) for _ in range(1000)]
cur.execute("select c2 from t10b where c1 in (%s)" % ",".join(map(str, ids)))
with open(f"{work}/keys", "w") as f:
    f.write("\n".join(r[0] for r in cur.fetchall()) + "\n")
PY

# sysbench 1.0 reads its TLS files from the current directory under fixed names: the server's
# CA (made at its start in $work/sieve-tls), and a client certificate the server does not ask
# for but libmariadb loads (the server's own serves).
mkdir "$work/sysbench"
ln -s "$work/sieve-tls/ca.pem" "$work/sysbench/cacert.pem"
ln -s "$work/sieve-tls/server-cert.pem" "$work/sysbench/client-cert.pem"
ln -s "$work/sieve-tls/server-key.pem" "$work/sysbench/client-key.pem"
lua="$(realpath scripts/serving/lookup.lua)"
lookups() {  # $1: on|off; prints lookups/s
  (cd "$work/sysbench" && SIEVE_KEYS="$work/keys" sysbench "$lua" --db-driver=mysql \
    --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root --mysql-db=default \
    --mysql-ssl="$1" --threads="$threads" --time="$seconds" run 2>&1) \
    | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}'
}
select_all() {  # $1: --ssl|--skip-ssl; prints rows/s
  local start end
  start=$(date +%s.%N)
  mysql -h127.0.0.1 -P"$port" -uroot "$1" --batch --quick -e "select * from t10b" >/dev/null
  end=$(date +%s.%N)
  python3 -c "print(f'{$count / ($end - $start):.0f}')"
}
median() { python3 -c "import statistics, sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }

declare -a lp lt sp st
lookups off >/dev/null   # warms the caches both modes then find warm
for i in $(seq "$runs"); do
  lp+=("$(lookups off)"); lt+=("$(lookups on)")
  sp+=("$(select_all --skip-ssl)"); st+=("$(select_all --ssl)")
done
l_plain=$(median "${lp[@]}"); l_tls=$(median "${lt[@]}")
s_plain=$(median "${sp[@]}"); s_tls=$(median "${st[@]}")
echo
echo "| measure | plain | TLS | TLS/plain |"
echo "|---|---|---|---|"
python3 -c "print(f'| lookups/s, {$threads} connections (runs: ${lp[*]} / ${lt[*]}) | {$l_plain:.0f} | {$l_tls:.0f} | {$l_tls / $l_plain:.2f}x |')"
python3 -c "print(f'| select * rows/s, stock client (runs: ${sp[*]} / ${st[*]}) | {$s_plain:.0f} | {$s_tls:.0f} | {$s_tls / $s_plain:.2f}x |')"
