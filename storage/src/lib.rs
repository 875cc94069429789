//! Sieve's table format on object storage (Parquet blocks, their index sidecars, segment metadata,
//! snapshots and atomic commits). Built in the storage/engine issue; depends only on `sieve-index`.
