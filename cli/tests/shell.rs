//! `sieve sql` and the command line's help and errors.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{assert_fails_with, sieve, sql, stderr, stdout};

#[test]
fn execute_prints_tables_and_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    let out = sieve()
        .args(["--storage", storage, "sql", "-e"])
        .arg("create table t with (block_rows = 4) as select number as n from numbers(10); select n from t where n = 7;")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Query OK, 10 rows affected"), "{text}");
    assert!(
        text.contains("| 7 |") && text.contains("1 row in set"),
        "{text}"
    );
    assert!(text.contains("blocks read 1 of 3"), "{text}");

    // The table is on disk: a second invocation sees it, reading a script from stdin.
    let mut child = sieve()
        .args(["--storage", storage, "sql"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"select count(*) as c\nfrom t;\nselect * from t where n = 99;\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("| 10 |") && text.contains("Empty set"),
        "{text}"
    );
}

#[test]
fn errors_are_one_line_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = sql(dir.path().to_str().unwrap(), "select * from nope");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("nope"), "{err}");

    let out = sql("ftp://x/y", "select 1");
    assert_fails_with(&out, "unsupported scheme");
}

#[test]
fn help_describes_every_command() {
    let out = sieve().arg("--help").output().unwrap();
    let text = stdout(&out);
    for word in ["serve", "sql", "--storage"] {
        assert!(text.contains(word), "{word} missing from\n{text}");
    }
    let out = sieve().args(["serve", "--help"]).output().unwrap();
    let text = stdout(&out);
    for word in ["--host", "--port", "--user", "--password", "SIEVE_PASSWORD"] {
        assert!(text.contains(word), "{word} missing from\n{text}");
    }
}

#[test]
fn serving_beyond_loopback_needs_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = sieve()
        .args([
            "--storage",
            dir.path().to_str().unwrap(),
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ])
        .env_remove("SIEVE_PASSWORD")
        .output()
        .unwrap();
    assert_fails_with(&out, "without a password");
}

#[test]
fn two_processes_append_to_one_table_without_loss() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_str().unwrap();
    let created = sql(
        storage,
        "create table t (n bigint unsigned) with (block_rows = 1000)",
    );
    assert!(created.status.success(), "{}", stderr(&created));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let sql = format!(
                "insert into t select number + {} from numbers(5000)",
                w * 5000
            );
            sieve()
                .args(["--storage", storage, "sql", "-e", &sql])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for writer in writers {
        let out = writer.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = sql(storage, "select count(*), count(distinct n) from t");
    let text = stdout(&out);
    assert!(text.contains("| 10000    | 10000"), "{text}");
}

#[test]
fn a_config_file_sets_the_storage_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sieve.toml");
    let storage = dir.path().join("from-config");
    std::fs::write(
        &config,
        format!("storage = {:?}\nport = 4000\n", storage.to_str().unwrap()),
    )
    .unwrap();
    let out = sieve()
        .args([
            "--config",
            config.to_str().unwrap(),
            "sql",
            "-e",
            "create table c (a int)",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        storage.join("catalog").exists(),
        "the config's storage was used"
    );

    std::fs::write(&config, "colour = 'red'\n").unwrap();
    let out = sieve()
        .args([
            "--config",
            config.to_str().unwrap(),
            "sql",
            "-e",
            "select 1",
        ])
        .output()
        .unwrap();
    assert_fails_with(&out, "colour");
}

#[test]
fn a_plain_http_endpoint_without_aws_allow_http_says_what_to_set() {
    let out = sieve()
        .args(["--storage", "s3://bucket/prefix", "sql", "-e", "select 1"])
        .env("AWS_ENDPOINT", "http://127.0.0.1:9")
        .env_remove("AWS_ALLOW_HTTP")
        .env_remove("AWS_ENDPOINT_URL")
        .output()
        .unwrap();
    assert_fails_with(&out, "set AWS_ALLOW_HTTP=true");
}

#[test]
fn the_embedded_shell_loads_local_files_itself() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("data");
    let storage = storage.to_str().unwrap();
    let file = dir.path().join("rows.csv");
    std::fs::write(&file, "n,s\n1,a\n2,b\n3,c\n").unwrap();
    let file = file.to_str().unwrap();
    let out = sql(
        storage,
        &format!(
            "create table t (n bigint, s varchar); \
             load data local infile '{file}' into table t fields terminated by ',' ignore 1 lines; \
             select sum(n), max(s) from t"
        ),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Query OK, 3 rows affected"), "{text}");
    assert!(
        text.contains("Records: 3  Deleted: 0  Skipped: 0"),
        "{text}"
    );
    assert!(text.contains("| 6 ") && text.contains("| c "), "{text}");

    let out = sql(
        storage,
        "load data local infile '/nonexistent/rows.csv' into table t",
    );
    assert_fails_with(&out, "cannot read /nonexistent/rows.csv");
}
