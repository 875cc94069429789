// mysql2 against `sieve serve` (started by tests/node_driver.rs): `execute` is a server-side
// prepared statement; LIMIT ? and typed values must bind, each answer is checked.
const mysql = require("mysql2/promise");

async function main() {
  const conn = await mysql.createConnection({
    host: "127.0.0.1",
    port: Number(process.env.SIEVE_PORT),
    user: "root",
    password: process.env.SIEVE_PASSWORD,
    database: "default",
  });
  await conn.query(
    "create table if not exists node_t with (block_rows = 1000) as " +
      "select number as n, concat('v', cast(number as string)) as s from numbers(5000)",
  );
  const [limited] = await conn.execute(
    "select n from node_t where n < ? order by n limit ?",
    [100, 3],
  );
  assert(JSON.stringify(limited.map((r) => Number(r.n))) === "[0,1,2]", limited);
  for (let i = 0; i < 200; i++) {
    const k = (i * 7919) % 5000;
    const [rows] = await conn.execute("select n, s from node_t where s = ?", [`v${k}`]);
    assert(rows.length === 1 && Number(rows[0].n) === k && rows[0].s === `v${k}`, rows);
  }
  const [none] = await conn.execute("select n from node_t where s = ?", ["v1' or '1'='1"]);
  assert(none.length === 0, none);
  const [[version]] = await conn.query("select version() as v");
  assert(/^8\.0\.\d+-sieve-/.test(version.v), version);
  await conn.end();
  // Over TLS, the server's certificate verified against its CA (with `ssl` set, mysql2 fails
  // the login with "Server does not support secure connection" if the server does not offer it).
  const secure = await mysql.createConnection({
    host: "127.0.0.1",
    port: Number(process.env.SIEVE_PORT),
    user: "root",
    password: process.env.SIEVE_PASSWORD,
    ssl: { ca: require("fs").readFileSync(process.env.SIEVE_TLS_CA) },
  });
  const [[answer]] = await secure.query("select 42 as v");
  assert(Number(answer.v) === 42, answer);
  await secure.end();
  console.log("ok");
}

function assert(ok, what) {
  if (!ok) {
    console.error("unexpected:", JSON.stringify(what));
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
