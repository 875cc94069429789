//! A load's progress as a person watching it wants it: a bar on a terminal, a log line every
//! 10 s otherwise (a CI log, `nohup`), and Ctrl-C turned into a message saying what is committed.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{HumanCount, ProgressBar, ProgressDrawTarget, ProgressStyle};
use sieve_engine::Engine;

use crate::{LoadProgress, LoadRequest, LoadSummary, load_synthetic};

/// Runs a load while drawing its progress: a bar on a terminal, a log line every 10 s otherwise.
pub async fn load_with_progress(
    engine: &Engine,
    request: &LoadRequest,
) -> Result<LoadSummary, String> {
    let progress = LoadProgress::default();
    let bar = ProgressBar::hidden();
    let terminal = std::io::stderr().is_terminal();
    if terminal {
        bar.set_draw_target(ProgressDrawTarget::stderr());
    }
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {human_pos}/{human_len} rows · {per_sec} · ETA {eta} · committed {msg}",
        )
        .expect("valid template"),
    );
    let load = load_synthetic(engine, request, &progress);
    tokio::pin!(load);
    let mut ticks = tokio::time::interval(Duration::from_millis(200));
    let mut started = false;
    let mut last_log = tokio::time::Instant::now();
    let result = loop {
        tokio::select! {
            result = &mut load => break result,
            _ = ticks.tick() => {
                if progress.total() == 0 {
                    continue;
                }
                let done = progress.before() + progress.written();
                if !started {
                    // Resumed rows count toward the bar but not toward the rate and ETA.
                    bar.set_length(progress.total());
                    bar.set_position(done);
                    bar.reset_eta();
                    started = true;
                }
                bar.set_position(done);
                bar.set_message(HumanCount(progress.committed()).to_string());
                if !terminal && last_log.elapsed() >= Duration::from_secs(10) {
                    last_log = tokio::time::Instant::now();
                    log::info!(
                        "{} of {} rows written, {} committed",
                        progress.written(),
                        progress.total(),
                        progress.committed()
                    );
                }
            }
            _ = tokio::signal::ctrl_c() => {
                bar.abandon();
                return Err(format!(
                    "interrupted: {} rows of {} are committed; run the same command again to continue",
                    progress.committed(),
                    progress.total()
                ));
            }
        }
    };
    bar.finish_and_clear();
    result.map_err(|e| e.to_string())
}
