//! `caching_sha2_password`, MySQL 8's default login and the server's: the first login after a
//! start proves the password itself (inside TLS, or encrypted to the server's RSA key, which
//! the server makes once and keeps), later ones take the fast path from the cached digest. Every
//! driver's test logs in this way too; here the paths are told apart and the failures checked.

mod common;

use common::wire::{Wire, error_code};
use common::{PASSWORD, Server, serve_refused, stderr, stdout};

#[test]
fn the_first_login_is_full_and_the_next_ones_fast() {
    let mut server = Server::start();
    // A client answering for mysql_native_password is switched; its first login is full (the
    // key fetched and the password encrypted to it), then fast.
    let mut wire = Wire::connect(server.port);
    let (_, ok) = wire.login("root", PASSWORD);
    assert_eq!(ok[0], 0, "{ok:?}");
    assert_eq!(wire.sha2_reply, Some(4), "a full login first");
    let mut wire = Wire::connect(server.port);
    let (_, ok) = wire.login("root", PASSWORD);
    assert_eq!(ok[0], 0, "{ok:?}");
    assert_eq!(wire.sha2_reply, Some(3), "the fast path next");
    // With the digest cached, a scramble that does not match it is a wrong password: MySQL's
    // 1045 at once (through the login throttle), no full login to try again with.
    let mut wire = Wire::connect(server.port);
    let (_, denied) = wire.login("root", "wrong");
    assert_eq!(wire.sha2_reply, None);
    assert_eq!(error_code(&denied), Some(1045));
    assert!(String::from_utf8_lossy(&denied).contains("(using password: YES)"));
    let mut wire = Wire::connect(server.port);
    let (_, denied) = wire.login("nobody", PASSWORD);
    assert_eq!(error_code(&denied), Some(1045));
    // The key is kept over a restart, where the stock client's first login without TLS (full,
    // the digest forgotten) fetches it.
    let out = server.mysql(&["--skip-ssl", "-e", "select 42"]);
    assert_eq!(stdout(&out).trim(), "42", "{}", stderr(&out));
    let key = server.tls_ca().with_file_name("public_key.pem");
    let before = std::fs::read_to_string(&key).unwrap();
    assert!(before.starts_with("-----BEGIN PUBLIC KEY-----"), "{before}");
    server.restart();
    let out = server.mysql(&["--skip-ssl", "-e", "select 43"]);
    assert_eq!(stdout(&out).trim(), "43", "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&key).unwrap(), before);
}

#[test]
fn a_full_login_inside_tls_sends_the_password_without_the_key() {
    let server = Server::start();
    let out = server.mysql(&["--ssl", "-e", "select 42"]);
    assert_eq!(stdout(&out).trim(), "42", "{}", stderr(&out));
    let key = server.tls_ca().with_file_name("private_key.pem");
    assert!(!key.exists(), "no RSA key is needed inside TLS");
    let out = server.mysql(&["--ssl", "-pwrong", "-e", "select 1"]);
    assert!(stderr(&out).contains("1045"), "{}", stderr(&out));
}

#[test]
fn mysql_native_password_stays_available() {
    let server = Server::start_with(
        "default_authentication_plugin = \"mysql_native_password\"",
        None,
    );
    let mut wire = Wire::connect(server.port);
    let (_, ok) = wire.login("root", PASSWORD);
    assert_eq!(ok[0], 0, "{ok:?}");
    assert_eq!(wire.sha2_reply, None, "no switch");
    let out = server.mysql(&["--skip-ssl", "-e", "select 42"]);
    assert_eq!(stdout(&out).trim(), "42", "{}", stderr(&out));
    // An unknown plugin is refused at start, naming the ones there are.
    let said = serve_refused("default_authentication_plugin = \"sha256_password\"");
    assert!(
        said.contains("\"caching_sha2_password\" or \"mysql_native_password\""),
        "{said}"
    );
}
