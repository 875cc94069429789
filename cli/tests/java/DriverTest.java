// MySQL Connector/J and MariaDB Connector/J against `sieve serve`, with default options and
// with server-side prepared statements: connect, typed query results and their metadata,
// prepared statements in a loop, DatabaseMetaData, and Statement.cancel(). Run by
// cli/tests/java_drivers.rs as `java -cp <driver jars> DriverTest.java <driver>`; prints "ok".
// With a second argument, an attached Iceberg namespace (`lake.ns`, cli/tests/iceberg.rs), it
// connects to that database instead and checks that DatabaseMetaData lists and types its
// tables as a tool's tree would, and that a query reads one.

import java.math.BigDecimal;
import java.sql.*;
import java.util.*;

public class DriverTest {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    static void equal(Object got, Object expected, String what) {
        if (!Objects.equals(got, expected))
            throw new AssertionError(what + ": expected " + expected + " ("
                + (expected == null ? "null" : expected.getClass().getSimpleName()) + "), got " + got
                + " (" + (got == null ? "null" : got.getClass().getSimpleName()) + ")");
    }

    public static void main(String[] args) throws Exception {
        String driver = args[0]; // "mysql" or "mariadb"
        String port = System.getenv("SIEVE_PORT");
        String password = System.getenv("SIEVE_PASSWORD");
        String base = "jdbc:" + driver + "://127.0.0.1:" + port + "/";
        String db = "jdbc_" + driver;
        Properties props = new Properties();
        props.setProperty("user", "root");
        props.setProperty("password", password);

        // The first login after the server starts is a full caching_sha2_password one: without
        // TLS the driver encrypts the password to the server's RSA key, fetched only when allowed
        // (MySQL 8's rule). Later logins take the fast path, whatever the transport.
        Properties first = (Properties) props.clone();
        first.setProperty("allowPublicKeyRetrieval", "true");
        first.setProperty("sslMode", driver.equals("mysql") ? "DISABLED" : "disable");
        if (args.length > 1) {
            try (Connection c = DriverManager.getConnection(base + args[1], first)) {
                attached(c, args[1]);
            }
            System.out.println("ok");
            return;
        }
        try (Connection c = DriverManager.getConnection(base, first); Statement s = c.createStatement()) {
            s.execute("create database " + db);
            s.execute("create table " + db + ".t (c1 bigint not null, c2 varchar, i int, d decimal(10,2), b boolean,"
                + " day date, x double) with (index_columns = 'c1,c2', block_rows = 100)");
            StringBuilder insert = new StringBuilder("insert into " + db + ".t values ");
            for (int n = 0; n < 300; n++) {
                if (n > 0) insert.append(", ");
                insert.append("(").append(n).append(", 'v").append(n).append("', ").append(-n).append(", ")
                    .append(n).append(".25, ").append(n % 2 == 0).append(", date '2024-02-29', ")
                    .append(n).append(".5)");
            }
            equal(s.executeUpdate(insert.toString()), 300, "rows inserted");
        }

        // Default options: what DBeaver, DataGrip and Metabase start with.
        try (Connection c = DriverManager.getConnection(base + db, props)) {
            typedResults(c);
            metadata(c, db);
            prepared(c, "client-side");
            cancel(c);
        }
        // Server-side prepared statements (COM_STMT_PREPARE / EXECUTE, the binary protocol).
        Properties server = (Properties) props.clone();
        server.setProperty("useServerPrepStmts", "true");
        try (Connection c = DriverManager.getConnection(base + db, server)) {
            typedResults(c);
            prepared(c, "server-side");
        }
        // TLS required: the login fails unless the server offers it (Connector/J's REQUIRED,
        // MariaDB's trust: encrypted, the certificate not checked).
        Properties tls = (Properties) props.clone();
        tls.setProperty("sslMode", driver.equals("mysql") ? "REQUIRED" : "trust");
        try (Connection c = DriverManager.getConnection(base + db, tls);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("select 42")) {
            check(rs.next(), "a row over TLS");
            equal(rs.getLong(1), 42L, "select over TLS");
        }
        // LOAD DATA LOCAL INFILE: the driver sends the file the server asks for.
        Properties local = (Properties) props.clone();
        local.setProperty(driver.equals("mysql") ? "allowLoadLocalInfile" : "allowLocalInfile", "true");
        java.nio.file.Path file = java.nio.file.Files.createTempFile("sieve-load", ".tsv");
        java.nio.file.Files.writeString(file, "1000\tloaded\n1001\t\\N\n");
        try (Connection c = DriverManager.getConnection(base + db, local); Statement s = c.createStatement()) {
            equal(s.executeUpdate("load data local infile '" + file + "' into table t (c1, c2)"), 2, "rows loaded");
            try (ResultSet rs = s.executeQuery("select count(*) from t where c1 >= 1000 and c2 is null")) {
                check(rs.next(), "a count");
                equal(rs.getLong(1), 1L, "the loaded NULL");
            }
        } finally {
            java.nio.file.Files.delete(file);
        }
        System.out.println("ok");
    }

