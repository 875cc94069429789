//! Versioned snapshots and the atomic commit.
//!
//! `tables/<id>/snapshots/<version, 20 digits>.json` lists the segments of a table version. A
//! commit writes its blocks, sidecars and segment first (unique names, invisible until referenced),
//! then creates the next snapshot with a conditional put. If another writer took that version, it
//! re-reads the newest snapshot and tries the next one: appends never conflict, so both succeed and
//! no row is lost or counted twice. A writer that fails before the snapshot leaves only orphans.
//!
//! Snapshots are checksummed JSON ([`crate::meta::checked_json`]) and name each segment with its size
//! and checksum, so every metadata byte a query relies on is verified. After a commit the writer
//! overwrites `tables/<id>/latest.json` with the version it created: a reader that finds fewer
//! snapshots than the pointer names, or a gap in the numbering, reports the table as damaged
//! instead of serving an older version of it. (The pointer may lag behind by the commits whose
//! writer died between the snapshot and the pointer, or lost a race to write it; it never leads.)
//! A process checks the whole history when it first reads a table and whenever the pointer
//! changes; in between, [`latest`] costs two small requests (see there).
//!
//! DROP TABLE commits one last version, marked dropped ([`commit_drop`]), before it removes the
//! definition: a process that knows the table finds the DROP in those two requests, so a lookup
//! by name need not also fetch the definition to see it (definitions are written once, so a
//! known one changes only by a DROP).

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::location::Storage;
use crate::meta::checked_json;

/// Attempts before a commit gives up under sustained contention.
const MAX_COMMIT_ATTEMPTS: usize = 1000;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// 0 is the empty table, before any commit.
    pub version: u64,
    pub segments: Vec<SegmentRef>,
    pub rows: u64,
    pub blocks: u64,
    pub data_bytes: u64,
    pub sidecar_bytes: u64,
    /// The list of files COPY INTO loaded ([`crate::meta::copied_files`]); absent until the
    /// first COPY, and in snapshots written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<SegmentRef>,
    /// The table was dropped: DROP TABLE commits this version (a copy of the one before) ahead
    /// of removing the definition, so a process that knows the table sees the DROP in the check
    /// of its newest version, and its lookups need not fetch the definition as well. Absent in
    /// the others; a build that predates it reads the version as the one before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dropped: bool,
}

/// A segment file as its snapshot names it: enough to fetch it in one GET and verify what came.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentRef {
    pub name: String,
    pub bytes: u64,
    /// XXH3-64 of the file.
    pub xxh3: u64,
}

impl SegmentRef {
    pub fn new(name: String, contents: &[u8]) -> Self {
        Self {
            name,
            bytes: contents.len() as u64,
            xxh3: xxhash_rust::xxh3::xxh3_64(contents),
        }
    }

    /// Checks fetched contents against the reference; `path` names the file in the error.
    pub fn verify(&self, path: &str, contents: &[u8]) -> Result<()> {
        let actual = xxhash_rust::xxh3::xxh3_64(contents);
        if contents.len() as u64 != self.bytes || actual != self.xxh3 {
            return Err(StorageError::Damaged(
                path.to_string(),
                format!(
                    "{} bytes with checksum {actual:016x}, the snapshot recorded {} bytes with {:016x}",
                    contents.len(),
                    self.bytes,
                    self.xxh3
                ),
            ));
        }
        Ok(())
    }
}

/// What one commit adds.
#[derive(Debug, Clone, Default)]
pub struct Delta {
    pub segment: SegmentRef,
    pub rows: u64,
    /// Rows the commit's deletes segment removes; a snapshot's `rows` counts live rows.
    pub deleted_rows: u64,
    pub blocks: u64,
    pub data_bytes: u64,
    pub sidecar_bytes: u64,
    /// A COPY's new list of copied files, and the list it read (the commit fails if another
    /// commit changed it since).
    pub copies: Option<CopiesChange>,
}

#[derive(Debug, Clone)]
pub struct CopiesChange {
    pub from: Option<SegmentRef>,
    pub to: SegmentRef,
}

pub fn snapshots_dir(table_dir: &Path) -> Path {
    table_dir.clone().join("snapshots")
}

