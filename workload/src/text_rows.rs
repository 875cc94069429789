//! Statements whose few rows a tool prints or checks, as text.

use datafusion::arrow::util::display::array_value_to_string;
use sieve_engine::Engine;

/// Runs one query and returns its rows as text.
pub async fn text_rows(engine: &Engine, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let output = engine
        .session()
        .map_err(|e| e.to_string())?
        .execute(sql)
        .await
        .map_err(|e| format!("{sql}: {e}"))?;
    let mut rows = Vec::new();
    for batch in &output.batches {
        for r in 0..batch.num_rows() {
            let row = (0..batch.num_columns())
                .map(|c| array_value_to_string(batch.column(c), r).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
            rows.push(row);
        }
    }
    Ok(rows)
}
