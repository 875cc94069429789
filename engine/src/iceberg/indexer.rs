//! Keeps attached tables' indexes up to date: one pass, for every index, indexes the data files
//! of its table's current snapshot that no part of it covers yet, then merges its small parts
//! and removes the parts whose files the snapshot no longer has ([`super::part_sizes`]).
//! `CREATE INDEX` indexes every file; in a server, a task per catalog runs a pass every
//! `index_interval_s`, and `OPTIMIZE TABLE` runs one over its table's indexes at once. A file's
//! entry is used only while the manifest describes the file as it was indexed.

use std::collections::HashSet;
use std::ops::AddAssign;
use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::memory_pool::MemoryPool;
use object_store::path::Path;
use sieve_iceberg::{DataFile, IcebergCatalog, TableScan};
use sieve_storage::versions::ATTACHED_INDEX_PART_FORMAT;
use sieve_storage::{AttachedIndexDef, parallelism};
use tokio::task::JoinHandle;

use super::file_indexes::{FileIndexes, Loaded};
use super::index_build::{IndexSpec, index_files};
use super::part_sizes::{PartSize, merges, parts_of};
use crate::error::{external, to_df};
use crate::progress::WriteProgress;

/// What indexing data files made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Indexed {
    pub files: u64,
    pub rows: u64,
    pub bytes: u64,
    pub parts: u64,
}

impl AddAssign for Indexed {
    fn add_assign(&mut self, other: Self) {
        self.files += other.files;
        self.rows += other.rows;
        self.bytes += other.bytes;
        self.parts += other.parts;
    }
}

/// What a pass did to an index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Updated {
    /// The data files it indexed for the first time.
    pub indexed: Indexed,
    /// The small parts it merged into new ones, and the files it indexed again to do that.
    pub merged: u64,
    pub reindexed: u64,
    /// The parts it removed as the snapshot has none of their files, or as this process found
    /// them damaged ([`FileIndexes::damaged`]; their files were indexed again first).
    pub removed: u64,
    /// The index's parts after it.
    pub parts: u64,
}

impl AddAssign for Updated {
    fn add_assign(&mut self, other: Self) {
        self.indexed += other.indexed;
        self.merged += other.merged;
        self.reindexed += other.reindexed;
        self.removed += other.removed;
        self.parts += other.parts;
    }
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
        done += Indexed {
            files: chunk.len() as u64,
            rows: built.iter().map(|f| f.rows).sum(),
            bytes: built.iter().map(|f| f.sidecar.len() as u64).sum(),
            parts: 1,
        };
    }
    Ok(done)
}

/// Brings the index `def` up to `scan`: indexes the files no part of it covers, then merges
/// its small parts and removes those without a live file ([`tidy`]).
pub async fn update(
    indexes: &FileIndexes,
    catalog: &IcebergCatalog,
    def: &AttachedIndexDef,
    scan: &TableScan,
    progress: Arc<WriteProgress>,
    pool: &Arc<dyn MemoryPool>,
) -> Result<Updated> {
    let mut updated = Updated::default();
    let loaded = indexes.loaded(&def.table_uuid, None).await;
    let missing: Vec<&DataFile> = (scan.files.iter())
        .filter(|f| !loaded.covers_columns(f, &def.columns))
        .collect();
    let name = || {
        let (name, catalog, namespace) = (&def.name, &def.catalog, &def.namespace);
        format!("index {name} on {catalog}.{namespace}.{}", def.table)
    };
    if !missing.is_empty() {
        let indexed = index_into(
            indexes,
            catalog,
            def,
            scan,
            &missing,
            progress.clone(),
            pool,
        );
        updated.indexed = indexed.await?;
        indexes.changed(&def.table_uuid).await;
        let (files, rows) = (updated.indexed.files, updated.indexed.rows);
        log::info!("{}: {files} new data files indexed ({rows} rows)", name());
    }
    tidy(
        indexes,
        (catalog, def, &loaded),
        progress,
        pool,
        &mut updated,
    )
    .await?;
    if updated.merged + updated.removed > 0 {
        log::info!(
            "{}: {} small parts merged ({} data files indexed again), {} parts of removed \
             files removed; {} parts",
            name(),
            updated.merged,
            updated.reindexed,
            updated.removed,
            updated.parts
        );
    }
    Ok(updated)
}