fn snapshot_path(table_dir: &Path, version: u64) -> Path {
    snapshots_dir(table_dir).join(format!("{version:020}.json"))
}

fn pointer_path(table_dir: &Path) -> Path {
    table_dir.clone().join("latest.json")
}

/// The body of `latest.json`, and of the table's named pointer.
#[derive(Serialize, Deserialize)]
struct Pointer {
    version: u64,
    /// The snapshot of `version` itself, so a reader whose listing finds nothing newer skips
    /// its GET (one round trip less on a cold lookup). Absent in pointers written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot: Option<Snapshot>,
    /// The table's id, in the named pointer only: a pointer left by a dropped table of the same
    /// name names another id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    table: Option<String>,
}

/// The snapshot a table's named pointer carries (`catalog/<db>/pointers/<name>.json`, written
/// beside `latest.json` by every commit), if it is the pointer of table `id`.
///
/// A process's first read of a table fetches it together with the table's definition, which
/// it cannot do with `latest.json` (its path holds the id the definition gives), and fetches
/// the segments it names while the pointer and listing check the newest version: a cold lookup
/// waits for one round trip less. It is a hint only, like `latest.json`: what a query reads is
/// decided by that check, and segments are verified against the snapshot that names them.
pub fn named_pointer_snapshot(path: &str, bytes: &[u8], id: &str) -> Result<Option<Snapshot>> {
    let pointer: Pointer = checked_json::decode(path, bytes)?;
    Ok(pointer
        .snapshot
        .filter(|s| s.version == pointer.version && pointer.table.as_deref() == Some(id)))
}

/// What a read of the pointer found: the version it names, its ETag, and the snapshot it carries.
type PointerRead = (u64, Option<String>, Option<Snapshot>);

/// What a process last found a table's newest version to be, and the pointer it found it from.
#[derive(Debug, Clone)]
pub struct KnownLatest {
    pointer: u64,
    /// The pointer object's ETag, for a conditional GET.
    etag: Option<String>,
    snapshot: Snapshot,
    /// When the check that found it was sent: no commit before then is missing from it.
    confirmed: Instant,
}

/// The newest snapshot a check sent at most `max_staleness` ago found, without a request; None
/// if no such check is known (`SET sieve.max_staleness_ms`).
pub fn known_within(
    storage: &Storage,
    table_dir: &Path,
    max_staleness: Duration,
) -> Option<Snapshot> {
    let known = storage.caches().latest.get(&table_dir.to_string())?;
    (known.confirmed.elapsed() <= max_staleness && !known.snapshot.dropped)
        .then_some(known.snapshot)
}

/// The newest committed snapshot (version 0 if none); [`StorageError::Dropped`] if the table
/// was dropped, so no read or commit goes on with it.
pub async fn latest(storage: &Storage, table_dir: &Path) -> Result<Snapshot> {
    let snapshot = newest(storage, table_dir).await?;
    if snapshot.dropped {
        return Err(StorageError::Dropped(table_dir.to_string()));
    }
    Ok(snapshot)
}

