module sieve-go-driver-test

go 1.21.0

require github.com/go-sql-driver/mysql v1.9.2

require filippo.io/edwards25519 v1.1.0 // indirect
