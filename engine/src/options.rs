//! Session settings under the `sieve.` prefix, set with SQL: `SET sieve.pruning = false` reads
//! every block, the baseline differential tests compare pruned results against.

use datafusion::common::extensions_options;
use datafusion::config::ConfigExtension;
use datafusion::execution::TaskContext;

extensions_options! {
    pub struct SieveOptions {
        /// Skip blocks using min/max statistics and filter sidecars.
        pub pruning: bool, default = true
        /// With pruning on, ask the tables' locators where a key is before their sidecars;
        /// off, probe every block's sidecar (the locator's differential baseline).
        pub locator: bool, default = true
        /// With pruning on and workers, send a point lookup only to the workers whose node
        /// filters may hold its keys; off, to every worker owning blocks (the baseline).
        pub node_filters: bool, default = true
        /// With the locator on, skip the locator groups whose routing filter (in memory) rules
        /// a point lookup's keys out; off, probe every group (the routing's baseline).
        pub routing: bool, default = true
        /// After an INSERT or CTAS commits, compact its small appends' blocks and merge its
        /// locator groups in the background (sixteen of a size into one); off, only OPTIMIZE
        /// does.
        pub merge_on_commit: bool, default = true
        /// Let a read use the table version a freshness check found at most this many
        /// milliseconds ago, without a request of its own; 0 (the default) sees every commit
        /// made before the read started.
        pub max_staleness_ms: u64, default = 0
        /// Plan point lookups (`=`/IN on columns, AND/OR, a projection, LIMIT) straight into
        /// their scan, skipping DataFusion's planner and optimizer; off, every query takes the
        /// full path (the short path's differential baseline).
        pub short_path: bool, default = true
        /// Decode the pages a short-path lookup's locator (or an attached file's index) named on
        /// the connection's own task, without DataFusion's Parquet scan; off, through the scan
        /// (the direct read's baseline).
        pub direct_reads: bool, default = true
        /// Answer a short-path lookup from the results of the same lookup in the same table
        /// version when they are kept; off, every lookup reads the table.
        pub lookup_cache: bool, default = true
        /// Keep what a text statement was recognised as by its text (a point lookup), so that
        /// the same text runs again without being parsed; off, every text is parsed.
        pub text_lookups: bool, default = true
        /// Read blocks' pages through the process's data cache (`data_cache_mib`); off, every
        /// read fetches them from storage (the cache's baseline).
        pub data_cache: bool, default = true
        /// Stop a query after this many milliseconds, as MySQL's `max_execution_time`; 0 never.
        pub max_execution_time: u64, default = 0
        /// Run filtered queries that narrow no block of a table over `full_scan_blocks` blocks
        /// (Cassandra's ALLOW FILTERING; also `… ALLOW FILTERING` after one statement).
        pub allow_full_scan: bool, default = false
        /// Tables of more blocks than this are guarded against filtered full scans.
        pub full_scan_blocks: u64, default = 10
        /// VACUUM refuses a retention under an hour: a write running longer than it could lose
        /// the blocks it uploaded before it commits. Off when no write runs (tests, maintenance).
        pub vacuum_retention_check: bool, default = true
        /// Run `string_agg` and `array_agg` in one aggregate stage, whose state is reserved in
        /// the statement's memory budget where it is built; off, in DataFusion's partial and
        /// final stages (the baseline), which copy it outside the budget.
        pub one_stage_collect: bool, default = true
    }
}

tokio::task_local! {
    /// Set while a statement written with `… ALLOW FILTERING` runs: it may read a large table
    /// in full. Scoped to the statement's future (and the work it runs on the executor, see
    /// [`crate::session::statement_task::run_on`]), so it ends with the statement however that
    /// ends (KILL, a timeout, a panic), and it never changes the session's options, which
    /// other statements of the session read (Flight SQL runs a login's statements at once).
    static ALLOW_FILTERING: bool;
}

/// Runs `statement` with full scans allowed if `allow` says so.
pub async fn allowing_full_scan<F: Future>(allow: bool, statement: F) -> F::Output {
    ALLOW_FILTERING.scope(allow, statement).await
}

/// Whether the statement running in this task was written with `… ALLOW FILTERING`.
pub fn statement_allows_full_scan() -> bool {
    ALLOW_FILTERING.try_with(|allow| *allow).unwrap_or(false)
}

impl SieveOptions {
    /// Whether a scan may read every block of a large table: the session's setting, or the
    /// statement's `ALLOW FILTERING`.
    pub fn allows_full_scan(&self) -> bool {
        self.allow_full_scan || statement_allows_full_scan()
    }

    /// The settings of the session a task runs in; the defaults where it has none.
    pub fn of(context: &TaskContext) -> Self {
        context
            .session_config()
            .options()
            .extensions
            .get::<SieveOptions>()
            .cloned()
            .unwrap_or_default()
    }
}

impl ConfigExtension for SieveOptions {
    const PREFIX: &'static str = "sieve";
}

#[cfg(test)]
mod tests {
    use datafusion::config::ExtensionOptions;

    use super::*;

    /// docs/sql.md lists every setting, so a new one is documented where users look.
    #[test]
    fn every_setting_is_in_the_sql_docs() {
        let docs = include_str!("../../docs/sql.md");
        for entry in SieveOptions::default().entries() {
            let name = format!("`sieve.{}`", entry.key.trim_start_matches("sieve."));
            assert!(docs.contains(&name), "docs/sql.md does not list {name}");
        }
    }
}
