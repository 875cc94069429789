//! OPTIMIZE: which blocks to write again, and the commit that puts the new blocks in their place.
//!
//! A DELETE only marks rows (deletion vectors) and small INSERTs leave small blocks, each with
//! its own locator group: both make every later query pay. An OPTIMIZE writes the live rows of
//! such blocks again as full blocks with fresh sidecars and locator groups, rebuilds the xor,
//! fuse and bloom entries of the blocks it keeps that hold keys no live row has, and commits it
//! all as one snapshot. Rows never change: only where they are stored.
//!
//! Blocks are rewritten by whole *units*: a locator group (its file indexes every block of it)
//! or a block outside any group. A unit is rewritten when one of its blocks has at least
//! `stale_rebuild_fraction` of its rows deleted, and small units (live rows less than half what
//! their blocks hold when full: small INSERTs' blocks) are merged when there are two or more of
//! them, or when anything is rewritten anyway. Groups of full blocks are never small, however
//! few blocks they hold: merges on commit join groups without writing their blocks again.
//!
//! The commit races other writers like any other. Appends land beside it. Rows another DELETE
//! removed from a rewritten block after the OPTIMIZE read it are carried to the new blocks
//! (their positions follow from the order rows were written in), so no deleted row comes back.
//! A DELETE that chose rows in a block the OPTIMIZE replaced finds it gone
//! ([`StorageError::Rewritten`]) and chooses again; so does an OPTIMIZE that finds another one
//! rewrote its blocks first.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use roaring::RoaringBitmap;
use sieve_index::FilterKind;

use crate::error::{Result, StorageError};
use crate::meta::block_list::BlockList;
use crate::meta::deletes::{BlockDeletes, Deletes, encode_deletes};
use crate::meta::snapshot::{self, SegmentRef, Snapshot};
use crate::meta::table_def::TableDef;
use crate::read::table::Table;
use crate::write::writer::Written;

/// Attempts before an OPTIMIZE gives up under sustained contention.
const MAX_ATTEMPTS: usize = 100;

/// What an OPTIMIZE of one version does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptimizePlan {
    /// Blocks whose live rows are written again, in the order they are to be written.
    pub rewrite: Vec<usize>,
    /// Blocks kept as they are that have deleted rows and an entry that cannot forget keys:
    /// their sidecars are rebuilt from the live keys.
    pub rebuild: Vec<usize>,
}

impl BlockList {
    /// Chooses what an OPTIMIZE of these blocks rewrites (see the module's documentation).
    pub fn optimize_plan(&self, def: &TableDef) -> OptimizePlan {
        let options = &def.options;
        let block_rows = options.block_rows as u64;
        let units = self.rewrite_units();
        let purge = |unit: &Range<usize>| {
            unit.clone().any(|b| {
                let deleted = self.deleted(b).map_or(0, RoaringBitmap::len);
                deleted > 0
                    && deleted as f64
                        >= options.stale_rebuild_fraction * self.rows().value(b) as f64
            })
        };
        // Per unit: (its blocks, to purge, small).
        let units: Vec<(Range<usize>, bool, bool)> = units
            .into_iter()
            .map(|unit| {
                (
                    unit.clone(),
                    purge(&unit),
                    self.small_unit(&unit, block_rows),
                )
            })
            .collect();
        let smalls = units.iter().filter(|u| u.2).count();
        let merge = smalls >= 2 || units.iter().any(|u| u.1);
        let mut plan = OptimizePlan::default();
        for (unit, purge, small) in units {
            if purge || (merge && small) {
                plan.rewrite.extend(unit);
            } else {
                plan.rebuild.extend(
                    unit.filter(|&b| {
                        self.deleted(b).is_some() && self.has_rebuildable_entry(def, b)
                    }),
                );
            }
        }
        plan
    }

    /// The table's blocks in the units a rewrite takes whole: a locator group (its file
    /// indexes every block of it) or a block outside any group.
    pub(crate) fn rewrite_units(&self) -> Vec<Range<usize>> {
        let mut units = Vec::new();
        let mut groups = self.locator_groups().iter().peekable();
        let mut i = 0;
        while i < self.len() {
            let unit = match groups.next_if(|g| g.blocks.start == i) {
                Some(g) => g.blocks.clone(),
                None => i..i + 1,
            };
            i = unit.end;
            units.push(unit);
        }
        units
    }

