//! A locator group's keys on their way into its file, for a write building its groups and for a
//! merge building one of many (`sieve_index::locator`): held in memory while they are few,
//! spilled to local files by hash range once a group outgrows [`MEMORY_KEYS`], then built into
//! the file's shards a range at a time on every core. So a group of a billion keys needs the
//! memory of a few ranges, and a write can build its groups at the size merges would otherwise
//! make of them: each key's locator entry built once, not once per tier.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
use sieve_index::locator::{
    self, BlockKeys, BuiltPart, ColumnBuilder, ColumnLocator, PageWriter, shards_for,
};
use sieve_index::retrieval::Scratch;
use tempfile::TempDir;

use crate::error::{Result, StorageError};
use crate::operations::merge_rate::MergeRate;
use crate::read::table::Table;

/// Keys (16 bytes each) a group holds in memory over all its columns before it spills them.
const MEMORY_KEYS: usize = 1 << 22;
/// Keys per spill file at most: what one thread holds while it builds that range's shards.
const PART_KEYS: usize = 1 << 22;
/// Bytes per part of a spilled group's file upload.
const UPLOAD_PART: usize = 16 << 20;

/// Every located column's keys of one group, added block by block in the group's order.
pub struct GroupKeys {
    columns: Vec<ColumnKeys>,
    blocks: u32,
    in_memory: usize,
    memory_keys: usize,
    /// Where the keys went once the group spilled.
    spilled: Option<TempDir>,
}

struct ColumnKeys {
    name: String,
    /// Spill files, by the hash's top bits: as many as keep each within [`PART_KEYS`] for the
    /// most keys the column can have.
    parts: usize,
    keys: usize,
    /// Each block's keys, until the group spills.
    blocks: Vec<BlockKeys>,
    files: Vec<BufWriter<File>>,
}

/// A built locator file: its header, and its pages in memory or in a local file.
pub struct LocatorFile {
    pub header: Vec<u8>,
    pages: Pages,
}

enum Pages {
    Memory(Vec<u8>),
    /// The file, in the directory it goes away with.
    Spilled {
        _dir: TempDir,
        path: PathBuf,
    },
}

impl GroupKeys {
    /// For the named columns, each with the most distinct keys it can have in the group.
    pub fn new(columns: impl IntoIterator<Item = (String, usize)>) -> Self {
        Self::with_limits(columns, MEMORY_KEYS, PART_KEYS)
    }

