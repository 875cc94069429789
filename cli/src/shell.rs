//! `sieve sql`: an interactive shell (line editing, history, statements ending in `;` over
//! several lines), `-e "…"`, or a script on standard input. Errors are one line; a script stops
//! at the first and exits non-zero.

use std::io::{IsTerminal, Read};
use std::time::Instant;

use clap::Args;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use sieve_engine::{Engine, Session};

use crate::render::render;

#[derive(Args)]
pub struct SqlArgs {
    /// Run these statements and exit
    #[arg(short = 'e', long = "execute", value_name = "SQL")]
    execute: Option<String>,
}

/// Runs each statement of a script in order, printing each result.
async fn run_script(session: &Session, sql: &str) -> Result<(), String> {
    for statement in Session::split_statements(sql).map_err(|e| e.to_string())? {
        let started = Instant::now();
        let output = session
            .execute(&statement)
            .await
            .map_err(|e| e.to_string())?;
        println!("{}", render(&output, started.elapsed())?);
    }
    Ok(())
}

fn history_path() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".sieve_history"))
}

async fn interactive(session: &Session) -> Result<(), String> {
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
                if let Err(e) = run_script(session, &buffer).await {
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

pub async fn run(engine: Engine, args: SqlArgs) -> Result<(), String> {
    let session = engine.session().map_err(|e| e.to_string())?;
    if let Some(sql) = args.execute {
        return run_script(&session, &sql).await;
    }
    if std::io::stdin().is_terminal() {
        return interactive(&session).await;
    }
    let mut script = String::new();
    std::io::stdin()
        .read_to_string(&mut script)
        .map_err(|e| e.to_string())?;
    run_script(&session, &script).await
}
