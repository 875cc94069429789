"""Python MySQL drivers against `sieve serve` (started by tests/python_drivers.rs)."""
import datetime
import decimal
import os
import threading
import time

import mysql.connector
import pymysql
import pytest

PORT = int(os.environ["SIEVE_PORT"])
PASSWORD = os.environ["SIEVE_PASSWORD"]


def pymysql_connect(**kw):
    return pymysql.connect(host="127.0.0.1", port=PORT, user="root", password=PASSWORD, **kw)


def test_pymysql_ddl_ctas_and_parameterised_point_query():
    conn = pymysql_connect(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("create table if not exists py_t with (block_rows = 500) as "
                    "select number as c1, cast(rand() as string) as c2 from numbers(2000)")
        cur.execute("select c2 from py_t where c1 = %s", (1234,))
        (c2,) = cur.fetchone()
        cur.execute("select c1 from py_t where c2 = %s", (c2,))
        assert cur.fetchall() == ((1234,),)
        cur.execute("select count(*) from py_t where c1 in %s", ((1, 2, 3, 99999),))
        assert cur.fetchone() == (3,)
    conn.close()


def test_pymysql_errors_and_wrong_password():
    conn = pymysql_connect()
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.ProgrammingError) as err:
            cur.execute("select * from missing_table")
        assert err.value.args[0] == 1146
        cur.execute("select 1")
        assert cur.fetchone() == (1,)
        # A statement ended by a NUL, as some C connectors send it.
        cur.execute("select 5\0")
        assert cur.fetchone() == (5,)
        cur.execute("select version(), connection_id() > 0, user()")
        version, has_id, user = cur.fetchone()
        assert "-sieve-" in version and version.startswith("8.0.")
        assert has_id == 1 and user.startswith("root@")
    conn.close()
    with pytest.raises(pymysql.err.OperationalError) as err:
        pymysql.connect(host="127.0.0.1", port=PORT, user="root", password="wrong")
    # opensrv-mysql answers a failed handshake with 1698 (SQLSTATE 28000, access denied).
    assert err.value.args[0] == 1698


def test_mysql_connector_prepared_statements():
    conn = mysql.connector.connect(host="127.0.0.1", port=PORT, user="root", password=PASSWORD,
                                   use_pure=True)
    cur = conn.cursor(prepared=True)
    cur.execute("create table if not exists mc_t with (block_rows = 100) as "
                "select number as n, concat('v', cast(number as string)) as s from numbers(1000)")
    cur.execute("select n, s from mc_t where s = ?", ("v777",))
    assert cur.fetchall() == [(777, "v777")]
    cur.execute("select n from mc_t where n = ? or s = ?", (5, "v6"))
    assert sorted(r[0] for r in cur.fetchall()) == [5, 6]
    # Values are bound as typed data, never pasted into SQL: quotes, backslashes and comment
    # markers are just characters.
    for text in ("x' or '1'='1", "v1\\", "v1' -- ", "v1\\' or 1=1 #", "?"):
        cur.execute("select n from mc_t where s = ?", (text,))
        assert cur.fetchall() == [], text
    cur.execute("select n from mc_t where n < ? order by n limit ?", (10, 2))
    assert cur.fetchall() == [(0,), (1,)]
    cur.execute("select n from mc_t where n = ?", (decimal.Decimal("5"),))
    assert cur.fetchall() == [(5,)]
    cur.execute("select n from mc_t where n = ?", (decimal.Decimal("5.5"),))
    assert cur.fetchall() == []
    cur.execute("select n from mc_t where n = ?", (-1,))
    assert cur.fetchall() == []
    cur.execute("select count(*) from mc_t where s = ?", (None,))
    assert cur.fetchall() == [(0,)]
    day, moment = datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 13, 14, 15, 250000)
    cur.execute("select ?, ?, ? + 1, ?", (day, moment, 2.5, "text"))
    assert cur.fetchall() == [(day, moment, 3.5, "text")]
    cur.execute("insert into mc_t values (?, ?)", (5000, "it's new"))
    cur.execute("select n, s from mc_t where s = ?", ("it's new",))
    assert cur.fetchall() == [(5000, "it's new")]
    cur.close()
    conn.close()


def test_kill_query_then_the_connection():
    victim, killer = pymysql_connect(), pymysql_connect()
    with victim.cursor() as cur:
        cur.execute("select connection_id()")
        (victim_id,) = cur.fetchone()
    failures = []

    def long_scan():
        try:
            with victim.cursor() as cur:
                cur.execute("select count(*) from numbers(1000000000000) where number % 7 = 3")
        except pymysql.err.OperationalError as e:
            failures.append(e.args[0])

    scan = threading.Thread(target=long_scan)
    scan.start()
    # KILL QUERY between statements does nothing, so repeat it until the scan has started.
    with killer.cursor() as cur:
        deadline = time.monotonic() + 60
        while scan.is_alive() and time.monotonic() < deadline:
            cur.execute(f"kill query {victim_id}")
            scan.join(0.2)
    assert not scan.is_alive() and failures == [1317]
    with victim.cursor() as cur:
        cur.execute("select 1")
        assert cur.fetchone() == (1,)
    with killer.cursor() as cur:
        cur.execute(f"kill {victim_id}")
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("kill 4000000000")
        assert err.value.args[0] == 1094
    with pytest.raises((pymysql.err.OperationalError, pymysql.err.InterfaceError)):
        with victim.cursor() as cur:
            cur.execute("select 1")
    killer.close()
