// go-sql-driver/mysql against `sieve serve` (started by tests/go_driver.rs): 1000 prepared
// statements in a loop on one connection, each answer checked, with and without
// interpolateParams. Without it, every query is PREPARE, EXECUTE and a CLOSE the driver sends
// together with the next PREPARE: the pipelining that once desynchronised the protocol.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"fmt"
	"os"

	"github.com/go-sql-driver/mysql"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	port, password := os.Getenv("SIEVE_PORT"), os.Getenv("SIEVE_PASSWORD")
	for _, interpolate := range []bool{false, true} {
		dsn := fmt.Sprintf("root:%s@tcp(127.0.0.1:%s)/default?interpolateParams=%v",
			password, port, interpolate)
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			fail("open: %v", err)
		}
		// One connection, so statements are closed and prepared back to back on one socket.
		db.SetMaxOpenConns(1)
		if _, err := db.Exec("create table if not exists go_t with (block_rows = 1000) as " +
			"select number as n, concat('v', cast(number as string)) as s from numbers(10000)"); err != nil {
			fail("create: %v", err)
		}
		for i := 0; i < 1000; i++ {
			k := (i * 7919) % 10000
			var n int64
			var s string
			if err := db.QueryRow("select n, s from go_t where n = ?", k).Scan(&n, &s); err != nil {
				fail("interpolate=%v, query %d: %v", interpolate, i, err)
			}
			if n != int64(k) || s != fmt.Sprintf("v%d", k) {
				fail("interpolate=%v, query %d: asked for %d, got (%d, %q)", interpolate, i, k, n, s)
			}
		}
		rows, err := db.Query("select n from go_t where n < ? order by n limit ?", 100, 3)
		if err != nil {
			fail("limit: %v", err)
		}
		var got []int64
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				fail("limit scan: %v", err)
			}
			got = append(got, n)
		}
		rows.Close()
		if fmt.Sprint(got) != "[0 1 2]" {
			fail("interpolate=%v, LIMIT ?: %v", interpolate, got)
		}
		var count int64
		if err := db.QueryRow("select count(*) from go_t where s = ?", "v1' or '1'='1").Scan(&count); err != nil || count != 0 {
			fail("interpolate=%v, quoted string: %d, %v", interpolate, count, err)
		}
		db.Close()
	}
	overTLS(port, password)
	fmt.Println("ok")
}

// overTLS logs in with tls=skip-verify and with the server's certificate verified against its
// CA; each must have run the TLS handshake.
func overTLS(port, password string) {
	pem, err := os.ReadFile(os.Getenv("SIEVE_TLS_CA"))
	if err != nil {
		fail("ca: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		fail("ca: no certificate in it")
	}
	handshakes := 0
	counted := func(tls.ConnectionState) error { handshakes++; return nil }
	if err := mysql.RegisterTLSConfig("verified", &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", VerifyConnection: counted}); err != nil {
		fail("register: %v", err)
	}
	if err := mysql.RegisterTLSConfig("counted", &tls.Config{InsecureSkipVerify: true, VerifyConnection: counted}); err != nil {
		fail("register: %v", err)
	}
	for _, mode := range []string{"skip-verify", "verified", "counted"} {
		db, err := sql.Open("mysql", fmt.Sprintf("root:%s@tcp(127.0.0.1:%s)/default?tls=%s", password, port, mode))
		if err != nil {
			fail("open: %v", err)
		}
		var n int64
		if err := db.QueryRow("select n from go_t where n = ?", 42).Scan(&n); err != nil || n != 42 {
			fail("tls=%s: %d, %v", mode, n, err)
		}
		db.Close()
	}
	if handshakes < 2 {
		fail("%d TLS handshakes, expected one per verified and counted login", handshakes)
	}
}
