# Sourced by the benchmark scripts: `sieve_start BINARY STORAGE DIR [CONFIG]` starts
# `BINARY serve` over STORAGE on a free port, with its TLS files and log in DIR and CONFIG (a
# file) if given, and sets SIEVE_PORT and SIEVE_PID once it listens (it exits the script, printing
# the log, if the server does not start within 10 s); safe under `set -e`.
sieve_start() {
  local config=()
  [ -n "${4:-}" ] && config=(--config "$4")
  SIEVE_PASSWORD=x SIEVE_TLS_DIR="$3/tls" "$1" --storage "$2" "${config[@]}" \
    serve --port 0 2> "$3/log" &
  SIEVE_PID=$!
  for _ in $(seq 100); do
    SIEVE_PORT=$(grep -o "serving the MySQL protocol on [0-9.]*:[0-9]*" "$3/log" | sed 's/.*://' || true)
    [ -n "$SIEVE_PORT" ] && return
    sleep 0.1
  done
  echo "$1 did not start: $(cat "$3/log")" >&2
  exit 1
}