/// The newest committed snapshot (version 0 if none), dropped or not.
///
/// The first time in a process, and whenever `latest.json` has changed since, the snapshots are
/// listed and checked: none the pointer vouches for may be missing, nor any in between. The first
/// time, the pointer and the listing are sent at once (one round trip, not two). After that a
/// query costs two small concurrent requests and no listing: a conditional GET of the pointer
/// (not modified) and a HEAD of the version after the one known (not there, unless the pointer
/// lags behind a commit, which is then found). When the pointer has moved, only the versions
/// after the one known are listed (S3's `start-after`): the history up to it was checked when
/// it was found, and snapshots are never removed, so a busy table's check does not grow with its
/// commits (it listed all of them after every commit).
async fn newest(storage: &Storage, table_dir: &Path) -> Result<Snapshot> {
    let key = table_dir.to_string();
    let sent = Instant::now();
    let Some(known) = storage.caches().latest.get(&key) else {
        let (pointer, listed) = futures::join!(
            read_pointer(storage, table_dir, None),
            list_versions(storage, table_dir, None)
        );
        let (pointer, etag, carried) = pointer?.ok_or_else(|| {
            StorageError::Invalid(format!(
                "the store answered 'not modified' to an unconditional GET of {key}/latest.json"
            ))
        })?;
        let mut versions = listed?;
        // A commit that landed between the listing and the pointer's read puts the pointer ahead
        // of the listing. A pointer is written after its snapshot, so a listing sent after the
        // pointer was read holds every version it names.
        if versions.last().copied().unwrap_or(0) < pointer {
            versions = list_versions(storage, table_dir, None).await?;
        }
        let read = (pointer, etag, carried);
        return remember(storage, table_dir, read, None, versions, sent).await;
    };
    // Both requests at once, one round trip: each is sent after the query started, so together
    // they still see every commit that completed before it.
    let next = snapshot_path(table_dir, known.snapshot.version + 1);
    let (pointer, next_exists) =
        futures::join!(read_pointer(storage, table_dir, Some(&known)), async {
            match storage.store().head(&next).await {
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Ok(_) => Ok(true),
                Err(e) => Err(StorageError::from(e)),
            }
        });
    let pointer = pointer?;
    if pointer.is_none() && !next_exists? {
        let snapshot = known.snapshot.clone();
        storage.caches().latest.insert(
            key,
            KnownLatest {
                confirmed: sent,
                ..known
            },
        );
        return Ok(snapshot);
    }
    let read = pointer.unwrap_or((known.pointer, known.etag, None));
    // The pointer was read first, then the listing: a pointer is written after its snapshot, so
    // every version it names was already listable.
    let versions = list_versions(storage, table_dir, Some(known.snapshot.version)).await?;
    remember(
        storage,
        table_dir,
        read,
        Some(known.snapshot),
        versions,
        sent,
    )
    .await
}

/// The newest snapshot, checked against `versions` (a listing of the versions after `base`'s,
/// sent after the pointer was read or holding every version it names), kept as what the check
/// sent at `sent` found.
async fn remember(
    storage: &Storage,
    table_dir: &Path,
    (pointer, etag, carried): PointerRead,
    base: Option<Snapshot>,
    versions: Vec<u64>,
    sent: Instant,
) -> Result<Snapshot> {
    let snapshot = checked_newest(storage, table_dir, pointer, carried, base, versions).await?;
    storage.caches().latest.insert(
        table_dir.to_string(),
        KnownLatest {
            pointer,
            etag,
            snapshot: snapshot.clone(),
            confirmed: sent,
        },
    );
    Ok(snapshot)
}

/// Keeps the version a commit created, and the ETag of the pointer it wrote, as the newest
/// known, so the writer's next check is the two small requests and not a read of the pointer
/// it wrote (a snapshot that grows with the table). No commit that completed before the
/// snapshot's put was sent is missing from it: a later version needs this one first. A newer
/// version known already is kept.
fn remember_committed(
    storage: &Storage,
    table_dir: &Path,
    committed: &Snapshot,
    etag: Option<String>,
    sent: Instant,
) {
    let key = table_dir.to_string();
    let latest = &storage.caches().latest;
    if latest
        .get(&key)
        .is_some_and(|known| known.snapshot.version >= committed.version)
    {
        return;
    }
    latest.insert(
        key,
        KnownLatest {
            pointer: committed.version,
            etag,
            snapshot: committed.clone(),
            confirmed: sent,
        },
    );
}

/// The versions of the table's snapshots present after `after` (all if None), ascending.
async fn list_versions(
    storage: &Storage,
    table_dir: &Path,
    after: Option<u64>,
) -> Result<Vec<u64>> {
    let dir = snapshots_dir(table_dir);
    let listing = match after {
        // Names are zero-padded, so their order is the versions'.
        Some(version) => storage
            .store()
            .list_with_offset(Some(&dir), &snapshot_path(table_dir, version)),
        None => storage.store().list(Some(&dir)),
    };
    let mut versions: Vec<u64> = listing
        .try_filter_map(|meta| async move {
            Ok(meta
                .location
                .filename()
                .and_then(|f| f.strip_suffix(".json"))
                .and_then(|v| v.parse::<u64>().ok()))
        })
        .try_collect()
        .await?;
    versions.sort_unstable();
    Ok(versions)
}

