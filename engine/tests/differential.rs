//! Differential test of every pruning path: random data of several types, random `=`, `IN`, `OR`
//! and `AND` queries (including literals of other types than the column), each run with pruning on
//! (locators, then sidecars), with the locator off (sidecars only) and with pruning off; the
//! results must be equal. A filter or a locator must never cause a missing row. The short path of
//! point lookups is checked the same way: each query (and a projection of it), as text and as a
//! prepared statement with its literals bound as parameters, against the full path.

mod common;

use datafusion::common::ScalarValue;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sieve_engine::{Engine, QueryOutput, Session};

const ROWS: usize = 600;

/// Sorted rows as text, so results compare regardless of order.
fn rows(output: &QueryOutput) -> Vec<String> {
    let mut rows = common::rows(output);
    rows.sort();
    rows
}

fn int_literal(rng: &mut StdRng) -> i64 {
    rng.random_range(-40..40)
}

fn text_literal(rng: &mut StdRng) -> String {
    format!("'k{}'", rng.random_range(0..120))
}

/// A random literal for `column`, sometimes of another type than the column's.
fn literal(rng: &mut StdRng, column: &str) -> String {
    match column {
        "i32" | "i64" => match rng.random_range(0..6) {
            0 => format!("'{}'", int_literal(rng)),
            1 => format!("{}.0", int_literal(rng)),
            2 => format!("{}.5", int_literal(rng)),
            _ => int_literal(rng).to_string(),
        },
        "u64" => match rng.random_range(0..5) {
            0 => format!("{}.0", rng.random_range(0..200)),
            1 => "-1".into(),
            _ => rng.random_range(0..200).to_string(),
        },
        "s" if rng.random_ratio(1, 6) => rng.random_range(0..50).to_string(),
        other => value(rng, other, 0),
    }
}

/// A stored value of `column` for row `row`: small domains, so queries find rows and blocks
/// share values.
fn value(rng: &mut StdRng, column: &str, row: usize) -> String {
    match column {
        "i32" => int_literal(rng).to_string(),
        "i64" => (row as i64 - 300).to_string(),
        "u64" => rng.random_range(0..200).to_string(),
        "f64" => format!("{}", rng.random_range(-20..20) as f64 / 4.0),
        "s" => text_literal(rng),
        "d" => format!("DATE '2024-01-{:02}'", rng.random_range(1..29)),
        "b" => if rng.random_bool(0.5) {
            "true"
        } else {
            "false"
        }
        .into(),
        "dec" => format!(
            "{}.{:02}",
            rng.random_range(0..30),
            [0, 25, 50][rng.random_range(0..3)]
        ),
        other => unreachable!("{other}"),
    }
}

const COLUMNS: [&str; 8] = ["i32", "i64", "u64", "f64", "s", "d", "b", "dec"];

/// A lookup's condition on an integer or string column, with values of the column's kind.
fn key_condition(rng: &mut StdRng) -> String {
    let column = ["i32", "i64", "u64", "s"][rng.random_range(0..4)];
    let key = |rng: &mut StdRng| {
        let row = rng.random_range(0..ROWS);
        value(rng, column, row)
    };
    match rng.random_range(0..3) {
        0 => format!("{column} = {}", key(rng)),
        1 => {
            let list: Vec<String> = (0..rng.random_range(1..8)).map(|_| key(rng)).collect();
            format!("{column} IN ({})", list.join(", "))
        }
        _ => format!("({column} = {} OR {column} = {})", key(rng), key(rng)),
    }
}

fn condition(rng: &mut StdRng) -> String {
    let column = COLUMNS[rng.random_range(0..COLUMNS.len())];
    match rng.random_range(0..4) {
        0 => format!("{column} = {}", literal(rng, column)),
        1 => {
            let n = rng.random_range(1..40);
            let list: Vec<String> = (0..n).map(|_| literal(rng, column)).collect();
            format!("{column} IN ({})", list.join(", "))
        }
        2 => format!(
            "({column} = {} OR {column} = {})",
            literal(rng, column),
            literal(rng, column)
        ),
        _ => format!(
            "{column} IS NOT NULL AND {column} = {}",
            literal(rng, column)
        ),
    }
}

fn query(rng: &mut StdRng) -> String {
    let predicate = match rng.random_range(0..4) {
        0 => format!("{} AND {}", condition(rng), condition(rng)),
        1 => format!("{} OR {}", condition(rng), condition(rng)),
        _ => condition(rng),
    };
    format!("select * from t where {predicate}")
}

