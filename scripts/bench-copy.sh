#!/usr/bin/env bash
# COPY INTO from MinIO: `bash scripts/bench-copy.sh SIEVE` (a release build). Loads t10b
# (SIEVE_BENCH_ROWS, default 10M) into a fresh MinIO with `sieve load`, serves a fresh local
# directory whose configuration names that table's prefix in external_locations, and copies the
# table's own Parquet blocks into a new table `(c1 bigint unsigned, c2 varchar)` (indexed as a
# CREATE TABLE indexes by default) SIEVE_BENCH_RUNS (default 3) times, each into a new table.
# The baseline, in the same server right after each COPY: the same rows made inside the server
# by a CTAS from numbers() (no files to read). Prints per run the wall time, rows/s and the
# server's CPU seconds, then the medians, rows per server CPU second, the ratio and the server's
# peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-copy.sh SIEVE}")"
rows="${SIEVE_BENCH_ROWS:-10M}"
source scripts/minio.sh
root=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; minio_stop; rm -rf "$root"; }
trap cleanup EXIT
minio_start
source_url="$SIEVE_TEST_S3_URL/copy-source"
"$sieve" --storage "$source_url" load t10b --rows "$rows" 2>&1 | tr '\r' '\n' | grep -E '^loaded' || true
count=$("$sieve" --storage "$source_url" sql -e "select count(*) as n from t10b" | awk '/^\| [0-9]/ {print $2}')
printf 'external_locations = [{ url = "%s" }]\n' "$source_url" > "$root/sieve.toml"
port=$(free_port)
"$sieve" --storage "$root/data" --config "$root/sieve.toml" serve --port "$port" > "$root/server.log" 2>&1 &
server=$!
wait_for_port "$port"
source scripts/bench-against-ctas.sh
against_ctas "$port" "$server" "$count" "COPY INTO" \
  "create table {t} (c1 bigint unsigned, c2 varchar); copy into {t} from '$source_url/' pattern = '[.]parquet\$' file_format = (type = parquet)"