    static void typedResults(Connection c) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("select c1, c2, i, d, b, day, x from t where c1 = ?")) {
            p.setLong(1, 7);
            try (ResultSet rs = p.executeQuery()) {
                check(rs.next(), "a row for c1 = 7");
                equal(rs.getObject(1), 7L, "bigint");
                equal(rs.getObject(2), "v7", "varchar");
                equal(rs.getObject(3), -7, "int");
                equal(rs.getObject(4), new BigDecimal("7.25"), "decimal(10,2)");
                equal(rs.getObject(5), false, "boolean");
                equal(rs.getObject(6).toString(), "2024-02-29", "date");
                equal(rs.getObject(7), 7.5, "double");
                ResultSetMetaData md = rs.getMetaData();
                equal(md.getColumnTypeName(1), "BIGINT", "type name of c1");
                check(List.of("INT", "INTEGER").contains(md.getColumnTypeName(3)), "type name of i: " + md.getColumnTypeName(3));
                equal(md.getColumnTypeName(4), "DECIMAL", "type name of d");
                equal(md.getScale(4), 2, "scale of d");
                equal(md.getPrecision(4), 10, "precision of d");
                equal(md.getTableName(1), "t", "table of c1");
                equal(md.isNullable(1), ResultSetMetaData.columnNoNulls, "c1 is NOT NULL");
                check(!rs.next(), "one row");
            }
        }
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select 1, version(), 'it''s'")) {
            check(rs.next(), "select 1");
            equal(rs.getLong(1), 1L, "select 1");
            check(rs.getString(2).startsWith("8.0.") && rs.getString(2).contains("-sieve"), "version " + rs.getString(2));
            equal(rs.getString(3), "it's", "quoted literal");
        }
    }

    static void prepared(Connection c, String kind) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("select c1, c2 from t where c2 = ?")) {
            for (int n = 0; n < 300; n += 3) {
                p.setString(1, "v" + n);
                try (ResultSet rs = p.executeQuery()) {
                    check(rs.next(), kind + ": a row for v" + n);
                    equal(rs.getLong(1), (long) n, kind + ": c1 of v" + n);
                    check(!rs.next(), kind + ": one row for v" + n);
                }
            }
            p.setString(1, "v1' or '1'='1");
            try (ResultSet rs = p.executeQuery()) {
                check(!rs.next(), kind + ": a quote in a parameter is data");
            }
        }
        try (PreparedStatement p = c.prepareStatement("select c1 from t where c1 < ? order by c1 limit ?")) {
            p.setInt(1, 100);
            p.setInt(2, 3);
            List<Long> got = new ArrayList<>();
            try (ResultSet rs = p.executeQuery()) {
                while (rs.next()) got.add(rs.getLong(1));
            }
            equal(got, List.of(0L, 1L, 2L), kind + ": LIMIT ?");
        }
    }

    static void metadata(Connection c, String db) throws SQLException {
        DatabaseMetaData md = c.getMetaData();
        check(md.getDatabaseProductVersion().contains("sieve"), "product version " + md.getDatabaseProductVersion());
        List<String> tables = new ArrayList<>();
        try (ResultSet rs = md.getTables(db, null, "%", new String[] {"TABLE"})) {
            while (rs.next()) tables.add(rs.getString("TABLE_NAME"));
        }
        equal(tables, List.of("t"), "getTables");
        Map<String, String> columns = new LinkedHashMap<>();
        try (ResultSet rs = md.getColumns(db, null, "t", "%")) {
            while (rs.next()) columns.put(rs.getString("COLUMN_NAME"), rs.getString("TYPE_NAME"));
        }
        equal(new ArrayList<>(columns.keySet()), List.of("c1", "c2", "i", "d", "b", "day", "x"), "getColumns names");
        equal(columns.get("c1"), "BIGINT", "getColumns type of c1");
        equal(columns.get("d"), "DECIMAL", "getColumns type of d");
        Set<String> indexed = new TreeSet<>();
        try (ResultSet rs = md.getIndexInfo(db, null, "t", false, false)) {
            while (rs.next()) indexed.add(rs.getString("COLUMN_NAME"));
        }
        equal(indexed, new TreeSet<>(List.of("c1", "c2")), "getIndexInfo");
    }

    /** An attached Iceberg namespace `db` (cli/tests/iceberg/tables.py's ns), connected to. */
    static void attached(Connection c, String db) throws SQLException {
        DatabaseMetaData md = c.getMetaData();
        List<String> tables = new ArrayList<>();
        try (ResultSet rs = md.getTables(db, null, "%", new String[] {"TABLE"})) {
            while (rs.next()) tables.add(rs.getString("TABLE_NAME"));
        }
        equal(tables, List.of("empty", "floats", "people", "renamed", "replaced"), "getTables of " + db);
        Map<String, String> columns = new LinkedHashMap<>();
        try (ResultSet rs = md.getColumns(db, null, "people", "%")) {
            while (rs.next()) columns.put(rs.getString("COLUMN_NAME"), rs.getString("TYPE_NAME"));
        }
        equal(columns, new LinkedHashMap<>(Map.of("id", "BIGINT", "name", "VARCHAR")), "getColumns of people");
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select count(*) from people")) {
            check(rs.next(), "a count");
            equal(rs.getLong(1), 10096L, "rows of people");
        }
    }

    /** Statement.cancel() from another thread stops a long statement; the connection goes on. */
    static void cancel(Connection c) throws Exception {
        try (Statement s = c.createStatement()) {
            Thread canceller = new Thread(() -> {
                try {
                    Thread.sleep(1500);
                    s.cancel();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            canceller.start();
            long started = System.nanoTime();
            try {
                s.executeQuery("select sum(number) from numbers(1000000000000)");
                throw new AssertionError("the statement was not cancelled");
            } catch (SQLException e) {
                check(e.getMessage().toLowerCase().contains("interrupted")
                    || e.getMessage().toLowerCase().contains("cancel"), "cancelled: " + e.getMessage());
            }
            canceller.join();
            check(System.nanoTime() - started < 30_000_000_000L, "cancel took too long");
        }
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select 42")) {
            check(rs.next() && rs.getInt(1) == 42, "the connection goes on after a cancel");
        }
    }
}
