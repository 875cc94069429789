//! Memory a statement freed, given back to the system. glibc's malloc keeps freed memory in its
//! arenas: after `select count(distinct repeat(cast(number as varchar), 10000)) from
//! numbers(20000)` peaked at ~1.65 GB, a server stayed at 1,075 MiB resident through the
//! statements after it (docs/benchmarks.md). The memory budgets bound what a statement may use,
//! not what the process keeps once it ends. So a thread looks once a second, and when the
//! process is resident beyond what malloc has handed out by more than [`SLACK`], `malloc_trim`
//! returns the free pages of every arena. (mimalloc returns memory by itself, but served lookups
//! no faster, measured in docs/benchmarks.md, and would be a C library more to build.)

/// Resident bytes beyond malloc's live ones that are left alone: the binary's code, thread
/// stacks, and the free space malloc keeps for the next allocations.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const SLACK: usize = 256 << 20;

/// Starts the thread (glibc on Linux; elsewhere the allocator is left to itself).
pub fn spawn() -> std::io::Result<()> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    std::thread::Builder::new()
        .name("sieve-heap-trim".into())
        .spawn(|| {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
                trim_if_idle_memory();
            }
        })?;
    Ok(())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_if_idle_memory() {
    let Some(resident) = resident_bytes() else {
        return;
    };
    // SAFETY: mallinfo2 and malloc_trim take no pointers; both lock each arena in turn, as any
    // malloc call does.
    let info = unsafe { libc::mallinfo2() };
    let live = info.uordblks + info.hblkhd;
    if resident > live + SLACK {
        // SAFETY: as above.
        let released = unsafe { libc::malloc_trim(0) };
        log::debug!(
            "heap trim: {} MiB resident, {} MiB in use: released {}",
            resident >> 20,
            live >> 20,
            released == 1
        );
    }
}

/// The process's resident set, from /proc/self/statm (pages).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * usize::try_from(page).ok()?)
}
