"""ADBC's Flight SQL driver (and pandas through it) against `sieve serve --flight-port`
(started by tests/flight_sql.rs)."""
import os
import urllib.request

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pytest

PORT = int(os.environ["SIEVE_FLIGHT_PORT"])
PASSWORD = os.environ["SIEVE_PASSWORD"]
METRICS_PORT = int(os.environ["SIEVE_METRICS_PORT"])


def connect(password=PASSWORD, user="root"):
    return flight_sql.connect(f"grpc://127.0.0.1:{PORT}",
                              db_kwargs={"username": user, "password": password},
                              autocommit=True)


@pytest.fixture(scope="module")
def conn():
    with connect() as conn:
        with conn.cursor() as cur:
            cur.execute("create table fl_t with (block_rows = 1000) as "
                        "select number as c1, cast(number * 2 as string) as c2 from numbers(5000)")
            assert cur.fetchall() == [(5000,)]
        yield conn


def test_results_arrive_as_arrow_and_into_pandas(conn):
    with conn.cursor() as cur:
        cur.execute("select c1, c2 from fl_t where c1 < 3 order by c1")
        table = cur.fetch_arrow_table()
        # numbers() is BIGINT UNSIGNED; strings come as Arrow's string views.
        assert table.schema.field("c1").type == pa.uint64()
        assert table.schema.field("c2").type in (pa.string(), pa.string_view())
        assert table.column("c1").to_pylist() == [0, 1, 2]
        assert table.column("c2").to_pylist() == ["0", "2", "4"]
        cur.execute("select * from fl_t")
        frame = cur.fetch_df()
        assert len(frame) == 5000 and int(frame["c1"].sum()) == 5000 * 4999 // 2


def test_prepared_statements_bind_parameters(conn):
    with conn.cursor() as cur:
        cur.execute("select c2 from fl_t where c1 = ?", parameters=(42,))
        assert cur.fetchall() == [("84",)]
        cur.execute("select c2 from fl_t where c1 = ?", parameters=(4999,))
        assert cur.fetchall() == [("9998",)]


def test_catalog_metadata(conn):
    objects = conn.adbc_get_objects(depth="tables", table_name_filter="fl_%").read_all().to_pylist()
    tables = [(catalog["catalog_name"], schema["db_schema_name"], table["table_name"])
              for catalog in objects
              for schema in catalog["catalog_db_schemas"] or []
              for table in schema["db_schema_tables"] or []]
    assert ("sieve", "default", "fl_t") in tables
    schema = conn.adbc_get_table_schema("fl_t", db_schema_filter="default")
    assert schema.field("c1").type == pa.uint64()
    assert schema.field("c2").type in (pa.string(), pa.string_view())


def test_errors_and_a_wrong_password(conn):
    with conn.cursor() as cur:
        with pytest.raises(Exception, match="table 'sieve.default.nope' not found"):
            cur.execute("select * from nope")
        cur.execute("select 42 as answer")
        assert cur.fetchall() == [(42,)]
    with pytest.raises(Exception, match="Access denied"):
        with connect("wrong") as bad:
            with bad.cursor() as cur:
                cur.execute("select 1")


def test_users_log_in_with_their_privileges(conn):
    with conn.cursor() as cur:
        cur.execute("create user 'fl_reader'@'%' identified by 'fl-pw'")
        cur.execute("grant select on `default`.fl_t to 'fl_reader'@'%'")
    with connect("fl-pw", user="fl_reader") as reader:
        with reader.cursor() as cur:
            cur.execute("select count(*) from fl_t")
            assert cur.fetchall() == [(5000,)]
            with pytest.raises(Exception, match="INSERT command denied to user 'fl_reader'"):
                cur.execute("insert into fl_t values (1, 'x')")
    with pytest.raises(Exception, match="Access denied"):
        with connect("wrong", user="fl_reader") as bad:
            with bad.cursor() as cur:
                cur.execute("select 1")
    with conn.cursor() as cur:
        cur.execute("select count(*) from fl_t")
        assert cur.fetchall() == [(5000,)]


def login_delay_seconds():
    """The seconds the server's login throttle has held failed logins back (its /metrics)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics") as response:
        for line in response.read().decode().splitlines():
            if line.startswith("sieve_login_delay_seconds_total "):
                return float(line.split()[1])
    raise AssertionError("no sieve_login_delay_seconds_total in /metrics")


def test_failed_logins_are_throttled_as_on_the_mysql_port():
    # A success clears this address's record; then each failure is held back twice as long as
    # the one before it: 0.2 s, then 0.4 s.
    with connect() as ok:
        with ok.cursor() as cur:
            cur.execute("select 1")
    before = login_delay_seconds()
    for _ in range(2):
        with pytest.raises(Exception, match="Access denied"):
            with connect("wrong") as bad:
                with bad.cursor() as cur:
                    cur.execute("select 1")
    assert login_delay_seconds() - before == pytest.approx(0.6)


def test_views_are_sent_as_plain_types_at_any_depth(conn):
    # Scans read strings as views; a Flight client gets plain strings, inside lists too.
    with conn.cursor() as cur:
        cur.execute("select c2, array_agg(c2) as all_c2 from fl_t where c1 < 3 group by c2 order by c2")
        table = cur.fetch_arrow_table()
    assert table.schema.field("c2").type == pa.string()
    assert table.schema.field("all_c2").type == pa.list_(pa.field("item", pa.string()))
    assert table.column("all_c2").to_pylist() == [["0"], ["2"], ["4"]]
