#!/usr/bin/env bash
# How long a statement computes after its deadline: `bash scripts/bench-cancel.sh SIEVE [OTHER]`
# serves an empty embedded store with `max_execution_time = 500` and sends each statement below
# (cross joins, sorts, windows, DISTINCT, a recursive CTE, string functions per row over
# numbers(N)); each should fail with MySQL's 1317 at about 0.5 s. For each it prints the
# seconds until the client had its answer, then the server's CPU in clock ticks (100 a second
# on one core) over each of the 8 half-seconds after it: a statement whose work stopped at its
# deadline shows 0s. With OTHER (a second build, e.g. the baseline), each statement is run on
# both, one after the other. Needs the stock mysql client.
set -uo pipefail
command -v mysql >/dev/null || { echo "the mysql client is not installed" >&2; exit 1; }
[ $# -ge 1 ] || { echo "usage: $0 SIEVE [OTHER]" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
statements=(
  "select count(*) from numbers(1000000) a cross join numbers(1000000) b"
  "select number from numbers(30000000) order by (number * 7919) % 1000003 desc, number limit 1 offset 29999990"
  "select max(s) from (select median(number) over (order by number rows between 10000 preceding and current row) as s from numbers(1000000)) w"
  "with recursive r(n) as (select 1 union all select n + 1 from r where n < 100000000) select count(*) from r"
  "select count(distinct number) from numbers(100000000)"
  "select count(distinct concat(upper(cast(number as varchar)), reverse(cast(number as varchar)))) from numbers(100000000)"
  "select count(*) from numbers(100000000) where length(concat(upper(cast(number as varchar)), lpad(cast(number % 977 as varchar), 12, 'x'), reverse(cast(number as varchar)))) > 100"
)
source "$(dirname "$0")/serving/start.sh"
start() { # binary, name: sets port and pid
  mkdir -p "$work/$2"
  echo "max_execution_time = 500" > "$work/$2/sieve.toml"
  sieve_start "$1" "$work/$2/data" "$work/$2" "$work/$2/sieve.toml"
  port=$SIEVE_PORT pid=$SIEVE_PID
}
start "$1" a
servers=("$1 $port $pid")
if [ $# -ge 2 ]; then start "$2" b; servers+=("$2 $port $pid"); fi
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for sql in "${statements[@]}"; do
  echo "$sql"
  for server in "${servers[@]}"; do
    read -r binary port pid <<< "$server"
    began=$(date +%s.%N)
    answer=$(mysql -h127.0.0.1 -P"$port" -uroot -px --batch -e "$sql" 2>&1 | tail -1 | cut -c1-40)
    took=$(echo "$(date +%s.%N) - $began" | bc)
    after=""; t0=$(ticks "$pid")
    for _ in 1 2 3 4 5 6 7 8; do sleep 0.5; t1=$(ticks "$pid"); after="$after $((t1 - t0))"; t0=$t1; done
    printf '  %-40s %5.2fs  ticks per 0.5 s after:%s  (%s)\n' "$binary" "$took" "$after" "$answer"
  done
done