    /// The live rows of a unit's blocks.
    pub(crate) fn unit_live_rows(&self, unit: &Range<usize>) -> u64 {
        unit.clone().map(|b| self.live_rows(b)).sum()
    }

    /// Whether a unit is small: its live rows are under half what its blocks hold when full
    /// (small INSERTs' blocks, or blocks DELETEs thinned out).
    pub(crate) fn small_unit(&self, unit: &Range<usize>, block_rows: u64) -> bool {
        2 * self.unit_live_rows(unit) < unit.len() as u64 * block_rows
    }

    /// Whether block `i` has an index entry that keeps keys after their rows are deleted.
    fn has_rebuildable_entry(&self, def: &TableDef, i: usize) -> bool {
        def.options.index_columns.iter().any(|c| {
            self.index_stats(c).is_some_and(|s| {
                s.kinds
                    .value(i)
                    .parse::<FilterKind>()
                    .is_ok_and(|k| !k.can_delete())
            })
        })
    }
}

/// What an OPTIMIZE wrote, to commit in place of what it read.
#[derive(Debug)]
pub struct Rewrite {
    /// The version the plan was made on.
    pub base: Snapshot,
    /// The plan's blocks to rewrite, whose live rows (as of `base`) `written` holds in order.
    pub rewritten: Vec<usize>,
    /// None when no live row was left in them.
    pub written: Option<Written>,
    /// New sidecars of kept blocks (indices in `base`'s list).
    pub sidecars: HashMap<usize, String>,
}

/// What an OPTIMIZE committed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Optimized {
    pub blocks_removed: u64,
    pub blocks_written: u64,
    pub rows_written: u64,
    /// Deleted rows whose storage the rewrite reclaimed.
    pub rows_purged: u64,
    pub sidecars_rebuilt: u64,
    /// Locator groups merged into bigger ones ([`Table::merge_locator_groups`]).
    pub groups_merged: u64,
}

