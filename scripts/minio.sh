#!/usr/bin/env bash
# Sourced by the test and benchmark scripts: builds MinIO once (pinned, cached outside the clone),
# starts it on a free loopback port with a fresh data directory, creates a bucket, and exports
# what Sieve and its tests need (AWS_* and SIEVE_TEST_S3_URL). `minio_stop` ends it.
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"   # github.com/minio/minio, 2026-02-12
MINIO_BIN_DIR="${SIEVE_TOOLS_DIR:-$HOME/.cache/sieve-tools}/minio-${MINIO_VERSION}"
MINIO_BIN="$MINIO_BIN_DIR/minio"

minio_install() {
  [ -x "$MINIO_BIN" ] && return 0
  if ! command -v go >/dev/null 2>&1; then
    echo "MinIO is not built and Go is missing: install Go (https://go.dev/dl) and run again" >&2
    return 1
  fi
  echo "building MinIO $MINIO_VERSION (once; ~4 minutes)"
  mkdir -p "$MINIO_BIN_DIR"
  GOBIN="$MINIO_BIN_DIR" go install "github.com/minio/minio@$MINIO_VERSION"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits (up to 20 s) until something accepts connections on loopback port $1: a server a
# benchmark started in the background.
wait_for_port() {
  for _ in $(seq 1 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $1))" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "nothing listens on port $1" >&2
  return 1
}

minio_start() {
  minio_install || return 1
  MINIO_DATA=$(mktemp -d)
  local port console
  port=$(free_port)
  console=$(free_port)
  export AWS_ACCESS_KEY_ID=sieve AWS_SECRET_ACCESS_KEY=sieve-secret-key AWS_REGION=us-east-1
  export AWS_ENDPOINT="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true
  MINIO_ROOT_USER=$AWS_ACCESS_KEY_ID MINIO_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY \
    "$MINIO_BIN" server "$MINIO_DATA" --address "127.0.0.1:$port" --console-address "127.0.0.1:$console" \
    >"$MINIO_DATA.log" 2>&1 &
  MINIO_PID=$!
  for _ in $(seq 1 100); do
    curl -sf "$AWS_ENDPOINT/minio/health/live" >/dev/null && break
    sleep 0.2
  done
  if ! curl -sf "$AWS_ENDPOINT/minio/health/live" >/dev/null; then
    echo "MinIO did not start; its log:" >&2
    cat "$MINIO_DATA.log" >&2
    return 1
  fi
  # MinIO answers its liveness probe before it serves S3 requests (503 "Server not
  # initialized" until then), so the bucket is created by retrying.
  local code
  for _ in $(seq 1 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
      --aws-sigv4 "aws:amz:$AWS_REGION:s3" "$AWS_ENDPOINT/sieve-test")
    [ "$code" = 200 ] && break
    sleep 0.2
  done
  if [ "$code" != 200 ]; then
    echo "could not create the test bucket (HTTP $code); MinIO's log:" >&2
    cat "$MINIO_DATA.log" >&2
    return 1
  fi
  export SIEVE_TEST_S3_URL="s3://sieve-test"
  # Tests that restart a MinIO of their own (a load surviving an outage) start this binary.
  export SIEVE_TEST_MINIO_BIN="$MINIO_BIN"
  echo "MinIO on $AWS_ENDPOINT (pid $MINIO_PID), bucket sieve-test"
}

minio_stop() {
  [ -n "${MINIO_PID:-}" ] && kill "$MINIO_PID" 2>/dev/null && wait "$MINIO_PID" 2>/dev/null
  [ -n "${MINIO_DATA:-}" ] && rm -rf "$MINIO_DATA" "$MINIO_DATA.log"
  MINIO_PID=
}
