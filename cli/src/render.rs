//! Results as the mysql client prints them: a bordered table, then one line with the row count,
//! the time, and what the statement read.

use std::time::Duration;

use datafusion::arrow::util::pretty::pretty_format_batches;
use sieve_engine::QueryOutput;

pub fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

pub fn render(output: &QueryOutput, elapsed: Duration) -> Result<String, String> {
    let secs = elapsed.as_secs_f64();
    if let Some(rows) = output.affected_rows {
        return Ok(format!(
            "Query OK, {} affected ({secs:.3} sec)",
            plural(rows, "row")
        ));
    }
    let rows = output.row_count() as u64;
    let mut text = String::new();
    if rows > 0 {
        text = pretty_format_batches(&output.batches)
            .map_err(|e| e.to_string())?
            .to_string();
        text.push('\n');
    }
    let head = if rows == 0 {
        "Empty set".to_string()
    } else {
        format!("{} in set", plural(rows, "row"))
    };
    text.push_str(&format!("{head} ({secs:.3} sec)"));
    let s = &output.stats;
    if s.blocks_total > 0 {
        text.push_str(&format!(
            " · read {} rows, {:.2} MiB · blocks read {} of {}",
            s.rows_read,
            s.bytes_read as f64 / (1 << 20) as f64,
            s.blocks_read,
            s.blocks_total
        ));
    }
    if s.requests > 0 {
        // What a far object store multiplies by its round trip: the sequential requests.
        text.push_str(&format!(
            " · {} object-store requests, {} sequential",
            s.requests, s.sequential_requests
        ));
    }
    Ok(text)
}
