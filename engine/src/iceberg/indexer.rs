//! Keeps attached tables' indexes up to date: one pass indexes, for every index, the data files
//! of its table's current snapshot that no part of it covers yet. `CREATE INDEX` runs a pass
//! over every file; in a server, a task per catalog runs one every `index_interval_s`. Files
//! compaction or an overwrite removed stay in the parts: they are never looked up again, and a
//! file's entry is used only while the manifest describes the file as it was indexed.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::memory_pool::MemoryPool;
use sieve_iceberg::{DataFile, IcebergCatalog, TableScan};
use sieve_storage::{AttachedIndexDef, parallelism};
use tokio::task::JoinHandle;

use super::file_indexes::FileIndexes;
use super::index_build::{IndexSpec, index_files};
use crate::error::{external, to_df};
use crate::progress::WriteProgress;

/// A part is written (and survives a failure later in the pass) once it holds this many data
/// files and [`PART_ROWS`] rows, or [`MOST_PART_FILES`] files. A lookup asks every part's
/// locator, a ranged read each when cold, so parts of small files hold more of them: cut
/// every 256 files, 10M rows in files of 1,000 made 40 parts.
const PART_FILES: usize = 256;
/// The rows a part holds before it is written, from [`PART_FILES`] files on.
const PART_ROWS: u64 = 16 << 20;
/// The most files a part holds: its header, which a process keeps, has a record per row group.
const MOST_PART_FILES: usize = 8192;

/// `files` in the parts they are indexed into, in order (see [`PART_FILES`]).
fn parts_of<'a, 'f>(files: &'a [&'f DataFile]) -> Vec<&'a [&'f DataFile]> {
    let (mut parts, mut first, mut rows) = (Vec::new(), 0, 0);
    for (i, file) in files.iter().enumerate() {
        rows += file.record_count;
        let held = i + 1 - first;
        if (held >= PART_FILES && rows >= PART_ROWS) || held >= MOST_PART_FILES {
            parts.push(&files[first..=i]);
            (first, rows) = (i + 1, 0);
        }
    }
    if first < files.len() {
        parts.push(&files[first..]);
    }
    parts
}

/// What a pass indexed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Indexed {
    pub files: u64,
    pub rows: u64,
    pub bytes: u64,
}

/// Indexes `files` of the table `def` indexes into new parts of it.
pub async fn index_into(
    indexes: &FileIndexes,
    catalog: &IcebergCatalog,
    def: &AttachedIndexDef,
    scan: &TableScan,
    files: &[&DataFile],
    progress: Arc<WriteProgress>,
    pool: &Arc<dyn MemoryPool>,
) -> Result<Indexed> {
    let columns = def
        .columns
        .iter()
        .cloned()
        .zip(def.field_ids.iter().copied());
    let spec = Arc::new(IndexSpec::new(
        &scan.schema,
        columns,
        scan.file_names.clone(),
        def.filter,
    )?);
    let store = catalog.warehouse().store().clone();
    let mut done = Indexed::default();
    // Each part's locator is sized by its place among the index's parts.
    let existing = indexes.store().parts(def).await.map_err(to_df)?.len() as u64;
    for (i, chunk) in parts_of(files).into_iter().enumerate() {
        let built = index_files(
            store.clone(),
            spec.clone(),
            (chunk, existing + i as u64 + 1),
            parallelism(),
            progress.clone(),
            pool.clone(),
        )
        .await?;
        let locator = built.locator.as_deref();
        let written = indexes.store().write_part(def, &built.files, locator);
        written.await.map_err(to_df)?;
        let built = built.files;
        // An entry per row group: the files are the chunk's, their rows the row groups'.
        done.files += chunk.len() as u64;
        done.rows += built.iter().map(|f| f.rows).sum::<u64>();
        done.bytes += built.iter().map(|f| f.sidecar.len() as u64).sum::<u64>();
    }
    Ok(done)
}

/// One pass over the indexes of `catalog`'s tables, its memory reserved in `pool`.
pub async fn pass(
    indexes: &FileIndexes,
    catalog: &IcebergCatalog,
    pool: &Arc<dyn MemoryPool>,
) -> Result<Indexed> {
    let mut done = Indexed::default();
    let defs = indexes.store().all_definitions().await.map_err(to_df)?;
    for def in defs.iter().filter(|d| d.catalog == catalog.name()) {
        let Some(scan) = (catalog.scan(&def.namespace, &def.table).await).map_err(external)? else {
            continue; // dropped from the catalog
        };
        if scan.table_uuid.as_deref() != Some(def.table_uuid.as_str()) {
            continue; // replaced by another table of the same name
        }
        let loaded = indexes.loaded(&def.table_uuid, None).await;
        let missing: Vec<&DataFile> = (scan.files.iter())
            .filter(|f| !loaded.covers_columns(f, &def.columns))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let progress = Arc::new(WriteProgress::default());
        let indexed = index_into(indexes, catalog, def, &scan, &missing, progress, pool).await?;
        indexes.changed(&def.table_uuid).await;
        log::info!(
            "index {} on {}.{}.{}: {} new data files indexed ({} rows)",
            def.name,
            def.catalog,
            def.namespace,
            def.table,
            indexed.files,
            indexed.rows
        );
        done.files += indexed.files;
        done.rows += indexed.rows;
        done.bytes += indexed.bytes;
    }
    Ok(done)
}

/// Runs a pass over each catalog's indexes every `index_interval`, on `runtime`, until the
/// handles are dropped; their memory is reserved in `pool` (the server's, for every statement).
pub fn follow(
    indexes: Arc<FileIndexes>,
    catalogs: &[Arc<IcebergCatalog>],
    runtime: &tokio::runtime::Handle,
    pool: Arc<dyn MemoryPool>,
) -> Following {
    let tasks = catalogs
        .iter()
        .map(|catalog| {
            let (indexes, catalog, pool) = (indexes.clone(), catalog.clone(), pool.clone());
            runtime.spawn(async move {
                // The first pass one interval after the start, not at it: a server's first
                // statements never race a pass they did not ask for.
                let every = catalog.index_interval();
                let mut ticks =
                    tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    ticks.tick().await;
                    if let Err(e) = pass(&indexes, &catalog, &pool).await {
                        log::warn!("indexing catalog {}: {e}", catalog.name());
                    }
                }
            })
        })
        .collect();
    Following(tasks)
}

/// The indexer's tasks; dropping this stops them.
#[derive(Debug)]
pub struct Following(Vec<JoinHandle<()>>);

impl Drop for Following {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use object_store::path::Path;

    use super::*;

    /// The parts' sizes in files, for `n` files of `rows` rows each.
    fn parts(n: usize, rows: u64) -> Vec<usize> {
        let files: Vec<DataFile> = (0..n)
            .map(|i| DataFile {
                path: Path::from(format!("f{i}")),
                record_count: rows,
                file_size: 1,
                deleted: None,
                bounds: Default::default(),
                equality_deletes: None,
            })
            .collect();
        let files: Vec<&DataFile> = files.iter().collect();
        parts_of(&files).iter().map(|part| part.len()).collect()
    }

    /// Files of a million rows are cut every 256 files; smaller ones gather until a part holds
    /// 16M rows, or 8192 files.
    #[test]
    fn a_part_of_small_files_holds_more_of_them() {
        assert_eq!(parts(600, 1 << 20), [256, 256, 88]);
        assert_eq!(parts(1_200, 30_000), [560, 560, 80]);
        assert_eq!(parts(10_095, 1_000), [8192, 1903]);
        assert_eq!(parts(3, 1), [3]);
        assert!(parts(0, 1).is_empty());
    }
}