async fn load(session: &Session, rng: &mut StdRng) {
    session
        .execute(
            "create table t (i32 int, i64 bigint, u64 bigint unsigned, f64 double, s varchar, d date, b boolean, dec decimal(12, 2)) with (block_rows = 40)",
        )
        .await
        .unwrap();
    for chunk in 0..ROWS / 100 {
        let values: Vec<String> = (0..100)
            .map(|i| {
                let row = chunk * 100 + i;
                let cells: Vec<String> = COLUMNS
                    .iter()
                    .map(|c| {
                        let v = value(rng, c, row);
                        if rng.random_ratio(1, 12) {
                            "NULL".into()
                        } else {
                            v
                        }
                    })
                    .collect();
                format!("({})", cells.join(", "))
            })
            .collect();
        session
            .execute(&format!("insert into t values {}", values.join(", ")))
            .await
            .unwrap();
    }
}

async fn differential(location: &str, seed: u64) {
    let engine = Engine::open(location).await.unwrap();
    let pruned = engine.session().unwrap();
    let unpruned = engine.session().unwrap();
    unpruned.execute("set sieve.pruning = false").await.unwrap();
    let sidecars_only = engine.session().unwrap();
    sidecars_only
        .execute("set sieve.locator = false")
        .await
        .unwrap();
    let full_path = engine.session().unwrap();
    full_path
        .execute("set sieve.short_path = false")
        .await
        .unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    load(&pruned, &mut rng).await;

    let (mut queries, mut pruned_some, mut matched_some, mut refused) = (0, 0, 0, 0);
    let mut short = ShortPathCounts::default();
    for _ in 0..200 {
        let sql = query(&mut rng);
        let mut with = pruned.execute(&sql).await;
        short.compare(&pruned, &full_path, &sql).await;
        let projected = sql.replacen("select *", "select s, i64 as x, t.u64", 1);
        short.compare(&pruned, &full_path, &projected).await;
        // A lookup on the integer and string columns, which the short path plans.
        let (a, b) = (key_condition(&mut rng), key_condition(&mut rng));
        let lookup = match rng.random_range(0..3) {
            0 => format!("select i64, s from t where {a}"),
            1 => format!("select * from t where {a} and ({b})"),
            _ => format!("select s as key from t where {a} or {b}"),
        };
        short.compare(&pruned, &full_path, &lookup).await;
        // The full-scan guard may refuse a filter that skips no block; with ALLOW FILTERING the
        // same query must then indeed have skipped none.
        if let Err(e) = &with
            && e.to_string().contains("refusing to read all")
        {
            short
                .compare(&pruned, &full_path, &format!("{sql} allow filtering"))
                .await;
            let allowed = pruned.execute(&format!("{sql} allow filtering")).await;
            if let Ok(allowed) = &allowed {
                assert_eq!(
                    allowed.stats.blocks_read, allowed.stats.blocks_total,
                    "{sql}: {e}"
                );
            }
            refused += 1;
            with = allowed;
        }
        let without = unpruned.execute(&sql).await;
        let by_sidecars = sidecars_only
            .execute(&format!("{sql} allow filtering"))
            .await;
        match (with, without) {
            (Ok(with), Ok(without)) => {
                assert_eq!(
                    rows(&with),
                    rows(&without),
                    "pruning changed the result of {sql}"
                );
                assert_eq!(
                    rows(&by_sidecars.unwrap()),
                    rows(&without),
                    "pruning without the locator changed the result of {sql}"
                );
                assert_eq!(without.stats.blocks_read, without.stats.blocks_total);
                queries += 1;
                pruned_some += usize::from(with.stats.blocks_read < with.stats.blocks_total);
                matched_some += usize::from(with.row_count() > 0);
            }
            // e.g. comparing a text column with an integer: a cast error either way (the failing
            // row, and so the message, may differ).
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{sql}: pruned {:?} vs unpruned {:?}", a.err(), b.err()),
        }
    }
    assert!(queries > 120, "only {queries} queries ran");
    short.check();
    assert!(
        refused > 0,
        "the full-scan guard refused none of {queries} queries"
    );
    assert!(
        pruned_some > queries / 3,
        "pruning skipped blocks in only {pruned_some} of {queries} queries"
    );
    assert!(
        matched_some > queries / 4,
        "only {matched_some} of {queries} queries found rows"
    );
}

/// How many statements the short path planned, of those compared with the full path.
#[derive(Default)]
struct ShortPathCounts {
    text: usize,
    prepared: usize,
    compared: usize,
}

