//! Where statements spill, and how much. A sort or join over its memory budget writes to disk;
//! left to DataFusion's defaults it wrote to the system temp directory with a 100 GB bound (a
//! cross join's sort filled 38 GiB in three minutes without an error) and left its files behind
//! when the server was stopped. Sieve spills into a directory of its own per process
//! (`<spill_dir>/sieve-<pid>-<n>`), bounded by `spill_limit`, removed when the engine goes; a process
//! killed before that leaves it behind, and the next one to start removes it: each process holds
//! a lock on `sieve-<pid>-<n>.lock` beside its directory, so a directory whose lock nobody holds is a
//! dead process's.

use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::error::DataFusionError;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};

/// Where to spill and how much (bytes, all statements of the process together).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillSettings {
    pub dir: PathBuf,
    pub limit: u64,
}

impl Default for SpillSettings {
    fn default() -> Self {
        Self {
            dir: std::env::temp_dir().join("sieve-spill"),
            limit: 16 << 30,
        }
    }
}

const PREFIX: &str = "sieve-";
const LOCK: &str = ".lock";

/// This process's spill directory, removed when dropped.
#[derive(Debug)]
pub(crate) struct SpillPlace {
    dir: PathBuf,
    lock_path: PathBuf,
    limit: u64,
    /// Held while the process lives; the kernel lets it go when the process dies.
    _lock: File,
}

impl SpillPlace {
    /// Removes what dead processes left in `settings.dir`, then makes this process's directory.
    pub(crate) fn open(settings: &SpillSettings) -> io::Result<Self> {
        let root = &settings.dir;
        std::fs::create_dir_all(root)?;
        remove_stale(root)?;
        // Per engine, as a process may open several (tests do).
        static ENGINES: AtomicUsize = AtomicUsize::new(0);
        let engine = ENGINES.fetch_add(1, Ordering::Relaxed);
        let name = format!("{PREFIX}{}-{engine}", std::process::id());
        let lock_path = root.join(format!("{name}{LOCK}"));
        let lock = File::create(&lock_path)?;
        lock.try_lock().map_err(|e| match e {
            TryLockError::WouldBlock => io::Error::other(format!(
                "{} is locked by another process",
                lock_path.display()
            )),
            TryLockError::Error(e) => e,
        })?;
        let dir = root.join(name);
        std::fs::create_dir_all(&dir)?;
        Ok(Self {
            dir,
            lock_path,
            limit: settings.limit,
            _lock: lock,
        })
    }

    pub(crate) fn disk_manager(&self) -> DiskManagerBuilder {
        DiskManagerBuilder::default()
            .with_mode(DiskManagerMode::Directories(vec![self.dir.clone()]))
            .with_max_temp_directory_size(self.limit)
    }

    /// DataFusion's error at the bound names a setting clients cannot change; this one names
    /// the server's.
    pub(crate) fn explain(&self, error: DataFusionError) -> DataFusionError {
        if error
            .find_root()
            .to_string()
            .contains("exceeded the allowable limit")
        {
            return DataFusionError::ResourcesExhausted(format!(
                "the statement needs more than the server's spill space ({} MiB in {}, \
                 spill_limit_gib, shared by all statements); narrow the query or raise the limit",
                self.limit >> 20,
                self.dir.display()
            ));
        }
        error
    }
}

impl Drop for SpillPlace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// Removes the directories of processes that hold no lock on them any more.
fn remove_stale(root: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(root)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str().filter(|n| n.starts_with(PREFIX)) else {
            continue;
        };
        let (dir, lock) = match name.strip_suffix(LOCK) {
            Some(dir) => (root.join(dir), root.join(name)),
            None => (root.join(name), root.join(format!("{name}{LOCK}"))),
        };
        // A process makes its lock before its directory, so a directory without one is stale.
        let stale = match File::open(&lock) {
            Ok(file) => file.try_lock().is_ok(),
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        };
        if stale {
            if dir.exists() {
                log::debug!("removing {}, left by a process that ended", dir.display());
            }
            let _ = std::fs::remove_dir_all(&dir);
            let _ = std::fs::remove_file(&lock);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_process_spills_are_removed_and_a_live_one_kept() {
        let root = tempfile::tempdir().unwrap();
        let settings = SpillSettings {
            dir: root.path().to_path_buf(),
            limit: 1 << 20,
        };
        // What a process killed with -9 leaves: its directory with a file, its unlocked lock.
        let dead = root.path().join("sieve-999999");
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::write(dead.join("spill"), b"rows").unwrap();
        std::fs::write(root.path().join("sieve-999999.lock"), b"").unwrap();
        // A directory whose lock file is gone too.
        std::fs::create_dir_all(root.path().join("sieve-999998")).unwrap();
        // Not Sieve's.
        std::fs::write(root.path().join("other"), b"").unwrap();
        let place = SpillPlace::open(&settings).unwrap();
        assert!(place.dir.is_dir());
        let listing = || {
            let mut names: Vec<String> = std::fs::read_dir(root.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        let own = place.dir.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(
            listing(),
            ["other".to_string(), own.clone(), format!("{own}.lock")]
        );
        // A second engine keeps the first one's directory: its lock is held.
        let second = SpillPlace::open(&settings).unwrap();
        assert!(place.dir.is_dir() && second.dir.is_dir());
        drop(second);
        drop(place);
        assert_eq!(listing(), ["other"]);
    }
}