impl Table {
    /// Commits `rewrite` on the newest version, retrying on conflict (see the module's
    /// documentation).
    pub async fn commit_rewrite(&self, rewrite: Rewrite) -> Result<Optimized> {
        let base = self.blocks(&rewrite.base).await?;
        let ids: Vec<String> = rewrite
            .rewritten
            .iter()
            .map(|&i| base.block_id(i).to_string())
            .collect();
        let sidecars: HashMap<String, (String, &str)> = rewrite
            .sidecars
            .iter()
            .map(|(&i, name)| {
                let id = base.block_id(i).to_string();
                (id, (name.clone(), base.sidecar_name(i)))
            })
            .collect();
        // The first new row of each rewritten block, and the rows deleted from it as of base.
        let mut offset = 0;
        let starts: Vec<(u64, Option<&RoaringBitmap>)> = rewrite
            .rewritten
            .iter()
            .map(|&i| {
                offset += base.live_rows(i);
                (offset - base.live_rows(i), base.deleted(i))
            })
            .collect();
        let written_blocks = rewrite.written.as_ref().map_or(&[][..], |w| &w.blocks[..]);
        let added = rewrite
            .written
            .as_ref()
            .map(Written::delta)
            .unwrap_or_default();
        let rows_written = added.rows;
        // The end of each new block in the rows written.
        let ends: Vec<u64> = written_blocks
            .iter()
            .scan(0, |end, block| {
                *end += block.rows;
                Some(*end)
            })
            .collect();
        if rows_written != offset {
            return Err(StorageError::Invalid(format!(
                "OPTIMIZE wrote {rows_written} rows for {offset} live ones"
            )));
        }
        // What is left of each segment some of whose blocks were rewritten, once uploaded.
        let mut leftovers: HashMap<String, SegmentRef> = HashMap::new();
        for _ in 0..MAX_ATTEMPTS {
            let newest = self.snapshot().await?;
            let blocks = self.blocks(&newest).await?;
            let removed = ids
                .iter()
                .map(|id| {
                    blocks
                        .position(id)
                        .ok_or_else(|| StorageError::Rewritten(id.clone()))
                })
                .collect::<Result<Vec<usize>>>()?;
            let removed_set: HashSet<usize> = removed.iter().copied().collect();

            let mut segments = Vec::new();
            for (k, segment) in newest.segments.iter().enumerate() {
                let Some(range) = blocks.segment_blocks(k) else {
                    continue; // deletes: folded into this commit's own below
                };
                let all = range.len();
                let kept: Vec<usize> = range.filter(|i| !removed_set.contains(i)).collect();
                if kept.len() == all {
                    segments.push(segment.clone());
                    continue;
                }
                if kept.is_empty() {
                    continue;
                }
                if !leftovers.contains_key(&segment.name) {
                    let left = self.put_segment(blocks.encode_blocks(&kept)?).await?;
                    leftovers.insert(segment.name.clone(), left);
                }
                segments.push(leftovers[&segment.name].clone());
            }
            if let Some(written) = &rewrite.written {
                segments.push(written.segment.clone());
            }

            // Every deletion vector of the blocks kept, and the sidecars they use.
            let mut deletes = Deletes::new();
            for i in (0..blocks.len()).filter(|i| !removed_set.contains(i)) {
                let id = blocks.block_id(i);
                // A sidecar a DELETE replaced since the plan forgot keys this one may hold.
                let rebuilt = sidecars
                    .get(id)
                    .filter(|(_, was)| *was == blocks.sidecar_name(i))
                    .map(|(name, _)| name.clone());
                let sidecar = rebuilt.or_else(|| {
                    blocks
                        .sidecar_replaced(i)
                        .then(|| blocks.sidecar_name(i).to_string())
                });
                let rows = blocks.deleted(i).cloned().unwrap_or_default();
                if sidecar.is_some() || !rows.is_empty() {
                    deletes.insert(id.to_string(), BlockDeletes { rows, sidecar });
                }
            }
            // Rows deleted from rewritten blocks since the plan, at their new places.
            let mut carried = 0;
            for (&i, (start, before)) in removed.iter().zip(&starts) {
                let Some(now) = blocks.deleted(i) else {
                    continue;
                };
                for row in before.map_or_else(|| now.clone(), |before| now - before) {
                    let rank = u64::from(row) - before.map_or(0, |b| b.rank(row));
                    let at = start + rank;
                    let j = ends.partition_point(|&end| end <= at);
                    let first = j.checked_sub(1).map_or(0, |p| ends[p]);
                    deletes
                        .entry(written_blocks[j].id.clone())
                        .or_default()
                        .rows
                        .insert((at - first) as u32);
                    carried += 1;
                }
            }
            let kept_deletes = if deletes.is_empty() {
                None
            } else {
                Some(self.put_segment(encode_deletes(&deletes)?).await?)
            };
            segments.extend(kept_deletes);

            let sum = |of: &dyn Fn(usize) -> u64| removed.iter().map(|&i| of(i)).sum::<u64>();
            let next = Snapshot {
                version: newest.version + 1,
                segments,
                rows: (newest.rows - sum(&|i| blocks.live_rows(i))) + (added.rows - carried),
                blocks: newest.blocks - removed.len() as u64 + added.blocks,
                data_bytes: newest.data_bytes - sum(&|i| blocks.data_bytes().value(i))
                    + added.data_bytes,
                sidecar_bytes: newest.sidecar_bytes - sum(&|i| blocks.sidecar_bytes().value(i))
                    + added.sidecar_bytes,
                copies: newest.copies.clone(),
                dropped: false,
            };
            if self.try_put(next).await?.is_some() {
                return Ok(Optimized {
                    blocks_removed: removed.len() as u64,
                    blocks_written: added.blocks,
                    rows_written,
                    rows_purged: rewrite
                        .rewritten
                        .iter()
                        .map(|&i| base.rows().value(i) - base.live_rows(i))
                        .sum(),
                    sidecars_rebuilt: rewrite.sidecars.len() as u64,
                    groups_merged: 0,
                });
            }
        }
        Err(snapshot::too_contended())
    }
}