impl ShortPathCounts {
    /// Runs `sql` with the short path on and off, as text and prepared with its integer and
    /// string literals as parameters, and asserts the same result (rows, columns, blocks read)
    /// or the same error.
    async fn compare(&mut self, short: &Session, full: &Session, sql: &str) {
        let expected = full.execute(sql).await;
        let text = short.execute(sql).await;
        self.text += usize::from(text.as_ref().is_ok_and(|o| o.short_path));
        same(sql, &text, &expected);
        let (template, params) = parameters(sql);
        let prepared = async |session: &Session| {
            let prepared = session.prepare(&template).await?;
            let rows = session.execute_prepared(&prepared, params.clone()).await?;
            rows.collect().await
        };
        let output = prepared(short).await;
        self.prepared += usize::from(output.as_ref().is_ok_and(|o| o.short_path));
        same(&template, &output, &prepared(full).await);
        self.compared += 1;
    }

    fn check(&self) {
        let Self {
            text,
            prepared,
            compared,
        } = self;
        assert!(
            *text > compared / 4 && *prepared > compared / 4,
            "the short path planned {text} text and {prepared} prepared of {compared} queries"
        );
    }
}

fn same(
    sql: &str,
    short: &datafusion::error::Result<QueryOutput>,
    full: &datafusion::error::Result<QueryOutput>,
) {
    match (short, full) {
        (Ok(short), Ok(full)) => {
            assert_eq!(rows(short), rows(full), "the short path changed {sql}");
            assert_eq!(
                short.schema, full.schema,
                "the short path's columns of {sql}"
            );
            // Unless DataFusion's optimizer proved the filter false (`u64 = 1 AND u64 = 2`) and
            // left no scan, or the short path answered from the results of the same lookup, both
            // paths prune alike.
            if full.stats.blocks_total > 0 && short.stats.blocks_total > 0 {
                assert_eq!(
                    short.stats.blocks_read, full.stats.blocks_read,
                    "the short path read other blocks for {sql}"
                );
            }
        }
        // The same error, up to the value that failed first (which may be another row's).
        (Err(short), Err(full)) => assert_eq!(unquoted(short), unquoted(full), "{sql}"),
        (a, b) => panic!(
            "{sql}: short path {:?} vs full path {:?}",
            a.as_ref().err(),
            b.as_ref().err()
        ),
    }
}

fn unquoted(error: &datafusion::error::DataFusionError) -> String {
    let text = error.to_string();
    text.split('\'').step_by(2).collect::<Vec<_>>().join("'…'")
}

/// `sql` with its integer and quoted string literals (not dates) replaced by `?`, and their
/// values as a client binds them (an integer, a string).
fn parameters(sql: &str) -> (String, Vec<ScalarValue>) {
    let (mut template, mut params) = (String::new(), Vec::new());
    let mut rest = sql;
    while let Some(at) = rest.find(|c: char| c == '\'' || c == '-' || c.is_ascii_digit()) {
        let (before, from) = rest.split_at(at);
        let word_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
        template.push_str(before);
        if template.ends_with(word_char) {
            // Inside a name (i32) or a decimal: keep the character.
            let c = from.chars().next().unwrap();
            template.push(c);
            rest = &from[c.len_utf8()..];
            continue;
        }
        if let Some(quoted) = from.strip_prefix('\'') {
            let end = quoted.find('\'').unwrap();
            if template.ends_with("DATE ") {
                template.push_str(&from[..end + 2]);
            } else {
                params.push(ScalarValue::Utf8(Some(quoted[..end].to_string())));
                template.push('?');
            }
            rest = &quoted[end + 1..];
            continue;
        }
        let end = from[1..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(from.len(), |e| e + 1);
        let (number, after) = from.split_at(end);
        match number.parse::<i64>() {
            Ok(n) if !after.starts_with('.') => {
                params.push(ScalarValue::Int64(Some(n)));
                template.push('?');
            }
            _ => template.push_str(number),
        }
        rest = after;
    }
    template.push_str(rest);
    (template, params)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_equals_unpruned_on_memory() {
    differential("memory://", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_equals_unpruned_on_local_files() {
    let dir = tempfile::tempdir().unwrap();
    differential(dir.path().to_str().unwrap(), 2).await;
}

/// Against MinIO: fails unless SIEVE_TEST_S3_URL (and the AWS_* variables) are set, as
/// scripts/test.sh sets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_equals_unpruned_on_s3() {
    let base = common::s3_base();
    differential(&format!("{base}/differential-{}", uuid_like()), 3).await;
}

fn uuid_like() -> String {
    format!("{:x}", rand::rng().random::<u64>())
}