/// The newest snapshot after checking the listed history: versions run 1, 2, … without gaps up
/// to at least `pointer`. `base` is a snapshot whose history was checked before, and `versions`
/// those listed after it. `carried` is the pointer's copy of its version's snapshot, used when
/// that version is the newest.
async fn checked_newest(
    storage: &Storage,
    table_dir: &Path,
    pointer: u64,
    carried: Option<Snapshot>,
    base: Option<Snapshot>,
    versions: Vec<u64>,
) -> Result<Snapshot> {
    let checked = base.as_ref().map_or(0, |b| b.version);
    let newest = versions.last().copied().unwrap_or(checked);
    if pointer > newest {
        return Err(missing(
            table_dir,
            pointer,
            &format!(
                "the table's latest.json names version {pointer}, the newest snapshot present is {newest}"
            ),
        ));
    }
    // Commits number snapshots 1, 2, 3, … with no gaps. A listing is no snapshot of the
    // directory: one that ran while commits landed may miss a version created during it and show
    // a later one (readdir leaves entries added meanwhile unspecified), so a version it lacks is
    // looked up before it is called missing. A commit that completed before the listing started
    // is always in it.
    let listed: std::collections::HashSet<u64> = versions.iter().copied().collect();
    let gaps = (checked + 1..=newest)
        .filter(|v| !listed.contains(v))
        .map(|v| async move {
            match storage.store().head(&snapshot_path(table_dir, v)).await {
                Ok(_) => Ok(()),
                Err(object_store::Error::NotFound { .. }) => {
                    Err(missing(table_dir, v, "snapshots are numbered without gaps"))
                }
                Err(e) => Err(StorageError::from(e)),
            }
        });
    futures::future::try_join_all(gaps).await?;
    match (newest, carried, base) {
        (0, _, _) => Ok(Snapshot::default()),
        (version, Some(carried), _) if carried.version == version => Ok(carried),
        (version, _, Some(base)) if base.version == version => Ok(base),
        (version, _, _) => read(storage, table_dir, version).await,
    }
}

fn missing(table_dir: &Path, version: u64, why: &str) -> StorageError {
    StorageError::Damaged(
        snapshot_path(table_dir, version).to_string(),
        format!("it is missing ({why})"),
    )
}

/// The pointer's version and ETag; None if it has not changed since `known` was read.
async fn read_pointer(
    storage: &Storage,
    table_dir: &Path,
    known: Option<&KnownLatest>,
) -> Result<Option<PointerRead>> {
    let path = pointer_path(table_dir);
    let options = GetOptions {
        if_none_match: known.and_then(|k| k.etag.clone()),
        ..Default::default()
    };
    match storage.store().get_opts(&path, options).await {
        Ok(found) => {
            let etag = found.meta.e_tag.clone();
            let pointer: Pointer = checked_json::decode(path.as_ref(), &found.bytes().await?)?;
            Ok(Some((pointer.version, etag, pointer.snapshot)))
        }
        Err(object_store::Error::NotModified { .. }) => Ok(None),
        // No pointer yet (or a lost one): the listing finds what was committed.
        Err(object_store::Error::NotFound { .. }) => Ok(Some((0, None, None))),
        Err(e) => Err(e.into()),
    }
}

pub async fn read(storage: &Storage, table_dir: &Path, version: u64) -> Result<Snapshot> {
    let path = snapshot_path(table_dir, version);
    let bytes = storage.store().get(&path).await?.bytes().await?;
    let snapshot: Snapshot = checked_json::decode(path.as_ref(), &bytes)?;
    if snapshot.version != version {
        return Err(StorageError::Damaged(
            path.to_string(),
            format!("it holds version {}", snapshot.version),
        ));
    }
    Ok(snapshot)
}

