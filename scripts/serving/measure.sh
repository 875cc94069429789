# Sourced by the serving benchmarks: sysbench, and what a run of lookups cost, read before and
# after it.

# need_sysbench: installs Debian's sysbench if it is missing.
need_sysbench() {
  command -v sysbench >/dev/null 2>&1 && return
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq sysbench; } >/dev/null
}

# proc_cpu PID...: the processes' user + system CPU, in 1/100 s.
proc_cpu() {
  local sum=0 pid
  for pid in "$@"; do sum=$((sum + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
  echo "$sum"
}

# perf_start FILE PID...: with SIEVE_BENCH_PERF=DIR set, profiles the processes into
# DIR/FILE (`perf record --call-graph dwarf` at 299 Hz) until perf_stop; otherwise nothing.
perf_start() {
  perf_pid=""
  [ -n "${SIEVE_BENCH_PERF:-}" ] || return 0
  mkdir -p "$SIEVE_BENCH_PERF"
  local file=$1
  shift
  perf record -q -F 299 --call-graph dwarf,16384 -p "$(echo "$@" | tr ' ' ,)" \
    -o "$SIEVE_BENCH_PERF/$file" >/dev/null 2>&1 &
  perf_pid=$!
}

# perf_stop: ends the profile perf_start began, if any.
perf_stop() {
  [ -n "${perf_pid:-}" ] || return 0
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
  perf_pid=""
}

# proc_switches PID...: the context switches (voluntary and not) of every thread of the
# processes: how often they slept and were woken, or were preempted.
proc_switches() {
  local pid
  for pid in "$@"; do cat /proc/"$pid"/task/*/status 2>/dev/null; done \
    | awk '/ctxt_switches:/ {sum += $2} END {print sum + 0}'
}

# minio_requests: MinIO's S3 requests so far (needs MINIO_PROMETHEUS_AUTH_TYPE=public when it
# started). MinIO publishes its counters with a delay of a few seconds: read them after it.
minio_requests() {
  sleep 12
  curl -s "$AWS_ENDPOINT/minio/v2/metrics/cluster" \
    | awk '/^minio_s3_requests_total\{/ {sum += $NF} END {print sum + 0}'
}

# fetched_bytes METRICS_PORT…: the bytes the servers' GETs fetched, by their own counters
# (MinIO's sent-bytes counter stayed 0 here).
fetched_bytes() {
  local port
  for port in "$@"; do curl -s "http://127.0.0.1:$port/metrics"; done \
    | awk '/^sieve_object_store_transferred_bytes_total\{.*operation="get"/ {sum += $NF} END {print sum + 0}'
}
