//! `sieve tls-certs --dir D NAME…`: a CA and a certificate it signed for the given host names
//! (or IP addresses), kept in D (`ca.pem`, `server-cert.pem`, `server-key.pem`; made once, kept
//! after). For workers and the coordinators that verify them, where no other CA is at hand:
//! `docker compose` makes its cluster's certificates this way.

use std::path::PathBuf;

use clap::Args;

#[derive(Args)]
pub struct TlsCertsArgs {
    /// Where the CA and the certificate go (or already are)
    #[arg(long)]
    dir: PathBuf,
    /// The host names and addresses the certificate is for
    #[arg(required = true)]
    names: Vec<String>,
}

pub fn run(args: TlsCertsArgs) -> Result<(), String> {
    let files = sieve_mysql::self_signed(&args.dir, &args.names)?;
    println!(
        "certificate {} and key {}, signed by {}",
        files.cert.display(),
        files.key.display(),
        args.dir.join("ca.pem").display()
    );
    Ok(())
}
