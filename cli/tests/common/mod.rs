//! Runs the real `sieve` binary: `sieve sql` in-process calls and a `sieve serve` that lives as
//! long as the test.

#![allow(dead_code)] // each test file uses its own part of the helpers

pub mod prometheus;
pub mod pyiceberg;
pub mod wire;
pub mod worker;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const PASSWORD: &str = "s3cret";
const MYSQL_MISSING: &str =
    "the mysql client is not installed (scripts/test.sh installs mariadb-client)";

pub fn sieve() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sieve"))
}

/// How long one client command may run before its test fails: far beyond any statement the
/// tests send, so only a process that stopped answering reaches it, and the suite goes on.
pub const CLIENT_LIMIT: Duration = Duration::from_secs(300);

/// `sieve --storage <storage> sql -e <sql>`, run to completion.
pub fn sql(storage: &str, sql: &str) -> Output {
    let mut command = sieve();
    command.args(["--storage", storage, "sql", "-e", sql]);
    output_within(command, None, String::new)
}

/// `command`'s output, as [`Command::output`] gives it, `input` fed to its standard input; if it
/// has not exited within [`CLIENT_LIMIT`], kills it and fails the test with what it printed and
/// `context()` (a server's log): a server that stops answering fails one test, not the whole
/// run by its time limit.
pub fn output_within(
    mut command: Command,
    input: Option<&str>,
    context: impl FnOnce() -> String,
) -> Output {
    let mut child = command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} does not run: {e}"));
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        // A client that exits before reading everything closes the pipe: its status says why.
        let _ = stdin.write_all(input.as_bytes());
    }
    let status = match wait_timeout::ChildExt::wait_timeout(&mut child, CLIENT_LIMIT).unwrap() {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            let said = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).to_string();
            panic!(
                "{command:?} did not finish within {CLIENT_LIMIT:?}\nit printed:\n{}\n{}\n{}",
                said(out.join().unwrap()),
                said(err.join().unwrap()),
                context()
            );
        }
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Sends `name` (TERM, INT, …) to a child process, as a user at a terminal would.
pub fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([format!("-{name}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} failed");
}

/// The port a process started with `--port 0` logs that it listens on (`marker`, then an
/// address, in its log at `log`); fails the test with the log if the process exits or says
/// nothing for 30 s. The kernel picks the port as the process binds it: a port found free
/// beforehand and released can be taken by another test's process meanwhile, and a probe that
/// connects to it before the process listens may connect to itself.
pub fn listening_port(child: &mut Child, log: &Path, marker: &str) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        if let Some((_, rest)) = said.split_once(marker) {
            let address = rest.split([',', ' ', '\n']).next().unwrap_or_default();
            // Jetty's `{0.0.0.0:8181}` ends in a brace.
            let address = address.trim_end_matches(|c: char| !c.is_ascii_digit());
            let port = address.rsplit_once(':').and_then(|(_, p)| p.parse().ok());
            return port.unwrap_or_else(|| panic!("no port in {marker:?}: {said}"));
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{marker:?} never logged; the process exited ({status}):\n{said}");
        }
        assert!(
            Instant::now() < deadline,
            "{marker:?} never logged:\n{said}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The JDBC drivers' jars, as a class path: scripts/test.sh fetches them.
pub fn jdbc_jars() -> String {
    std::env::var("SIEVE_JDBC_JARS")
        .expect("SIEVE_JDBC_JARS names the JDBC drivers' jars (scripts/test.sh fetches them)")
}

/// `java … tests/java/DriverTest.java ARGS` with the JDBC drivers on its class path, for
/// [`Server::run_client`].
pub fn driver_test(args: &[&str]) -> Command {
    let mut java = Command::new("java");
    java.args([
        "-cp",
        &jdbc_jars(),
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/java/DriverTest.java"),
    ]);
    java.args(args);
    java
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What `sieve serve` with `config` as its configuration says when it refuses to start; fails
/// the test if it starts instead (still running after 30 s) or exits well.
pub fn serve_refused(config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sieve.toml");
    std::fs::write(&path, config).unwrap();
    let log = dir.path().join("stderr");
    let mut child = sieve()
        .args(["--storage", dir.path().join("data").to_str().unwrap()])
        .args(["--config", path.to_str().unwrap()])
        .args(["serve", "--port", &free_port().to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sieve serve started with {config:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        !status.success(),
        "sieve serve exited well with {config:?}: {said}"
    );
    said
}

/// A `sieve serve` on a free loopback port over a fresh directory; killed on drop.
pub struct Server {
    pub port: u16,
    child: Child,
    dir: tempfile::TempDir,
    storage: String,
}

impl Server {
    pub fn start() -> Self {
        Self::start_with("", None)
    }

    /// A server with `config` as its TOML configuration file, and at most `open_files` file
    /// descriptors if given (`ulimit -n`).
    pub fn start_with(config: &str, open_files: Option<u32>) -> Self {
        Self::spawn(None, config, open_files)
    }

    /// A server over `storage` (a URL or directory another process may share).
    pub fn start_on(storage: &str, config: &str) -> Self {
        Self::spawn(Some(storage), config, None)
    }

    fn spawn(storage: Option<&str>, config: &str, open_files: Option<u32>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let storage = match storage {
            Some(s) => s.to_string(),
            None => dir.path().join("data").to_str().unwrap().to_string(),
        };
        std::fs::write(dir.path().join("sieve.toml"), config).unwrap();
        let (port, child) = Self::launch(dir.path(), &storage, open_files);
        Self {
            port,
            child,
            dir,
            storage,
        }
    }

    /// Stops this server and starts another over what it had: its directory (configuration,
    /// TLS and RSA keys) and storage, on a new port.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        (self.port, self.child) = Self::launch(self.dir.path(), &self.storage, None);
    }

    /// A `sieve serve` over `dir` and `storage`, listening: its port and process.
    fn launch(dir: &Path, storage: &str, open_files: Option<u32>) -> (u16, Child) {
        let log_path = dir.join("server.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let config_path = dir.join("sieve.toml");
        let mut command = match open_files {
            Some(n) => {
                let mut shell = Command::new("sh");
                shell.args([
                    "-c",
                    &format!("ulimit -n {n} && exec \"$0\" \"$@\""),
                    env!("CARGO_BIN_EXE_sieve"),
                ]);
                shell
            }
            None => sieve(),
        };
        let mut child = command
            .args([
                "--storage",
                storage,
                "--config",
                config_path.to_str().unwrap(),
                "serve",
                "--port",
                "0",
            ])
            .env("SIEVE_PASSWORD", PASSWORD)
            .env("SIEVE_TLS_DIR", dir.join("tls"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let port = listening_port(&mut child, &log_path, "serving the MySQL protocol on ");
        (port, child)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The CA the server's own TLS certificate is signed by (made at its start).
    /// The directory the server's storage is in (a server started without a storage URL).
    pub fn storage_dir(&self) -> std::path::PathBuf {
        std::path::PathBuf::from(&self.storage)
    }

    pub fn tls_ca(&self) -> std::path::PathBuf {
        self.dir.path().join("tls").join("ca.pem")
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap()
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        signal(&self.child, "TERM");
        self.child.wait().unwrap()
    }

    /// Runs a client program (a driver's test) against this server, which it finds in
    /// `SIEVE_PORT` and `SIEVE_PASSWORD`; fails the test with its output and the server's log
    /// unless it succeeds. Returns its stdout.
    pub fn run_client(&self, mut program: Command) -> String {
        program
            .env("SIEVE_PORT", self.port.to_string())
            .env("SIEVE_PASSWORD", PASSWORD)
            .env("SIEVE_TLS_CA", self.tls_ca());
        let name = format!("{program:?}");
        let out = output_within(program, None, || format!("server log:\n{}", self.log()));
        assert!(
            out.status.success(),
            "{name} failed:\n{}\n{}\nserver log:\n{}",
            stdout(&out),
            stderr(&out),
            self.log()
        );
        stdout(&out)
    }

    fn mysql_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("mysql");
        command.args([
            "-h127.0.0.1",
            &format!("-P{}", self.port),
            "-uroot",
            &format!("-p{PASSWORD}"),
        ]);
        command.args(["--batch", "--skip-column-names"]).args(args);
        command
    }

    /// Runs the stock `mysql` client (batch mode, no column names) with `args`.
    pub fn mysql(&self, args: &[&str]) -> Output {
        self.client(args, None)
    }

    /// Feeds `script` to the stock client on standard input (as `mysql < file.sql` does).
    pub fn mysql_script(&self, args: &[&str], script: &str) -> Output {
        self.client(args, Some(script))
    }

    fn client(&self, args: &[&str], input: Option<&str>) -> Output {
        static INSTALLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let installed =
            INSTALLED.get_or_init(|| Command::new("mysql").arg("--version").output().is_ok());
        assert!(installed, "{MYSQL_MISSING}");
        output_within(self.mysql_command(args), input, || {
            format!("server log:\n{}", self.log())
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

/// Asserts a command failed and said `needle` on stderr.
pub fn assert_fails_with(output: &Output, needle: &str) {
    assert!(
        !output.status.success(),
        "expected a failure, got {:?}",
        output.status
    );
    assert!(
        stderr(output).contains(needle),
        "{needle:?} missing from {}",
        stderr(output)
    );
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// The MinIO bucket URL the S3 tests write under. A test that needs it fails without it, saying
/// so, rather than passing without having run.
pub fn s3_base() -> String {
    std::env::var("SIEVE_TEST_S3_URL")
        .expect("SIEVE_TEST_S3_URL is not set: this test needs MinIO; run scripts/test.sh")
}

/// `sieve sql -e statement` on `storage`, which must succeed; its output.
pub fn must(storage: &str, statement: &str) -> String {
    let out = sql(storage, statement);
    // The status too: a process killed by a signal says nothing on stderr.
    assert!(
        out.status.success(),
        "{statement}: {} ({}; stdout: {})",
        stderr(&out),
        out.status,
        stdout(&out)
    );
    stdout(&out)
}

/// The one number a query of one value printed through `sieve sql`.
pub fn number(storage: &str, query: &str) -> u64 {
    let text = must(storage, query);
    let line = text
        .lines()
        .find(|l| l.starts_with('|') && l.trim_matches(['|', ' ']).parse::<u64>().is_ok())
        .unwrap_or_else(|| panic!("no number in {text}"));
    line.trim_matches(['|', ' ']).parse().unwrap()
}

/// The first counter `name` in an EXPLAIN ANALYZE `plan` (one node's metrics, as printed; a
/// count of a thousand or more as DataFusion rounds it).
pub fn plan_counter(plan: &str, name: &str) -> u64 {
    let at = [' ', '[']
        .iter()
        .find_map(|c| plan.find(&format!("{c}{name}=")))
        .unwrap_or_else(|| panic!("{name}: {plan}"));
    let value = &plan[at + name.len() + 2..];
    let number: String = (value.chars())
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    // DataFusion shows counts of a thousand or more rounded, with a unit: `123.4 K`.
    let unit = match value[number.len()..]
        .strip_prefix(' ')
        .and_then(|u| u.chars().next())
    {
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('B') => 1e9,
        Some('T') => 1e12,
        _ => 1.0,
    };
    (number.parse::<f64>().unwrap() * unit) as u64
}
