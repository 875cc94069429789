#!/usr/bin/env bash
# The server's memory while a statement builds large values: `bash scripts/bench-budgets.sh SIEVE`
# serves an empty embedded store with the default budgets (1 GiB a query, 4 GiB in all; or
# SIEVE_BENCH_QUERY_MIB and SIEVE_BENCH_SERVER_MIB, with SIEVE_BENCH_SCALE dividing every row
# count, for a debug build) and sends each statement below. For each it prints the answer, the
# seconds it took, and the server's resident set before it, at its peak (VmHWM, reset before each
# statement through /proc/PID/clear_refs) and 3 s after it. The issue's bound: a peak of at most
# the server budget + 512 MiB. The aggregates run twice, with `sieve.one_stage_collect` on (the
# default) and off (DataFusion's two stages, the baseline). SIEVE_BENCH_MATCH=TEXT sends only the
# statements holding TEXT (e.g. regexp_replace). Needs the stock mysql client.
set -uo pipefail
command -v mysql >/dev/null || { echo "the mysql client is not installed" >&2; exit 1; }
[ $# -eq 1 ] || { echo "usage: $0 SIEVE" >&2; exit 1; }
query_mib=${SIEVE_BENCH_QUERY_MIB:-1024}
server_mib=${SIEVE_BENCH_SERVER_MIB:-4096}
scale=${SIEVE_BENCH_SCALE:-1}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
n() { echo $(($1 / scale)); }
statements=(
  "select count(distinct repeat(cast(number as varchar), 100000)) from numbers($(n 20000))"
  "select max(length(lpad(cast(number as varchar), 1000000, 'y'))) from numbers($(n 20000))"
  "select max(length(concat(repeat('x', 1000000), cast(number as varchar)))) from numbers($(n 20000))"
  "select max(length(regexp_replace(repeat(cast(number as varchar), 20000), '1', 'xxxxxxxxxx', 'g'))) from numbers($(n 20000))"
  "select g, length(string_agg(repeat('x', 1000), ',')) from (select number % 10 as g from numbers($(n 4000000))) s group by g order by g limit 1"
  "select length(string_agg(repeat('x', 1000), ',')) from numbers($(n 4000000))"
  "select count(*) from (select number % 10 as g, array_agg(number) as a from numbers($(n 300000000)) group by g) s where a is not null"
)
cat > "$work/sieve.toml" <<EOF
query_memory_limit_mib = $query_mib
memory_limit_mib = $server_mib
EOF
source "$(dirname "$0")/serving/start.sh"
sieve_start "$1" "$work/data" "$work" "$work/sieve.toml"
port=$SIEVE_PORT
pid=$SIEVE_PID
mib() { awk -v k="$1:" '$1 == k {print int($2 / 1024)}' "/proc/$pid/status"; }
echo "budgets: $query_mib MiB a query, $server_mib MiB in all; bound on a peak: $((server_mib + 512)) MiB"
printf '%-9s %-44s %7s %9s %9s %9s\n' collect answer seconds "before" peak after
for sql in "${statements[@]}"; do
  [[ $sql == *"${SIEVE_BENCH_MATCH:-}"* ]] || continue
  echo "$sql"
  modes=(default)
  [[ $sql == *_agg* ]] && modes=(on off)
  for mode in "${modes[@]}"; do
    set_mode=""
    [ "$mode" = off ] && set_mode="set sieve.one_stage_collect = false;"
    before=$(mib VmRSS)
    echo 5 > "/proc/$pid/clear_refs"
    began=$(date +%s.%N)
    answer=$(mysql -h127.0.0.1 -P"$port" -uroot -px --batch -N -e "$set_mode $sql" 2>&1 | tail -1 | cut -c1-44)
    took=$(echo "$(date +%s.%N) - $began" | bc)
    peak=$(mib VmHWM)
    sleep 3
    printf '%-9s %-44s %7.1f %9s %9s %9s\n' "$mode" "$answer" "$took" "$before" "$peak" "$(mib VmRSS)"
  done
done
