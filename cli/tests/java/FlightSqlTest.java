// Apache Arrow's Flight SQL JDBC driver against `sieve serve --flight-port`: login with the
// server's user and password, typed results and their metadata, a prepared statement with a
// parameter bound per execution, DatabaseMetaData's catalogs, schemas and tables, and an error
// that names the table. Run by cli/tests/java_drivers.rs as `java -cp <driver jars>
// FlightSqlTest.java`; prints "ok".

import java.sql.*;
import java.util.*;

public class FlightSqlTest {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    static void equal(Object got, Object expected, String what) {
        if (!Objects.equals(got, expected))
            throw new AssertionError(what + ": expected " + expected + ", got " + got);
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:arrow-flight-sql://127.0.0.1:" + System.getenv("SIEVE_FLIGHT_PORT")
            + "/?useEncryption=false";
        Properties props = new Properties();
        props.setProperty("user", "root");
        props.setProperty("password", System.getenv("SIEVE_PASSWORD"));
        try (Connection c = DriverManager.getConnection(url, props)) {
            try (Statement s = c.createStatement()) {
                s.execute("create table fj_t (c1 bigint not null, c2 varchar, x double) "
                    + "with (index_columns = 'c1,c2', block_rows = 100) as "
                    + "select number, concat('v', cast(number as varchar)), number * 0.5 from numbers(300)");
                try (ResultSet r = s.executeQuery("select c1, c2, x from fj_t where c1 in (7, 250) order by c1")) {
                    ResultSetMetaData meta = r.getMetaData();
                    equal(meta.getColumnCount(), 3, "columns");
                    equal(meta.getColumnName(2), "c2", "second column's name");
                    equal(meta.getColumnType(1), Types.BIGINT, "c1's JDBC type");
                    check(r.next(), "first row");
                    equal(r.getLong(1), 7L, "c1");
                    equal(r.getString(2), "v7", "c2");
                    equal(r.getDouble(3), 3.5, "x");
                    check(r.next(), "second row");
                    equal(r.getLong(1), 250L, "c1");
                    check(!r.next(), "two rows");
                }
                try {
                    s.executeQuery("select * from fj_nope");
                    throw new AssertionError("a query of a missing table succeeded");
                } catch (SQLException e) {
                    check(e.getMessage().contains("fj_nope"), "the error names the table: " + e.getMessage());
                }
            }
            try (PreparedStatement p = c.prepareStatement("select c1 from fj_t where c2 = ?")) {
                for (int n : new int[] {0, 123, 299}) {
                    p.setString(1, "v" + n);
                    try (ResultSet r = p.executeQuery()) {
                        check(r.next(), "a row for v" + n);
                        equal(r.getLong(1), (long) n, "c1 of v" + n);
                        check(!r.next(), "one row for v" + n);
                    }
                }
            }
            // A batch sends a row of parameters per execution: every row is inserted.
            try (Statement s = c.createStatement()) {
                s.execute("create table fj_b (k bigint, v varchar)");
            }
            try (PreparedStatement p = c.prepareStatement("insert into fj_b values (?, ?)")) {
                for (int n = 1; n <= 3; n++) {
                    p.setLong(1, n);
                    p.setString(2, "b" + n);
                    p.addBatch();
                }
                p.executeBatch();
            }
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("select count(*), sum(k) from fj_b")) {
                check(r.next(), "a row");
                equal(r.getLong(1), 3L, "rows inserted by the batch");
                equal(r.getLong(2), 6L, "their keys");
            }
            DatabaseMetaData meta = c.getMetaData();
            List<String> tables = new ArrayList<>();
            try (ResultSet r = meta.getTables(null, "default", "fj_%", null)) {
                while (r.next()) tables.add(r.getString("TABLE_NAME"));
            }
            equal(tables, List.of("fj_b", "fj_t"), "tables of default");
            List<String> schemas = new ArrayList<>();
            try (ResultSet r = meta.getSchemas()) {
                while (r.next()) schemas.add(r.getString("TABLE_SCHEM"));
            }
            check(schemas.contains("default"), "schemas: " + schemas);
        }
        System.out.println("ok");
    }
}
