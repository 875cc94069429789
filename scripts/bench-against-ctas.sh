#!/usr/bin/env bash
# Sourced by bench-load-data.sh and bench-copy.sh: runs a loading statement and, right after it
# in the same server, the baseline (a CTAS from numbers() of the same rows: the writer's own
# rate), SIEVE_BENCH_RUNS times (default 3); prints each run's wall time, rows/s and the server's
# CPU seconds (user + system from /proc), then the medians, rows per server CPU second, the ratio
# and the server's peak RSS.
#
#   against_ctas PORT SERVER_PID ROWS LABEL STATEMENT_TEMPLATE
#
# STATEMENT_TEMPLATE is the statement with `{t}` where its new table's name goes; it must load
# ROWS rows (checked).
against_ctas() {
  local port=$1 server=$2 rows=$3 label=$4 template=$5
  local runs="${SIEVE_BENCH_RUNS:-3}" ticks results
  ticks=$(getconf CLK_TCK)
  results=$(mktemp)
  timed() {
    local before after start end
    before=$(awk '{print $14 + $15}' "/proc/$server/stat"); start=$(date +%s.%N)
    mysql -h127.0.0.1 -P"$port" -uroot --local-infile=1 -e "$1" > /dev/null
    end=$(date +%s.%N); after=$(awk '{print $14 + $15}' "/proc/$server/stat")
    python3 -c "print(f'{$end - $start:.3f} {($after - $before) / $ticks:.2f}')"
  }
  for run in $(seq "$runs"); do
    local loaded_by base loaded
    loaded_by=$(timed "${template//\{t\}/t$run}")
    base=$(timed "create table b$run as select number as c1, cast(rand() as string) as c2 from numbers($rows)")
    loaded=$(mysql -h127.0.0.1 -P"$port" -uroot -N -B -e "select count(*) from t$run")
    [ "$loaded" = "$rows" ] || { echo "run $run loaded $loaded rows, not $rows" >&2; return 1; }
    echo "$loaded_by $base" >> "$results"
    read -r ls lc bs bc <<< "$loaded_by $base"
    python3 -c "print(f'run $run: $label {$ls} s ({$rows / $ls:,.0f} rows/s, server CPU {$lc} s); CTAS from numbers() {$bs} s ({$rows / $bs:,.0f} rows/s, server CPU {$bc} s)')"
  done
  python3 - "$results" "$rows" "$(awk '/VmHWM/ {print $2}' "/proc/$server/status")" "$label" <<'PY'
import statistics, sys
runs = [list(map(float, line.split())) for line in open(sys.argv[1])]
rows, hwm, label = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
loaded = statistics.median(r[0] for r in runs)
loaded_cpu = statistics.median(r[1] for r in runs)
base = statistics.median(r[2] for r in runs)
print(f"median {label}: {rows / loaded:,.0f} rows/s ({rows / loaded_cpu:,.0f} rows per server CPU second)")
print(f"median CTAS from numbers(): {rows / base:,.0f} rows/s")
print(f"{label} / CTAS rate: {base / loaded:.2f}x; server peak RSS {hwm / 1024:,.0f} MiB")
PY
  rm -f "$results"
}
