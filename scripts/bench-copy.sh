#!/usr/bin/env bash
# COPY INTO from MinIO: `bash scripts/bench-copy.sh SIEVE` (a release build), Parquet by default,
# CSV with SIEVE_BENCH_FORMAT=csv.
# - Parquet: loads t10b (SIEVE_BENCH_ROWS, default 10M) into a fresh MinIO with `sieve load` and
#   copies the table's own Parquet blocks into a new table `(c1 bigint unsigned, c2 varchar)`
#   (indexed as a CREATE TABLE indexes by default); then makes the table from the same files by
#   CREATE TABLE … AS SELECT * FROM read_parquet(…).
# - CSV: writes one CSV file of SIEVE_BENCH_ROWS (default 40M rows, about 1.1 GB) t10b-shaped
#   rows (`c1,c2`: a number and a random decimal as text), puts it into MinIO and copies it into
#   `(c1 bigint, c2 varchar)`.
# The server serves a fresh local directory whose configuration names the files' prefix in
# external_locations; each statement runs SIEVE_BENCH_RUNS (default 3) times, each into a new
# table. The baseline, in the same server right after each: the same rows made inside the server
# by a CTAS from numbers() (no files to read). Prints per run the wall time, rows/s and the
# server's CPU seconds, then the medians, rows per server CPU second, the ratio and the server's
# peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
sieve="$(realpath "${1:?usage: bench-copy.sh SIEVE}")"
format="${SIEVE_BENCH_FORMAT:-parquet}"
source scripts/minio.sh
root=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; minio_stop; rm -rf "$root"; }
trap cleanup EXIT
minio_start
source_url="$SIEVE_TEST_S3_URL/copy-source"
case "$format" in
  parquet)
    "$sieve" --storage "$source_url" load t10b --rows "${SIEVE_BENCH_ROWS:-10M}" 2>&1 | tr '\r' '\n' | grep -E '^loaded' || true
    count=$("$sieve" --storage "$source_url" sql -e "select count(*) as n from t10b" | awk '/^\| [0-9]/ {print $2}')
    ;;
  csv)
    count="${SIEVE_BENCH_ROWS:-40000000}"
    awk -v n="$count" 'BEGIN { srand(42); for (i = 0; i < n; i++) printf "%d,%.16f\n", i, rand() }' > "$root/rows.csv"
    echo "file: $count rows, $(du -m "$root/rows.csv" | cut -f1) MB"
    curl -sf -T "$root/rows.csv" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
      --aws-sigv4 "aws:amz:$AWS_REGION:s3" "$AWS_ENDPOINT/${source_url#s3://}/rows.csv"
    rm "$root/rows.csv"
    ;;
  *) echo "SIEVE_BENCH_FORMAT is parquet or csv, not $format" >&2; exit 1 ;;
esac
printf 'external_locations = [{ url = "%s" }]\n' "$source_url" > "$root/sieve.toml"
port=$(free_port)
"$sieve" --storage "$root/data" --config "$root/sieve.toml" serve --port "$port" > "$root/server.log" 2>&1 &
server=$!
wait_for_port "$port"
source scripts/bench-against-ctas.sh
if [ "$format" = csv ]; then
  against_ctas "$port" "$server" "$count" "COPY INTO (CSV)" \
    "create table {t} (c1 bigint, c2 varchar); copy into {t} from '$source_url/rows.csv' file_format = (type = csv)"
  exit 0
fi
against_ctas "$port" "$server" "$count" "COPY INTO" \
  "create table {t} (c1 bigint unsigned, c2 varchar); copy into {t} from '$source_url/' pattern = '[.]parquet\$' file_format = (type = parquet)"
runs="${SIEVE_BENCH_RUNS:-3}"
for run in $(seq "$runs"); do
  mysql -h127.0.0.1 -P"$port" -uroot -e "drop table t$run; drop table b$run"
done
against_ctas "$port" "$server" "$count" "CTAS from read_parquet()" \
  "create table {t} as select * from read_parquet('$source_url/', '[.]parquet\$')"
