//! TLS on the MySQL port with the stock client: the server makes its certificate at first start
//! (a CA and a server certificate it signed) and keeps it, the client verifies it against the
//! CA, and `require_secure_transport` refuses plain logins from beyond loopback. The drivers'
//! TLS logins are in their own tests (python, go, java, node), against the same certificate.

mod common;

use std::net::{IpAddr, UdpSocket};

use common::wire::{Wire, error_code};
use common::{PASSWORD, Server, stderr, stdout};

/// The client's `status` command reports the cipher of a TLS connection.
fn cipher(out: &std::process::Output) -> Option<String> {
    stdout(out)
        .lines()
        .find_map(|l| l.trim().strip_prefix("SSL:"))
        .map(|s| s.trim().to_string())
}

#[test]
fn the_stock_client_verifies_the_servers_own_certificate() {
    let mut server = Server::start();
    let ca = server.tls_ca();
    let ca = ca.to_str().unwrap();
    let verified = [
        "--ssl",
        "--ssl-verify-server-cert",
        &format!("--ssl-ca={ca}"),
    ];
    let out = server.mysql(&[&verified[..], &["-e", "status"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let in_use = cipher(&out).unwrap_or_default();
    assert!(
        in_use.starts_with("Cipher in use is TLS"),
        "{}",
        stdout(&out)
    );
    let out = server.mysql(&[&verified[..], &["-e", "select 42"]].concat());
    assert_eq!(stdout(&out).trim(), "42", "{}", stderr(&out));
    // Offered, TLS is what the client uses by default; --skip-ssl stays plain.
    let out = server.mysql(&["-e", "status"]);
    assert!(
        cipher(&out)
            .unwrap_or_default()
            .starts_with("Cipher in use")
    );
    let out = server.mysql(&["--skip-ssl", "-e", "status"]);
    assert_eq!(
        cipher(&out).as_deref(),
        Some("Not in use"),
        "{}",
        stdout(&out)
    );
    // A CA that did not sign it fails the verification.
    let other = tempfile::tempdir().unwrap();
    sieve_mysql::self_signed(other.path(), &["127.0.0.1".to_string()]).unwrap();
    let stranger = other.path().join("ca.pem");
    let out = server.mysql(&[
        "--ssl",
        "--ssl-verify-server-cert",
        &format!("--ssl-ca={}", stranger.display()),
        "-e",
        "select 1",
    ]);
    assert!(!out.status.success(), "a stranger's CA verified the server");
    // The certificate is kept: a restarted server on the same directory offers the same one.
    let before = std::fs::read(server.tls_ca()).unwrap();
    assert!(server.terminate().success());
    assert_eq!(std::fs::read(server.tls_ca()).unwrap(), before);
}

/// The certificate the server makes names the address it listens on, a loopback one other than
/// 127.0.0.1 included: a client that checks the name connects.
#[test]
fn the_servers_own_certificate_names_the_address_it_listens_on() {
    let server = Server::start_with("host = \"127.0.0.2\"", None);
    let out = std::process::Command::new("mysql")
        .args(["-h127.0.0.2", &format!("-P{}", server.port), "-uroot"])
        .arg(format!("-p{PASSWORD}"))
        .args(["--ssl", "--ssl-verify-server-cert"])
        .arg(format!("--ssl-ca={}", server.tls_ca().display()))
        .args(["--batch", "--skip-column-names", "-e", "select 42"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).trim(), "42", "{}", stderr(&out));
}

/// This machine's address on its default route: where a client beyond loopback comes from.
fn outward_address() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    // No packet is sent: connecting a UDP socket only picks the route.
    socket
        .connect("192.0.2.1:9")
        .and_then(|()| socket.local_addr())
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
        .expect("this test needs an address beyond loopback (a default route)")
}

#[test]
fn require_secure_transport_refuses_plain_logins_beyond_loopback() {
    let server = Server::start_with("host = '0.0.0.0'\nrequire_secure_transport = true", None);
    let outward = outward_address().to_string();
    // Plain, from beyond loopback: MySQL's error 3159.
    let mut wire = Wire::connect_to(&outward, server.port);
    let (_, reply) = wire.login("root", PASSWORD);
    assert_eq!(error_code(&reply), Some(3159));
    assert!(String::from_utf8_lossy(&reply).contains("insecure transport"));
    // Over TLS from there, and plain on loopback, logins work.
    let tls = server.mysql(&["-h", &outward, "--ssl", "-e", "select 42"]);
    assert_eq!(stdout(&tls).trim(), "42", "{}", stderr(&tls));
    let plain = server.mysql(&["-e", "select 43"]);
    assert_eq!(stdout(&plain).trim(), "43", "{}", stderr(&plain));
}
