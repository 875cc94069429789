//! `sieve sql`: an interactive shell (line editing, history, statements ending in `;` over
//! several lines), `-e "…"`, or a script on standard input; on the storage itself (embedded) or
//! on a server with `--host`. Errors are one line; a script stops at the first and exits
//! non-zero.

use crate::location::Location;
use std::io::{IsTerminal, Read};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::runtime::Handle;

use bytes::{Bytes, BytesMut};
use clap::Args;
use futures::StreamExt;
use futures::stream::BoxStream;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use sieve_engine::Session;

use crate::remote::{Client, Remote};
use crate::render::{plural, render};
use sieve_engine::rate;

#[derive(Args)]
pub struct SqlArgs {
    /// Run these statements and exit
    #[arg(short = 'e', long = "execute", value_name = "SQL")]
    execute: Option<String>,
    /// Connect to a server over the MySQL protocol instead of opening the storage
    #[arg(long)]
    host: Option<String>,
    #[arg(long, default_value_t = 3307, requires = "host")]
    port: u16,
    #[arg(long, default_value = "root", requires = "host")]
    user: String,
    #[arg(
        long,
        env = "SIEVE_PASSWORD",
        default_value = "",
        hide_env_values = true
    )]
    password: String,
}

/// Where statements run: in this process, or on a server.
enum Target {
    Embedded(Box<Session>),
    Remote(Client),
}

impl Target {
    /// Runs one statement and renders its result. Embedded statements that write show a
    /// progress line (rows, rows/s) on a terminal while they run.
    async fn run(&mut self, statement: &str) -> Result<String, String> {
        let session = match self {
            Target::Remote(client) => return client.run(statement).await,
            Target::Embedded(session) => session,
        };
        let started = Instant::now();
        let bar = ProgressBar::hidden();
        if std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("valid template"),
        );
        let every = Duration::from_millis(200);
        let report = |rows, elapsed| {
            if rows > 0 {
                bar.set_message(format!(
                    "{rows} rows written, {:.0} rows/s",
                    rate(rows, elapsed)
                ));
                bar.tick();
            }
        };
        let statement = match session.read(statement).await.into_load_data() {
            Ok(load) => {
                let load = session.open_load(load).await.map_err(|e| e.to_string())?;
                let file = read_local(load.file()).await?;
                let loaded = session
                    .progress()
                    .watch(load.run(file), every, report)
                    .await;
                bar.finish_and_clear();
                let loaded = loaded.map_err(|e| e.to_string())?;
                return Ok(format!(
                    "Query OK, {} affected ({:.3} sec)\nRecords: {}  Deleted: 0  Skipped: {}",
                    plural(loaded.rows, "row"),
                    started.elapsed().as_secs_f64(),
                    loaded.rows + loaded.skipped,
                    loaded.skipped
                ));
            }
            Err(statement) => statement,
        };
        let output = session
            .progress()
            .watch(
                async { session.run(statement).await?.collect().await },
                every,
                report,
            )
            .await;
        bar.finish_and_clear();
        render(&output.map_err(|e| e.to_string())?, started.elapsed())
    }
}

/// A file of this machine, for LOAD DATA LOCAL INFILE in the embedded shell (this process is
/// the client that sends it), read a MiB at a time.
async fn read_local(path: &str) -> Result<BoxStream<'static, std::io::Result<Bytes>>, String> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    let chunks = futures::stream::try_unfold(file, |mut file| async move {
        let mut chunk = BytesMut::zeroed(1 << 20);
        let n = file.read(&mut chunk).await?;
        chunk.truncate(n);
        Ok((n > 0).then(|| (chunk.freeze(), file)))
    });
    Ok(chunks.boxed())
}

/// Runs each statement of a script in order, printing each result; stops at the first error.
async fn run_script(target: &mut Target, sql: &str) -> Result<(), String> {
    for statement in Session::split_statements(sql).map_err(|e| e.to_string())? {
        println!("{}", target.run(&statement).await?);
    }
    Ok(())
}

fn history_path() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".sieve_history"))
}

async fn interactive(target: &mut Target) -> Result<(), String> {
    let mut editor = DefaultEditor::new().map_err(|e| e.to_string())?;
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    println!(
        "Sieve {} — statements end with ';', exit with Ctrl-D.",
        env!("CARGO_PKG_VERSION")
    );
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "sieve> "
        } else {
            "    -> "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                buffer.push_str(&line);
                buffer.push('\n');
                if !line.trim_end().ends_with(';') {
                    continue;
                }
                let _ = editor.add_history_entry(buffer.trim());
                if let Err(e) = run_script(target, &buffer).await {
                    println!("ERROR: {e}");
                }
                buffer.clear();
            }
            Err(ReadlineError::Interrupted) => buffer.clear(),
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}

pub async fn run(storage: &Location, args: SqlArgs, executor: Handle) -> Result<(), String> {
    let mut target = match &args.host {
        Some(host) => {
            let remote = Remote {
                host: host.clone(),
                port: args.port,
                user: args.user.clone(),
                password: args.password.clone(),
            };
            Target::Remote(Client::connect(&remote).await?)
        }
        None => {
            let mut engine = storage.engine().await?.with_executor(executor);
            if args.execute.is_some() || !std::io::stdin().is_terminal() {
                // A run of a few statements ends before routing filters, read in the background
                // from whole locator files, could pay for themselves.
                engine = engine.with_routing_budget(0);
            }
            Target::Embedded(Box::new(engine.session().map_err(|e| e.to_string())?))
        }
    };
    if let Some(sql) = &args.execute {
        return run_script(&mut target, sql).await;
    }
    if std::io::stdin().is_terminal() {
        return interactive(&mut target).await;
    }
    let mut script = String::new();
    std::io::stdin()
        .read_to_string(&mut script)
        .map_err(|e| e.to_string())?;
    run_script(&mut target, &script).await
}
