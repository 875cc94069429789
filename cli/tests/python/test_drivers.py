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


def test_pymysql_over_tls_verifies_the_servers_certificate():
    ca = os.environ["SIEVE_TLS_CA"]
    conn = pymysql_connect(ssl_ca=ca, ssl_verify_cert=True, ssl_verify_identity=True)
    assert conn._sock.version().startswith("TLSv1.")
    with conn.cursor() as cur:
        cur.execute("select 42")
        assert cur.fetchone() == (42,)
    conn.close()


def test_mysql_connector_uses_tls_when_offered():
    conn = mysql.connector.connect(host="127.0.0.1", port=PORT, user="root", password=PASSWORD,
                                   use_pure=True, ssl_ca=os.environ["SIEVE_TLS_CA"],
                                   ssl_verify_cert=True)
    assert conn._socket.sock.version().startswith("TLSv1.")
    cur = conn.cursor()
    cur.execute("select 7")
    assert cur.fetchall() == [(7,)]
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
    # MySQL's "Access denied for user" (SQLSTATE 28000).
    assert err.value.args[0] == 1045


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


def test_multi_statement_queries_answer_each_statement():
    conn = pymysql_connect(client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS)
    with conn.cursor() as cur:
        cur.execute("select 1 as a; select 'x;y' as b, 2 as c; -- a comment\n select 3")
        assert cur.fetchall() == ((1,),)
        assert cur.nextset()
        assert cur.fetchall() == (("x;y", 2),)
        assert cur.nextset()
        assert cur.fetchall() == ((3,),)
        assert not cur.nextset()
        # The first failure ends the chain, as in MySQL; the connection goes on.
        with pytest.raises(pymysql.err.ProgrammingError) as err:
            cur.execute("select 1; select * from no_such_table; select 2")
            while cur.nextset():
                pass
        assert err.value.args[0] == 1146
        cur.execute("select 4")
        assert cur.fetchone() == (4,)
    conn.close()


def test_sqlalchemy_inspector_and_pandas():
    import pandas
    import sqlalchemy

    url = f"mysql+pymysql://root:{PASSWORD}@127.0.0.1:{PORT}/sa_db"
    setup = pymysql_connect(autocommit=True)
    with setup.cursor() as cur:
        cur.execute("create database if not exists sa_db")
        cur.execute("create table if not exists sa_db.sa_t (id bigint not null, name varchar, "
                    "price decimal(10,2), day date) with (index_columns = 'id,name')")
        cur.execute("insert into sa_db.sa_t values (1, 'one', 1.50, date '2024-01-02'), "
                    "(2, 'two', 2.25, date '2024-03-04')")
    setup.close()
    engine = sqlalchemy.create_engine(url)
    inspector = sqlalchemy.inspect(engine)
    assert "sa_t" in inspector.get_table_names()
    columns = {c["name"]: c for c in inspector.get_columns("sa_t")}
    assert list(columns) == ["id", "name", "price", "day"]
    assert isinstance(columns["id"]["type"], sqlalchemy.types.BIGINT)
    assert not columns["id"]["nullable"]
    assert isinstance(columns["price"]["type"], sqlalchemy.types.DECIMAL)
    assert (columns["price"]["type"].precision, columns["price"]["type"].scale) == (10, 2)
    indexed = sorted(c for i in inspector.get_indexes("sa_t") for c in i["column_names"])
    assert indexed == ["id", "name"]
    frame = pandas.read_sql_table("sa_t", engine).sort_values("id")
    assert list(frame["name"]) == ["one", "two"]
    assert list(frame["id"]) == [1, 2]
    point = pandas.read_sql(sqlalchemy.text("select name, price from sa_t where id = :id"), engine,
                            params={"id": 2})
    assert point.to_dict("records") == [{"name": "two", "price": decimal.Decimal("2.25")}]
    engine.dispose()


def test_load_data_local_infile_from_pymysql_and_mysql_connector(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("id,name\n1,one\n2,\"two, quoted\"\n3,\\N\n")
    conn = pymysql_connect(autocommit=True, local_infile=True)
    with conn.cursor() as cur:
        cur.execute("create table py_load (id bigint not null, name varchar)")
        loaded = cur.execute(
            f"load data local infile '{rows}' into table py_load fields terminated by ',' "
            "optionally enclosed by '\"' ignore 1 lines")
        assert loaded == 3
        cur.execute("select id, name from py_load order by id")
        assert cur.fetchall() == ((1, "one"), (2, "two, quoted"), (3, None))
        # A bad file commits nothing and the connection goes on.
        bad = tmp_path / "bad.csv"
        bad.write_text("4,four\nfive,5\n")
        with pytest.raises(pymysql.err.MySQLError) as err:
            cur.execute(f"load data local infile '{bad}' into table py_load fields terminated by ','")
        assert "Incorrect bigint value: 'five' for column 'id' at line 2" in str(err.value)
        cur.execute("select count(*) from py_load")
        assert cur.fetchone() == (3,)
    conn.close()

    conn = mysql.connector.connect(host="127.0.0.1", port=PORT, user="root", password=PASSWORD,
                                   use_pure=True, allow_local_infile=True, autocommit=True)
    cur = conn.cursor()
    cur.execute(f"load data local infile '{rows}' into table py_load fields terminated by ',' "
                "optionally enclosed by '\"' ignore 1 lines")
    assert cur.rowcount == 3
    cur.execute("select count(*) from py_load")
    assert cur.fetchall() == [(6,)]
    conn.close()
