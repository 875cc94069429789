//! A locator group's keys on their way into its file, for a write building its groups and for a
//! merge building one of many (`sieve_index::locator`): held in memory while they are few,
//! spilled to local files by hash range once a group outgrows [`MEMORY_KEYS`] (under the temp
//! dir, `$TMPDIR`: 16 bytes per key and block), then built into the file's shards a range at a
//! time on up to [`BUILD_THREADS`] cores. So a group of a billion keys needs the memory of a few
//! ranges, and a write can build its groups at the size merges would otherwise make of them:
//! each key's locator entry built once, not once per tier.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};
use sieve_index::LocatorHeader;
use sieve_index::locator::{
    self, BlockKeys, BuiltPart, ColumnBuilder, ColumnLocator, PageWriter, shards_for,
};
use sieve_index::retrieval::Scratch;
use tempfile::TempDir;

use crate::error::{Result, StorageError};
use crate::read::table::Table;

/// Keys (16 bytes each) a group holds in memory over all its columns before it spills them:
/// 128 MB, what a write held per group before groups could spill, so a table's groups of the
/// earlier 8Mi-row default build in memory as they did.
const MEMORY_KEYS: usize = 1 << 23;
/// Keys per spill file at most: what one thread holds while it builds that range's shards.
const PART_KEYS: usize = 1 << 22;
/// Bytes per part of a spilled group's file upload.
const UPLOAD_PART: usize = 16 << 20;
/// Threads building one spilled group at most, each holding a part's keys twice (sorting) and
/// its shards: ~150 MB.
const BUILD_THREADS: usize = 4;

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

/// A built locator file: its header, and the file in memory or its pages in a local file.
pub struct LocatorFile {
    pub header: Vec<u8>,
    body: Body,
    /// Time its build took, summed over the threads that built it.
    pub build_time: Duration,
}

enum Body {
    /// The whole file, header first.
    Whole(Vec<u8>),
    /// The pages after the header, in the directory they go away with.
    Spilled { _dir: TempDir, pages: PathBuf },
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

    /// Whether the keys went to local files: then the build takes several cores.
    pub fn spilled(&self) -> bool {
        self.spilled.is_some()
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
    /// fingerprints of `fingerprint_bits`. Blocking: it reads, sorts and builds on several cores.
    pub fn build(
        self,
        slice_rows: u32,
        slices_per_block: u32,
        fingerprint_bits: u8,
    ) -> Result<LocatorFile> {
        let started = Instant::now();
        let blocks = self.blocks;
        let Some(dir) = self.spilled else {
            let mut held = self.columns;
            let keys: Vec<Vec<BlockKeys>> = (held.iter_mut())
                .map(|c| std::mem::take(&mut c.blocks))
                .collect();
            let columns: Vec<(&str, Vec<BlockKeys>)> =
                (held.iter()).map(|c| c.name.as_str()).zip(keys).collect();
            let file = locator::build(&columns, slice_rows, slices_per_block, fingerprint_bits)?;
            let header = file[..LocatorHeader::parse(&file)?.len].to_vec();
            return Ok(LocatorFile {
                header,
                body: Body::Whole(file),
                build_time: started.elapsed(),
            });
        };
        let path = dir.path().join("pages");
        let mut pages = PageWriter::new(BufWriter::new(File::create(&path)?));
        let mut columns = Vec::with_capacity(self.columns.len());
        let mut build_time = Duration::ZERO;
        for (k, mut column) in self.columns.into_iter().enumerate() {
            for file in &mut column.files {
                file.flush()?;
            }
            drop(std::mem::take(&mut column.files));
            // Whole parts, each a whole number of shards of at most SHARD_KEYS keys.
            let per_part = shards_for(column.keys.div_ceil(column.parts));
            let builder = ColumnBuilder::new(
                &column.name,
                blocks,
                slices_per_block,
                fingerprint_bits,
                column.parts * per_part,
            );
            let (built, time) = build_parts(dir.path(), k, column.parts, builder, &mut pages)?;
            columns.push(built);
            build_time += time;
        }
        let (_, page_count) = pages.finish()?;
        let header =
            locator::encode_header(blocks, slice_rows, slices_per_block, page_count, &columns)?;
        Ok(LocatorFile {
            header,
            body: Body::Spilled {
                _dir: dir,
                pages: path,
            },
            build_time,
        })
    }
}

impl LocatorFile {
    /// The whole file in memory, for a caller that stores it inside an object of its own (an
    /// attached index's part). Blocking: a spilled file's pages are read from disk.
    pub fn into_bytes(self) -> Result<Vec<u8>> {
        Ok(match self.body {
            Body::Whole(bytes) => bytes,
            Body::Spilled { pages, .. } => {
                let mut out = self.header;
                out.extend(std::fs::read(pages)?);
                out
            }
        })
    }
}

impl ColumnKeys {
    fn spill(&mut self, block: u32, keys: &BlockKeys) -> Result<()> {
        let parts = self.files.len() as u128;
        let mut record = [0u8; 16];
        record[8..12].copy_from_slice(&block.to_le_bytes());
        for &(hash, slice) in keys {
            let part = ((u128::from(hash) * parts) >> 64) as usize;
            record[..8].copy_from_slice(&hash.to_le_bytes());
            record[12..].copy_from_slice(&slice.to_le_bytes());
            self.files[part].write_all(&record)?;
        }
        Ok(())
    }
}

fn part_path(dir: &Path, column: usize, part: usize) -> PathBuf {
    dir.join(format!("{column}-{part}"))
}

/// Builds a spilled column's parts on several threads and writes them in order; returns the
/// column and the threads' time.
fn build_parts<W: Write>(
    dir: &Path,
    column: usize,
    parts: usize,
    mut builder: ColumnBuilder,
    pages: &mut PageWriter<W>,
) -> Result<(ColumnLocator, Duration)> {
    let layout = builder.layout();
    let threads = crate::write::writer::parallelism()
        .min(BUILD_THREADS)
        .min(parts);
    // Parts are handed out at most `threads` ahead of the next to write, so no more than that
    // are built and waiting at once however long one takes.
    let (next, todo) = mpsc::channel::<usize>();
    let todo = Mutex::new(todo);
    let (done, built) = mpsc::sync_channel::<(usize, Duration, Result<BuiltPart>)>(threads);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (done, todo) = (done.clone(), &todo);
            scope.spawn(move || {
                let mut scratch = Scratch::default();
                // Ends when no part is left to hand out, or the writer stopped listening.
                while let Ok(part) = todo
                    .lock()
                    .map_err(drop)
                    .and_then(|t| t.recv().map_err(drop))
                {
                    let started = Instant::now();
                    let result = read_part(&part_path(dir, column, part)).and_then(|entries| {
                        Ok(layout.build_part(entries, part, parts, &mut scratch)?)
                    });
                    let failed = result.is_err();
                    if done.send((part, started.elapsed(), result)).is_err() || failed {
                        return;
                    }
                }
            });
        }
        drop(done);
        let mut next = Some(next);
        for part in 0..threads {
            next.as_ref().map(|n| n.send(part));
        }
        let (mut ready, mut written, mut time) = (BTreeMap::new(), 0, Duration::ZERO);
        for (part, took, result) in built {
            time += took;
            ready.insert(part, result?);
            while let Some(part) = ready.remove(&written) {
                builder.write_part(part, pages)?;
                written += 1;
                if written + threads - 1 < parts {
                    next.as_ref().map(|n| n.send(written + threads - 1));
                } else if written == parts {
                    next = None;
                }
            }
        }
        if written != parts {
            return Err(StorageError::Invalid(format!(
                "{written} of {parts} locator parts built"
            )));
        }
        Ok((builder.finish()?, time))
    })
}

