#!/usr/bin/env bash
# Runs every test suite of the workspace, with a real MinIO for the S3 tests, and ends with one
# summary line ("N passed, N failed"). Installs what a fresh machine lacks: MinIO (built with
# `go install` at a pinned version), the stock mysql client (mariadb-client), the Python MySQL
# drivers, PyIceberg and PySpark with Iceberg's Spark runtime (which write the Iceberg tests'
# tables), pyarrow with ADBC's Flight SQL driver, Node.js and mysql2; Go fetches go-sql-driver/mysql (pinned in cli/tests/go/go.sum) on
# the first run. The target dir lives outside the clone so CI runs and later
# clones reuse the build.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust (https://rustup.rs) and run again" >&2
  exit 1
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sieve-target}"
export CARGO_TERM_COLOR=never
# Incremental artifacts only grow a target dir that CI runs share (13 GB of them filled the
# disk once); a test run gains nothing from them.
export CARGO_INCREMENTAL=0

sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
if ! command -v mysql >/dev/null 2>&1; then
  echo "installing mariadb-client (the stock mysql command-line client)"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq mariadb-client; } >/dev/null \
    || { echo "could not install mariadb-client" >&2; exit 1; }
fi
if ! python3 -c "import pymysql, cryptography, mysql.connector, pytest, sqlalchemy, pandas, pyarrow, adbc_driver_flightsql, pyiceberg, boto3" 2>/dev/null \
  || [ "$(python3 -c 'import pyiceberg; print(pyiceberg.__version__)' 2>/dev/null)" != 0.12.0 ] \
  || [ "$(python3 -c 'import duckdb; print(duckdb.__version__)' 2>/dev/null)" != 1.5.5 ]; then
  echo "installing PyMySQL (with cryptography, for caching_sha2_password without TLS), mysql-connector-python, SQLAlchemy, pandas, pyarrow, ADBC's Flight SQL driver, pytest, PyIceberg 0.12.0 (the Iceberg tests' writer), DuckDB 1.5.5 (the writer of their variant columns) and boto3 (MinIO's session keys for a REST catalog to vend)"
  python3 -m pip install -q pymysql cryptography mysql-connector-python "sqlalchemy>=2,<3" pandas pyarrow adbc-driver-flightsql pytest "pyiceberg[sql-sqlite]==0.12.0" duckdb==1.5.5 boto3 || exit 1
fi

if ! command -v java >/dev/null 2>&1; then
  echo "installing a Java runtime"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq default-jdk-headless; } >/dev/null \
    || { echo "could not install Java" >&2; exit 1; }
fi
# fetch_jars DIR: the jars read from stdin (Maven Central path, SHA-256) into DIR under the
# tools dir, fetched unless already there; prints their paths joined by ':'.
fetch_jars() {
  local dir="${SIEVE_TOOLS_DIR:-$HOME/.cache/sieve-tools}/$1" paths="" path sum jar
  mkdir -p "$dir"
  while read -r path sum; do
    jar="$dir/$(basename "$path")"
    if ! echo "$sum  $jar" | sha256sum -c --status 2>/dev/null; then
      echo "fetching $(basename "$path") from Maven Central" >&2
      curl -sSfL "https://repo1.maven.org/maven2/$path" -o "$jar.part" && mv "$jar.part" "$jar" \
        && echo "$sum  $jar" | sha256sum -c --status \
        || { echo "could not fetch $path (or its checksum differs)" >&2; return 1; }
    fi
    paths="$paths${paths:+:}$jar"
  done
  echo "$paths"
}
SIEVE_JDBC_JARS=$(fetch_jars jdbc <<'JARS'
com/mysql/mysql-connector-j/9.1.0/mysql-connector-j-9.1.0.jar 8776e2ebc46072c9a47ea59d98298c4273bd9f16a7b26b5dfa4744535aa26c62
org/mariadb/jdbc/mariadb-java-client/3.5.1/mariadb-java-client-3.5.1.jar 50a50c4a3c13c30dfbd40587f7ad9a496197d285ede0948641d9eee68fdf2106
org/apache/arrow/flight-sql-jdbc-driver/18.3.0/flight-sql-jdbc-driver-18.3.0.jar 3f418b46c880e263558c5de669bdbede2c5d4375527ced116fb29f795b03704c
JARS
) || exit 1
export SIEVE_JDBC_JARS
# Spark writes the Iceberg test's merge-on-read table: PySpark, Iceberg's Spark runtime, and the
# JDBC driver of its SQLite catalog.
if ! python3 -c "import pyspark" 2>/dev/null || [ "$(python3 -c 'import pyspark; print(pyspark.__version__)' 2>/dev/null)" != 4.0.1 ]; then
  echo "installing PySpark 4.0.1 (writes the Iceberg test's Spark table)"
  python3 -m pip install -q "pyspark==4.0.1" || exit 1
fi
SIEVE_SPARK_JARS=$(fetch_jars spark <<'JARS'
org/apache/iceberg/iceberg-spark-runtime-4.0_2.13/1.10.0/iceberg-spark-runtime-4.0_2.13-1.10.0.jar 0480f1248e0a8b50ae2a730d7ad3e1a727351c362ca63f4a0c35182087a49323
org/xerial/sqlite-jdbc/3.50.3.0/sqlite-jdbc-3.50.3.0.jar a3f53a2aa15ae9425a9e793bbe9c8e5288febeb4b65ef5c1a4e80d4c2045cf08
JARS
) || exit 1
export SIEVE_SPARK_JARS
# Iceberg's own REST catalog server, which the REST catalog test runs: its class path resolved
# by Maven (checksums enforced) from cli/tests/iceberg/rest/pom.xml, ~100 MB once.
if ! command -v mvn >/dev/null 2>&1; then
  echo "installing Maven"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq maven; } >/dev/null \
    || { echo "could not install Maven" >&2; exit 1; }
fi
rest_classpath=$(mktemp)
mvn -q -B -C -Dstyle.color=never -f cli/tests/iceberg/rest/pom.xml dependency:build-classpath \
  -Dmdep.outputFile="$rest_classpath" >&2 \
  || { echo "could not resolve Iceberg's REST catalog server (cli/tests/iceberg/rest/pom.xml)" >&2; exit 1; }
SIEVE_ICEBERG_REST_CLASSPATH=$(cat "$rest_classpath")
rm -f "$rest_classpath"
export SIEVE_ICEBERG_REST_CLASSPATH

if ! command -v node >/dev/null 2>&1; then
  echo "installing Node.js and npm"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm; } >/dev/null \
    || { echo "could not install Node.js" >&2; exit 1; }
fi
if [ ! -d cli/tests/node/node_modules/mysql2 ]; then
  echo "installing mysql2 for node (pinned in cli/tests/node/package-lock.json)"
  npm ci --prefix cli/tests/node --no-audit --no-fund --silent || exit 1
fi

source scripts/minio.sh
log=$(mktemp)
trap 'minio_stop; rm -f "$log"' EXIT
minio_start || exit 1

# --all-targets also runs each criterion bench once, so benches cannot rot.
cargo test --workspace --all-targets --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

awk '/^test result:/ {
       for (i = 1; i <= NF; i++) {
         if ($(i+1) ~ /^passed/) p += $i
         if ($(i+1) ~ /^failed/) f += $i
         if ($(i+1) ~ /^ignored/) s += $i
       }
     }
     END { printf "\nsummary: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
exit "$status"
