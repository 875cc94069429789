#!/usr/bin/env bash
# Cold point lookups against a far object store: `bash scripts/bench-cold.sh SIEVE` loads t10b
# (SIEVE_BENCH_ROWS, default 100M) into a fresh MinIO with `sieve load`, puts toxiproxy in front
# of it (built with `go install` if missing) adding SIEVE_BENCH_DELAY_MS (default 20) to every
# response, as a far S3 region's round trip does, and runs SIEVE_BENCH_LOOKUPS (default 15)
# lookups `select c1 from t10b where c2 = '…'` of present keys and of absent keys, each in a
# fresh `sieve sql` process (nothing cached), straight to MinIO and through the proxy,
# alternating. It reports per kind the median time of the statement (as `sieve sql` prints it)
# each way, the difference, the difference in round trips (difference / delay) and the requests
# and sequential requests the statement counted. Keep the machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-cold.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-100M}"
delay="${SIEVE_BENCH_DELAY_MS:-20}"
lookups="${SIEVE_BENCH_LOOKUPS:-15}"
toxiproxy="$(go env GOPATH)/bin/server"
if [ ! -x "$toxiproxy" ]; then
  echo "installing toxiproxy (go install github.com/Shopify/toxiproxy/v2/cmd/server)"
  (cd "$(mktemp -d)" && go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0)
fi
source scripts/minio.sh
work=$(mktemp -d)
proxy=""
cleanup() { [ -n "$proxy" ] && kill "$proxy" 2>/dev/null; minio_stop; rm -rf "$work"; }
trap cleanup EXIT
minio_start
storage="s3://sieve-test/cold"
"$sieve" --storage "$storage" load t10b --rows "$rows" 2>&1 | grep -E "loaded|locator groups"

api=$(free_port)
listen=$(free_port)
"$toxiproxy" -host 127.0.0.1 -port "$api" >"$work/toxiproxy.log" 2>&1 &
proxy=$!
wait_for_port "$api"
curl -sf -X POST "http://127.0.0.1:$api/proxies" \
  -d "{\"name\":\"minio\",\"listen\":\"127.0.0.1:$listen\",\"upstream\":\"${AWS_ENDPOINT#http://}\"}" >/dev/null
curl -sf -X POST "http://127.0.0.1:$api/proxies/minio/toxics" \
  -d "{\"type\":\"latency\",\"stream\":\"downstream\",\"attributes\":{\"latency\":$delay}}" >/dev/null
direct="$AWS_ENDPOINT"
delayed="http://127.0.0.1:$listen"
# What one request's round trip costs through the proxy: 20 timed GETs of MinIO's health
# check each way (curl, a connection each).
calibrate() {
  for _ in $(seq 1 20); do
    curl -s -o /dev/null -w "%{time_total}\n" "$1/minio/health/live"
  done | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)] * 1000}'
}
added=$(python3 -c "print(round($(calibrate "$delayed") - $(calibrate "$direct"), 1))")
echo "one request through the proxy: $added ms more (median of 20)"

# Keys: present ones read from the table, absent ones that are not doubles' text.
present=$("$sieve" --storage "$storage" sql -e \
  "select c2 from t10b where c1 in ($(python3 -c "import random; random.seed(7); print(','.join(str(random.randrange(int(float('${rows%?}') * {'k': 1e3, 'M': 1e6, 'B': 1e9}['${rows: -1}']))) for _ in range($lookups)))"))" \
  2>/dev/null | grep -oE "0\.[0-9]+" | head -n "$lookups")
[ "$(echo "$present" | wc -l)" = "$lookups" ] || { echo "found too few present keys: $present"; exit 1; }

# One lookup in a fresh process: "seconds requests sequential", the statement's own time and
# counts as `sieve sql` prints them (the process's start, which opens the catalog, is not in it).
lookup() {
  local endpoint=$1 key=$2
  AWS_ENDPOINT="$endpoint" "$sieve" --storage "$storage" sql -e \
    "select c1 from t10b where c2 = '$key'" 2>&1 |
    grep -oE "\(([0-9.]+) sec\).*[0-9]+ object-store requests, [0-9]+ sequential" | tail -1 |
    sed -E 's/^\(([0-9.]+) sec\).* ([0-9]+) object-store requests, ([0-9]+) sequential$/\1 \2 \3/'
}

for kind in present absent; do
  : >"$work/$kind.direct"
  : >"$work/$kind.delayed"
  for i in $(seq 1 "$lookups"); do
    if [ "$kind" = present ]; then
      key=$(echo "$present" | sed -n "${i}p")
    else
      # Inside the keys' range (no min/max pruning), never a double's text.
      key="0.${i}123456789x"
    fi
    lookup "$direct" "$key" >>"$work/$kind.direct"
    lookup "$delayed" "$key" >>"$work/$kind.delayed"
  done
done

python3 - "$work" "$delay" "$rows" "$added" <<'PY'
import statistics, sys
work, delay, rows, added = sys.argv[1], float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
print(f"\ncold lookups at {rows} rows, {delay:g} ms added per response ({added:g} ms per "
      "request measured); medians; round trips = difference / measured")
print("| keys | undelayed ms | delayed ms (min-max) | difference ms | round trips | requests | sequential |")
print("|---|---|---|---|---|---|---|")
for kind in ["present", "absent"]:
    runs = {}
    for path in ["direct", "delayed"]:
        with open(f"{work}/{kind}.{path}") as f:
            runs[path] = [line.split() for line in f if line.strip()]
    direct = statistics.median(float(r[0]) for r in runs["direct"]) * 1000
    delayed = statistics.median(float(r[0]) for r in runs["delayed"]) * 1000
    requests = statistics.median(int(r[1]) for r in runs["delayed"] if len(r) == 3)
    sequential = statistics.median(int(r[2]) for r in runs["delayed"] if len(r) == 3)
    spread = [float(r[0]) * 1000 for r in runs["delayed"]]
    print(f"| {kind} | {direct:.0f} | {delayed:.0f} ({min(spread):.0f}-{max(spread):.0f}) | "
          f"{delayed - direct:.0f} | {(delayed - direct) / added:.1f} | {requests:g} | "
          f"{sequential:g} |")
PY