    fn with_limits(
        columns: impl IntoIterator<Item = (String, usize)>,
        memory_keys: usize,
        part_keys: usize,
    ) -> Self {
        let columns = columns
            .into_iter()
            .map(|(name, upper)| ColumnKeys {
                name,
                parts: upper.div_ceil(part_keys).max(1),
                keys: 0,
                blocks: Vec::new(),
                files: Vec::new(),
            })
            .collect();
        Self {
            columns,
            blocks: 0,
            in_memory: 0,
            memory_keys,
            spilled: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Adds the next block's keys, one list per column in [`Self::new`]'s order. Writes to local
    /// files once the group has spilled: call it off the async runtime.
    pub fn add_block(&mut self, keys: Vec<BlockKeys>) -> Result<()> {
        if keys.len() != self.columns.len() {
            return Err(StorageError::Invalid(format!(
                "a block of {} columns added to a group of {}",
                keys.len(),
                self.columns.len()
            )));
        }
        let block = self.blocks;
        self.blocks += 1;
        for (column, keys) in self.columns.iter_mut().zip(keys) {
            column.keys += keys.len();
            if self.spilled.is_some() {
                column.spill(block, &keys)?;
            } else {
                self.in_memory += keys.len();
                column.blocks.push(keys);
            }
        }
        if self.spilled.is_none() && self.in_memory > self.memory_keys {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        // Named, so that what a killed process leaves in the temp dir says what it is.
        let dir = tempfile::Builder::new()
            .prefix("sieve-locator-keys-")
            .tempdir()?;
        for (k, column) in self.columns.iter_mut().enumerate() {
            column.files = (0..column.parts)
                .map(|p| Ok(BufWriter::new(File::create(part_path(dir.path(), k, p))?)))
                .collect::<std::io::Result<_>>()?;
            for (block, keys) in std::mem::take(&mut column.blocks).iter().enumerate() {
                column.spill(block as u32, keys)?;
            }
        }
        self.in_memory = 0;
        self.spilled = Some(dir);
        Ok(())
    }

    /// Builds the group's locator file: blocks of `slices_per_block` slices of `slice_rows`,
    /// fingerprints of `fingerprint_bits`. Blocking: it reads, sorts and builds on every core.
    pub fn build(
        self,
        slice_rows: u32,
        slices_per_block: u32,
        fingerprint_bits: u8,
    ) -> Result<LocatorFile> {
        let blocks = self.blocks;
        let shape = |column: &ColumnKeys, shards| {
            ColumnBuilder::new(
                &column.name,
                blocks,
                slices_per_block,
                fingerprint_bits,
                shards,
            )
        };
        let (pages, page_count, columns) = match self.spilled {
            None => {
                let mut pages = PageWriter::new(Vec::new());
                let mut columns = Vec::with_capacity(self.columns.len());
                for column in &self.columns {
                    let mut builder = shape(column, shards_for(column.keys));
                    builder.add_blocks(&column.blocks, &mut pages)?;
                    columns.push(builder.finish()?);
                }
                let (bytes, count) = pages.finish()?;
                (Pages::Memory(bytes), count, columns)
            }
            Some(dir) => {
                let path = dir.path().join("pages");
                let mut pages = PageWriter::new(BufWriter::new(File::create(&path)?));
                let mut columns = Vec::with_capacity(self.columns.len());
                for (k, mut column) in self.columns.into_iter().enumerate() {
                    for file in &mut column.files {
                        file.flush()?;
                    }
                    drop(std::mem::take(&mut column.files));
                    // Whole parts, each a whole number of shards of at most SHARD_KEYS keys.
                    let per_part = shards_for(column.keys.div_ceil(column.parts));
                    let builder = shape(&column, column.parts * per_part);
                    columns.push(build_parts(
                        dir.path(),
                        k,
                        column.parts,
                        builder,
                        &mut pages,
                    )?);
                }
                let (_, count) = pages.finish()?;
                (Pages::Spilled { _dir: dir, path }, count, columns)
            }
        };
        let header =
            locator::encode_header(blocks, slice_rows, slices_per_block, page_count, &columns)?;
        Ok(LocatorFile { header, pages })
    }
}

impl ColumnKeys {
    fn spill(&mut self, block: u32, keys: &BlockKeys) -> Result<()> {
        let parts = self.files.len() as u128;
        for &(hash, slice) in keys {
            let part = ((u128::from(hash) * parts) >> 64) as usize;
            let file = &mut self.files[part];
            file.write_all(&hash.to_le_bytes())?;
            file.write_all(&block.to_le_bytes())?;
            file.write_all(&slice.to_le_bytes())?;
        }
        Ok(())
    }
}

fn part_path(dir: &Path, column: usize, part: usize) -> PathBuf {
    dir.join(format!("{column}-{part}"))
}

/// Builds a spilled column's parts on every core and writes them in order.
fn build_parts<W: Write>(
    dir: &Path,
    column: usize,
    parts: usize,
    mut builder: ColumnBuilder,
    pages: &mut PageWriter<W>,
) -> Result<ColumnLocator> {
    let layout = builder.layout();
    let threads = crate::write::writer::parallelism().min(parts);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        // Parts are taken in order, so at most `threads` wait here to be written.
        let (sender, built) = mpsc::sync_channel::<(usize, Result<BuiltPart>)>(threads);
        for _ in 0..threads {
            let (sender, next) = (sender.clone(), &next);
            scope.spawn(move || {
                let mut scratch = Scratch::default();
                loop {
                    let part = next.fetch_add(1, Ordering::Relaxed);
                    if part >= parts {
                        return;
                    }
                    let result = read_part(&part_path(dir, column, part)).and_then(|entries| {
                        Ok(layout.build_part(entries, part, parts, &mut scratch)?)
                    });
                    let failed = result.is_err();
                    if sender.send((part, result)).is_err() || failed {
                        return;
                    }
                }
            });
        }
        drop(sender);
        let mut ready = std::collections::BTreeMap::new();
        let mut written = 0;
        for (part, result) in built {
            ready.insert(part, result?);
            while let Some(part) = ready.remove(&written) {
                builder.write_part(part, pages)?;
                written += 1;
            }
        }
        if written != parts {
            return Err(StorageError::Invalid(format!(
                "{written} of {parts} locator parts built"
            )));
        }
        Ok(builder.finish()?)
    })
}

/// A spill file's (hash, block, slice) entries; the file goes once read.
fn read_part(path: &Path) -> Result<Vec<(u64, u32, u32)>> {
    let len = std::fs::metadata(path)?.len() as usize;
    let mut file = BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut entries = Vec::with_capacity(len / 16);
    let mut record = [0u8; 16];
    for _ in 0..len / 16 {
        file.read_exact(&mut record)?;
        let u32_at = |at: usize| u32::from_le_bytes(record[at..at + 4].try_into().unwrap());
        entries.push((
            u64::from_le_bytes(record[..8].try_into().unwrap()),
            u32_at(8),
            u32_at(12),
        ));
    }
    std::fs::remove_file(path)?;
    Ok(entries)
}

impl Table {
    /// Uploads a locator file as `name`, spending `rate` (a merge's I/O budget) if given: one
    /// request for a file in memory, a multipart upload streamed from a spilled one.
    pub(crate) async fn upload_locator(
        &self,
        name: &str,
        file: &LocatorFile,
        rate: Option<&MergeRate>,
    ) -> Result<()> {
        let path = self.locator_path(name);
        let store = self.storage().store();
        let spilled = match &file.pages {
            Pages::Memory(pages) => {
                if let Some(rate) = rate {
                    rate.spend((file.header.len() + pages.len()) as u64).await;
                }
                let mut bytes = Vec::with_capacity(file.header.len() + pages.len());
                bytes.extend_from_slice(&file.header);
                bytes.extend_from_slice(pages);
                store.put(&path, PutPayload::from(bytes)).await?;
                return Ok(());
            }
            Pages::Spilled { path, .. } => path,
        };
        let mut writer =
            WriteMultipart::new_with_chunk_size(store.put_multipart(&path).await?, UPLOAD_PART);
        if let Some(rate) = rate {
            rate.spend(file.header.len() as u64).await;
        }
        writer.write(&file.header);
        let mut pages = BufReader::new(File::open(spilled)?);
        let mut chunk = vec![0u8; UPLOAD_PART];
        loop {
            let n = pages.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            if let Some(rate) = rate {
                rate.spend(n as u64).await;
            }
            writer.wait_for_capacity(2).await?;
            writer.write(&chunk[..n]);
        }
        writer.finish().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use sieve_index::LocatorHeader;
    use sieve_index::locator::{Location, block_keys};

    use super::*;

    fn bytes(file: &LocatorFile) -> Vec<u8> {
        let mut out = file.header.clone();
        match &file.pages {
            Pages::Memory(pages) => out.extend_from_slice(pages),
            Pages::Spilled { path, .. } => out.extend(std::fs::read(path).unwrap()),
        }
        out
    }

    /// A group spilled to files in several parts, built on every core, locates every key where
    /// the same group built in memory does: keys in one slice, in several slices of a block, in
    /// several blocks.
    #[test]
    fn a_spilled_group_locates_as_one_built_in_memory() {
        let hashes: Vec<u64> = (0..40_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x77)
            .collect();
        let rows: Vec<u32> = (0..20_000).map(|r| r * 3 % 65_536).collect();
        let blocks: Vec<BlockKeys> = (0..4)
            .map(|b| block_keys(&hashes[b * 6000..b * 6000 + 20_000], &rows, 4096))
            .collect();
        let group = |memory_keys, part_keys| {
            let mut keys =
                GroupKeys::with_limits([("c".to_string(), 80_000)], memory_keys, part_keys);
            for block in &blocks {
                keys.add_block(vec![block.clone()]).unwrap();
            }
            let spilled = keys.spilled.is_some();
            (keys.build(4096, 16, 12).unwrap(), spilled)
        };
        let (whole, spilled) = group(MEMORY_KEYS, PART_KEYS);
        assert!(!spilled);
        let (parted, spilled) = group(30_000, 10_000);
        assert!(spilled && matches!(parted.pages, Pages::Spilled { .. }));
        let (whole, parted) = (bytes(&whole), bytes(&parted));
        let lookup = |file: &[u8], hash| {
            let header = LocatorHeader::parse(file).unwrap();
            let c = header.column("c").unwrap();
            let range = header.lookup_range(c, hash);
            header
                .locate(c, hash, &file[range.start as usize..range.end as usize])
                .unwrap()
        };
        let parted_header = LocatorHeader::parse(&parted).unwrap();
        assert_eq!(
            parted_header.columns[0].shards.len(),
            8,
            "8 parts of one shard"
        );
        assert_eq!(parted_header.columns[0].keys, 38_000);
        for &h in &hashes[..38_000] {
            let location = lookup(&parted, h);
            assert_eq!(location, lookup(&whole, h));
            assert_ne!(location, Location::Absent);
        }
    }
}