/// Commits `deltas` as one version on top of whatever is newest, retrying on conflict. For
/// appends only: they never conflict, so the same deltas land on any base.
pub async fn commit(
    storage: &Storage,
    table_dir: &Path,
    named_pointer: &Path,
    deltas: &[Delta],
) -> Result<Snapshot> {
    for _ in 0..MAX_COMMIT_ATTEMPTS {
        let base = latest(storage, table_dir).await?;
        if let Some(next) = try_commit(storage, table_dir, named_pointer, &base, deltas).await? {
            return Ok(next);
        }
    }
    Err(too_contended())
}

/// Commits the version that says the table was dropped ([`Snapshot::dropped`]), unless the
/// newest says so already (a DROP that ended before it removed the definition). Like any
/// commit it races the others for the next version: a commit that loses to it fails, and one
/// that wins is the last version of the table.
pub async fn commit_drop(storage: &Storage, table_dir: &Path, named_pointer: &Path) -> Result<()> {
    for _ in 0..MAX_COMMIT_ATTEMPTS {
        let base = newest(storage, table_dir).await?;
        if base.dropped {
            return Ok(());
        }
        let next = Snapshot {
            version: base.version + 1,
            dropped: true,
            ..base
        };
        if try_put(storage, table_dir, named_pointer, next)
            .await?
            .is_some()
        {
            return Ok(());
        }
    }
    Err(too_contended())
}

pub fn too_contended() -> StorageError {
    StorageError::Invalid(format!(
        "commit lost {MAX_COMMIT_ATTEMPTS} races for the next snapshot; try again"
    ))
}

/// Commits `deltas`, in order, as the version after `base`; None if another commit took that
/// version first (the caller decides what its deltas become on the newer base).
pub async fn try_commit(
    storage: &Storage,
    table_dir: &Path,
    named_pointer: &Path,
    base: &Snapshot,
    deltas: &[Delta],
) -> Result<Option<Snapshot>> {
    let mut next = Snapshot {
        version: base.version + 1,
        ..base.clone()
    };
    for delta in deltas {
        next.segments.push(delta.segment.clone());
        next.copies = match &delta.copies {
            None => next.copies,
            Some(change) if change.from == next.copies => Some(change.to.clone()),
            Some(_) => {
                return Err(StorageError::Invalid(
                    "another COPY INTO this table committed while this one ran; nothing was \
                     committed: run it again (it skips the files the other one loaded)"
                        .into(),
                ));
            }
        };
        next.rows = next.rows + delta.rows - delta.deleted_rows;
        next.blocks += delta.blocks;
        next.data_bytes += delta.data_bytes;
        next.sidecar_bytes += delta.sidecar_bytes;
    }
    try_put(storage, table_dir, named_pointer, next).await
}