/// A spill file's (hash, block, slice) entries; the file goes once read.
fn read_part(path: &Path) -> Result<Vec<(u64, u32, u32)>> {
    let len = std::fs::metadata(path)?.len() as usize;
    if !len.is_multiple_of(16) {
        return Err(StorageError::Invalid(format!(
            "spilled keys {} end mid-entry",
            path.display()
        )));
    }
    let mut file = File::open(path)?;
    let mut entries = Vec::with_capacity(len / 16);
    let mut chunk = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        file.read_exact(&mut chunk[..n])?;
        entries.extend(chunk[..n].chunks_exact(16).map(|e| {
            let u32_at = |at: usize| u32::from_le_bytes(e[at..at + 4].try_into().unwrap());
            (
                u64::from_le_bytes(e[..8].try_into().unwrap()),
                u32_at(8),
                u32_at(12),
            )
        }));
        left -= n;
    }
    std::fs::remove_file(path)?;
    Ok(entries)
}

impl Table {
    /// Uploads a locator file as `name`, spending the merge I/O budget if `merge_io` (a merge or
    /// a compaction uploads it): one request for a file in memory, a multipart upload streamed
    /// from a spilled one (aborted if it fails, so no parts are left behind).
    pub(crate) async fn upload_locator(
        &self,
        name: &str,
        file: &LocatorFile,
        merge_io: bool,
    ) -> Result<()> {
        let rate = merge_io.then(|| self.storage().merge_rate());
        let path = self.locator_path(name);
        let store = self.storage().store();
        let pages = match &file.body {
            Body::Whole(bytes) => {
                if let Some(rate) = rate {
                    rate.spend(bytes.len() as u64).await;
                }
                store.put(&path, PutPayload::from(bytes.clone())).await?;
                return Ok(());
            }
            Body::Spilled { pages, .. } => pages.clone(),
        };
        let mut writer =
            WriteMultipart::new_with_chunk_size(store.put_multipart(&path).await?, UPLOAD_PART);
        let streamed = async {
            if let Some(rate) = rate {
                rate.spend(file.header.len() as u64).await;
            }
            writer.write(&file.header);
            let mut reader = Some(BufReader::new(File::open(&pages)?));
            loop {
                // Reads off the runtime: a chunk at a time, the reader handed back and forth.
                let (back, chunk) = tokio::task::spawn_blocking({
                    let mut reader = reader.take().expect("handed back");
                    move || {
                        let mut chunk = vec![0u8; UPLOAD_PART];
                        let n = reader.read(&mut chunk)?;
                        chunk.truncate(n);
                        Ok::<_, std::io::Error>((reader, chunk))
                    }
                })
                .await??;
                if chunk.is_empty() {
                    return Ok::<_, StorageError>(());
                }
                reader = Some(back);
                if let Some(rate) = rate {
                    rate.spend(chunk.len() as u64).await;
                }
                writer.wait_for_capacity(2).await?;
                writer.write(&chunk);
            }
        };
        match streamed.await {
            Ok(()) => {
                writer.finish().await?;
                Ok(())
            }
            Err(e) => {
                writer.abort().await?;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use sieve_index::LocatorHeader;
    use sieve_index::locator::{Location, block_keys};

    use super::*;

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
            let spilled = keys.spilled();
            (keys.build(4096, 16, 12).unwrap(), spilled)
        };
        let (whole, spilled) = group(MEMORY_KEYS, PART_KEYS);
        assert!(!spilled);
        let (parted, spilled) = group(30_000, 10_000);
        assert!(spilled && matches!(parted.body, Body::Spilled { .. }));
        let (whole, parted) = (whole.into_bytes().unwrap(), parted.into_bytes().unwrap());
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
