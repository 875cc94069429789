"""ADBC's Flight SQL driver against a Flight SQL port with TLS (`flight_tls = true`, the MySQL
port's certificate; started by tests/flight_sql.rs): a client that verifies the server against
its CA logs in and runs statements, one that cannot verify it is refused, and a plain client
gets no answer."""
import os

import adbc_driver_flightsql.dbapi as flight_sql
import pytest

PORT = int(os.environ["SIEVE_FLIGHT_PORT"])
PASSWORD = os.environ["SIEVE_PASSWORD"]
CA = os.environ["SIEVE_TLS_CA"]
ROOT_CERTS = "adbc.flight.sql.client_option.tls_root_certs"


def run(scheme, **options):
    with flight_sql.connect(f"{scheme}://127.0.0.1:{PORT}",
                            db_kwargs={"username": "root", "password": PASSWORD, **options},
                            autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.execute("select 42 as answer")
            return cur.fetchall()


def test_a_client_that_verifies_the_server_runs_statements():
    with open(CA) as f:
        assert run("grpc+tls", **{ROOT_CERTS: f.read()}) == [(42,)]


def test_a_client_that_cannot_verify_the_server_is_refused():
    # The system's roots do not know the CA the server made for itself.
    with pytest.raises(Exception, match="certificate"):
        run("grpc+tls")


def test_a_plain_client_gets_no_answer():
    with pytest.raises(Exception, match="(?i)unavailable|connection"):
        run("grpc")
