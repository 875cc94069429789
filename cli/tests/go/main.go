// go-sql-driver/mysql against `sieve serve` (started by tests/go_driver.rs): 1000 prepared
// statements in a loop on one connection, each answer checked, with and without
// interpolateParams. Without it, every query is PREPARE, EXECUTE and a CLOSE the driver sends
// together with the next PREPARE: the pipelining that once desynchronised the protocol.
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "github.com/go-sql-driver/mysql"
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
	fmt.Println("ok")
}