/// Merges the small parts of `def` and removes those without a live file ([`merges`]) and
/// those found damaged before `indexed_from` (the view [`update`] indexed the files no part
/// covers from) was listed, counted in `updated`: such a part was in no view, so its files
/// have just been indexed again. One found damaged since is removed by the next pass.
/// A merge writes its new parts before it removes the old: meanwhile a
/// file is in two parts, and lookups use the larger (`Loaded`); a lookup that still holds a
/// removed part fails to read it and reads its row groups whole. Which files are live is
/// asked of a scan taken after the parts are listed: each listed part was built from a scan
/// taken before it was written, so from no newer snapshot than this one, and a file this scan
/// lacks was removed from the table (not added by a commit another process's part saw first).
async fn tidy(
    indexes: &FileIndexes,
    (catalog, def, indexed_from): (&IcebergCatalog, &AttachedIndexDef, &Loaded),
    progress: Arc<WriteProgress>,
    pool: &Arc<dyn MemoryPool>,
    updated: &mut Updated,
) -> Result<()> {
    let loaded = indexes.loaded(&def.table_uuid, None).await;
    let paths = indexes.store().parts(def).await.map_err(to_df)?;
    updated.parts = paths.len() as u64;
    let scan = (catalog.scan(&def.namespace, &def.table).await).map_err(external)?;
    let Some(scan) = scan.filter(|s| s.table_uuid.as_deref() == Some(def.table_uuid.as_str()))
    else {
        return Ok(()); // dropped, or replaced by another table of the same name
    };
    let live: HashSet<&str> = scan.files.iter().map(|f| f.path.as_ref()).collect();
    // Each listed part that was read (one written since the listing is left): its files and
    // size as written, and its live files.
    let mut held: Vec<(&Path, Vec<&str>)> = Vec::new();
    let mut sizes = Vec::new();
    let damaged = indexes.damaged(&paths, Some(indexed_from));
    for path in paths.iter().filter(|p| !damaged.contains(p)) {
        let Some(part) = loaded.part(path) else {
            continue;
        };
        let mut files: Vec<&str> = part.entries.iter().map(|e| e.path.as_str()).collect();
        files.sort_unstable();
        files.dedup();
        let size = PartSize {
            files: files.len(),
            rows: part.entries.iter().map(|e| e.rows).sum(),
            live: files.iter().filter(|f| live.contains(*f)).count(),
            old: part.format < ATTACHED_INDEX_PART_FORMAT,
        };
        files.retain(|f| live.contains(f));
        sizes.push((held.len(), size));
        held.push((path, files));
    }
    let (removed, merged) = merges(&sizes);
    for group in &merged {
        let kept: HashSet<&str> = group
            .iter()
            .flat_map(|&p| held[p].1.iter().copied())
            .collect();
        let kept: Vec<&DataFile> = (scan.files.iter())
            .filter(|f| kept.contains(f.path.as_ref()))
            .collect();
        let indexed = index_into(indexes, catalog, def, &scan, &kept, progress.clone(), pool);
        let indexed = indexed.await?;
        let old: Vec<Path> = group.iter().map(|&p| held[p].0.clone()).collect();
        indexes.store().remove(&old).await.map_err(to_df)?;
        indexes.removed(&old);
        indexes.changed(&def.table_uuid).await;
        updated.merged += old.len() as u64;
        updated.reindexed += indexed.files;
        updated.parts = updated.parts + indexed.parts - old.len() as u64;
    }
    let old: Vec<Path> = (removed.iter().map(|&p| held[p].0.clone()))
        .chain(damaged.into_iter().cloned())
        .collect();
    if !old.is_empty() {
        indexes.store().remove(&old).await.map_err(to_df)?;
        indexes.removed(&old);
        indexes.changed(&def.table_uuid).await;
        updated.removed = old.len() as u64;
        updated.parts -= updated.removed;
    }
    Ok(())
}

/// One pass over the indexes of `catalog`'s tables, its memory reserved in `pool`.
pub async fn pass(
    indexes: &FileIndexes,
    catalog: &IcebergCatalog,
    pool: &Arc<dyn MemoryPool>,
) -> Result<()> {
    let defs = indexes.store().all_definitions().await.map_err(to_df)?;
    for def in defs.iter().filter(|d| d.catalog == catalog.name()) {
        let Some(scan) = (catalog.scan(&def.namespace, &def.table).await).map_err(external)? else {
            continue; // dropped from the catalog
        };
        if scan.table_uuid.as_deref() != Some(def.table_uuid.as_str()) {
            continue; // replaced by another table of the same name
        }
        let progress = Arc::new(WriteProgress::default());
        // One index failing (a data file it cannot read) holds up none of the others.
        if let Err(e) = update(indexes, catalog, def, &scan, progress, pool).await {
            let (name, namespace, table) = (&def.name, &def.namespace, &def.table);
            log::warn!("index {name} on {}.{namespace}.{table}: {e}", def.catalog);
        }
    }
    Ok(())
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
