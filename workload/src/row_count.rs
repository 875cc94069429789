//! Row counts as people type them on a command line (`10M`, `1B`): `sieve load` and
//! `sieve-bench` take them.

/// Accepts 10000000, 10_000_000, 10M, 1B (and k, m, g / b suffixes), as row counts are large.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let cleaned = text.replace('_', "");
    let (digits, scale) = match cleaned.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&cleaned[..cleaned.len() - 1], 1_000),
        Some('m') => (&cleaned[..cleaned.len() - 1], 1_000_000),
        Some('b' | 'g') => (&cleaned[..cleaned.len() - 1], 1_000_000_000),
        _ => (cleaned.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("expected a row count like 1000000, 10M or 1B, got {text:?}"))
}

/// Cores the rates per core divide by.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