/// Creates `next` unless its version exists; None if another commit took that version first.
///
/// A version that exists and holds exactly `next` was this very commit: the store took an
/// earlier request whose reply was lost, and object_store's retry was answered "already exists".
/// Every commit names a segment under a fresh UUID (or, for an OPTIMIZE, drops segments only it
/// saw), so no other commit's snapshot is equal to it, and it is not applied twice.
pub async fn try_put(
    storage: &Storage,
    table_dir: &Path,
    named_pointer: &Path,
    next: Snapshot,
) -> Result<Option<Snapshot>> {
    let opts = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    let body = PutPayload::from(checked_json::encode(&next)?);
    let sent = Instant::now();
    match storage
        .store()
        .put_opts(&snapshot_path(table_dir, next.version), body, opts)
        .await
    {
        Ok(_) => {
            // Committed; the pointers only let readers notice a snapshot that goes missing, and
            // save round trips.
            let pointer = |table: Option<String>| {
                checked_json::encode(&Pointer {
                    version: next.version,
                    snapshot: Some(next.clone()),
                    table,
                })
            };
            let id = table_dir.filename().map(str::to_string);
            let (latest, named) = (pointer(None)?, pointer(id)?);
            let (store, latest_path) = (storage.store(), pointer_path(table_dir));
            let (latest, named) = futures::join!(
                store.put(&latest_path, PutPayload::from(latest)),
                store.put(named_pointer, PutPayload::from(named)),
            );
            if let Ok(put) = &latest {
                remember_committed(storage, table_dir, &next, put.e_tag.clone(), sent);
            }
            for (which, written) in [("latest.json", latest), (named_pointer.as_ref(), named)] {
                if let Err(e) = written {
                    log::warn!(
                        "committed version {} but could not update {which}: {e}",
                        next.version
                    );
                }
            }
            Ok(Some(next))
        }
        Err(object_store::Error::AlreadyExists { .. }) => {
            let taken = read(storage, table_dir, next.version).await?;
            Ok((taken == next).then_some(next))
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit of one 10-row block whose segment is named `name`.
    fn delta(name: &str) -> Delta {
        Delta {
            segment: SegmentRef::new(name.into(), name.as_bytes()),
            rows: 10,
            deleted_rows: 0,
            blocks: 1,
            data_bytes: 100,
            sidecar_bytes: 10,
            copies: None,
        }
    }

    /// A commit whose snapshot landed but whose caller did not hear so (a reply lost to a
    /// network fault, the request retried and answered "already exists") is not applied twice,
    /// and another writer's snapshot of that version is not taken for it.
    #[tokio::test]
    async fn a_commit_whose_reply_was_lost_counts_once() {
        let storage = Storage::in_memory();
        let dir = Path::from("tables/t");
        let named = Path::from("catalog/default/pointers/t.json");
        let base = commit(&storage, &dir, &named, &[delta("a")]).await.unwrap();
        let landed = try_commit(&storage, &dir, &named, &base, &[delta("b")])
            .await
            .unwrap();
        let again = try_commit(&storage, &dir, &named, &base, &[delta("b")])
            .await
            .unwrap();
        assert_eq!(again, landed, "the retry finds its own snapshot");
        let other = try_commit(&storage, &dir, &named, &base, &[delta("c")])
            .await
            .unwrap();
        assert_eq!(other, None, "version 2 is b's, not c's");
        let newest = latest(&storage, &dir).await.unwrap();
        assert_eq!((newest.version, newest.rows), (2, 20));
    }

    /// DROP's last version: a process that knows the table finds it in its next check, no
    /// commit lands after it, and a DROP repeated (one that stopped before it removed the
    /// definition) adds none.
    #[tokio::test]
    async fn a_dropped_table_takes_no_read_and_no_commit() {
        let root = tempfile::tempdir().unwrap();
        let storage = Storage::open(root.path().to_str().unwrap()).unwrap();
        let (dir, named) = table_with(&storage, &["a", "b"]).await;
        let reader = Storage::open(root.path().to_str().unwrap()).unwrap();
        let before = latest(&reader, &dir).await.unwrap();
        assert_eq!(before.version, 2);
        commit_drop(&storage, &dir, &named).await.unwrap();
        commit_drop(&storage, &dir, &named).await.unwrap();
        let dropped = newest(&storage, &dir).await.unwrap();
        assert_eq!(
            (dropped.version, dropped.rows, dropped.dropped),
            (3, 20, true)
        );
        for storage in [&reader, &storage] {
            let error = latest(storage, &dir).await.unwrap_err();
            assert!(matches!(error, StorageError::Dropped(_)), "{error}");
            assert_eq!(known_within(storage, &dir, Duration::MAX), None);
        }
        let error = commit(&storage, &dir, &named, &[delta("c")]).await;
        assert!(matches!(error, Err(StorageError::Dropped(_))), "{error:?}");
        let late = try_commit(&storage, &dir, &named, &before, &[delta("c")]).await;
        assert_eq!(late.unwrap(), None, "version 3 is the DROP's");
    }

    /// Writers and readers of one table in a local directory, each writer a process of its own
    /// (its own caches) and each reader alternately a fresh process (it lists the snapshots) and
    /// one that has read the table (it checks the pointer), never fail because of each other;
    /// no reader sees a version older than one it saw, and every commit counts once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writers_and_readers_never_fail() {
        const WRITERS: usize = 4;
        const COMMITS: usize = 150;
        let root = tempfile::tempdir().unwrap();
        let location = root.path().to_str().unwrap().to_string();
        let dir = Path::from("tables/t");
        let named = Path::from("catalog/default/pointers/t.json");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // The table exists before anyone reads it.
        let first = Storage::open(&location).unwrap();
        commit(&first, &dir, &named, &[delta("first")])
            .await
            .unwrap();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let storage = Storage::open(&location).unwrap();
                let (dir, named) = (dir.clone(), named.clone());
                tokio::spawn(async move {
                    for i in 0..COMMITS {
                        let name = format!("w{w}-{i}");
                        commit(&storage, &dir, &named, &[delta(&name)])
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (location, dir, done) = (location.clone(), dir.clone(), done.clone());
                tokio::spawn(async move {
                    let kept = Storage::open(&location).unwrap();
                    let (mut reads, mut seen) = (0u64, 0u64);
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        // Every other read as a process's first (it lists the snapshots), the
                        // others as a process that has read the table (it checks the pointer).
                        let fresh = Storage::open(&location).unwrap();
                        let storage = if reads % 2 == 0 { &fresh } else { &kept };
                        let snapshot = (latest(storage, &dir).await)
                            .unwrap_or_else(|e| panic!("a read after version {seen} failed: {e}"));
                        assert!(
                            snapshot.version >= seen,
                            "{} after {seen}",
                            snapshot.version
                        );
                        seen = snapshot.version;
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut reads = 0;
        for reader in readers {
            reads += reader.await.unwrap();
        }
        assert!(reads > 0);
        let newest = latest(&Storage::open(&location).unwrap(), &dir)
            .await
            .unwrap();
        let commits = (WRITERS * COMMITS) as u64 + 1;
        assert_eq!((newest.version, newest.rows), (commits, 10 * commits));
    }

    /// Table `t`'s directory and named pointer, after a commit per name.
    async fn table_with(storage: &Storage, names: &[&str]) -> (Path, Path) {
        let dir = Path::from("tables/t");
        let named = Path::from("catalog/default/pointers/t.json");
        for name in names {
            commit(storage, &dir, &named, &[delta(name)]).await.unwrap();
        }
        (dir, named)
    }

    /// A listing that missed a version committed while it ran (and showed a later one) is not
    /// taken for a gap in the history; a version really missing still is.
    #[tokio::test]
    async fn a_listing_that_raced_a_commit_is_not_a_gap() {
        let storage = Storage::in_memory();
        let (dir, _) = table_with(&storage, &["a", "b", "c"]).await;
        let raced = checked_newest(&storage, &dir, 3, None, None, vec![1, 3]).await;
        assert_eq!(raced.unwrap().version, 3);
        storage
            .store()
            .delete(&snapshot_path(&dir, 2))
            .await
            .unwrap();
        let damaged = checked_newest(&storage, &dir, 3, None, None, vec![1, 3]).await;
        let error = damaged.unwrap_err().to_string();
        assert!(error.contains("00000000000000000002.json"), "{error}");
        assert!(error.contains("without gaps"), "{error}");
    }

    /// Once a process has checked a table's history up to a version, a moved pointer makes it
    /// list only the versions after that one: a history it checked before is not listed again
    /// (here a version it checked is gone, which a full listing would call a gap), and the new
    /// versions are still checked for gaps.
    #[tokio::test]
    async fn a_moved_pointer_lists_only_the_versions_after_the_one_known() {
        let root = tempfile::tempdir().unwrap();
        let storage = Storage::open(root.path().to_str().unwrap()).unwrap();
        let (dir, _) = table_with(&storage, &["a", "b", "c"]).await;
        let reader = Storage::open(root.path().to_str().unwrap()).unwrap();
        assert_eq!(latest(&reader, &dir).await.unwrap().version, 3);
        let store = storage.store();
        store.delete(&snapshot_path(&dir, 1)).await.unwrap();
        table_with(&storage, &["d"]).await;
        let newest = latest(&reader, &dir).await.unwrap();
        assert_eq!((newest.version, newest.rows), (4, 40));
        // Versions 5 and 6 committed, 5 lost: the check after 4 finds the gap.
        table_with(&storage, &["e", "f"]).await;
        store.delete(&snapshot_path(&dir, 5)).await.unwrap();
        let error = latest(&reader, &dir).await.unwrap_err().to_string();
        assert!(error.contains("00000000000000000005.json"), "{error}");
    }
}
