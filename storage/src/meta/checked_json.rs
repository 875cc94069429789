//! Metadata JSON (snapshots, the `latest` pointer, catalog entries) in a versioned, checksummed
//! envelope, so a damaged or foreign file is a named error instead of a silently different table:
//!
//! ```json
//! {"format":1,"xxh3":"0123456789abcdef","body":{…}}
//! ```
//!
//! `xxh3` is the XXH3-64 (the hash sidecars use) of the exact bytes of `body` as they appear in the
//! file, in lowercase hex; `format` is the envelope's version. The body's own fields are the
//! object's; a reader takes the body's bytes verbatim (serde_json's `RawValue`), so the checksum
//! never depends on how a JSON library re-serializes a value.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Result, StorageError};
use crate::meta::versions::ENVELOPE_FORMAT;

#[derive(Serialize)]
struct Write<'a> {
    format: u32,
    xxh3: String,
    body: &'a RawValue,
}

#[derive(Deserialize)]
struct Read<'a> {
    format: u32,
    xxh3: String,
    #[serde(borrow)]
    body: &'a RawValue,
}

/// The file's bytes for `value`.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let body = serde_json::value::to_raw_value(value)?;
    Ok(serde_json::to_vec(&Write {
        format: ENVELOPE_FORMAT,
        xxh3: format!("{:016x}", xxh3_64(body.get().as_bytes())),
        body: &body,
    })?)
}

/// The value in the file at `path` (named in every error), checked against its checksum.
pub fn decode<T: DeserializeOwned>(path: &str, bytes: &[u8]) -> Result<T> {
    let damaged = |why: String| StorageError::Damaged(path.to_string(), why);
    let envelope: Read = serde_json::from_slice(bytes).map_err(|e| {
        damaged(format!(
            "not a Sieve metadata file (expected {{\"format\", \"xxh3\", \"body\"}}): {e}"
        ))
    })?;
    if envelope.format > ENVELOPE_FORMAT {
        return Err(damaged(format!(
            "format {} was written by a newer Sieve (this one reads up to {ENVELOPE_FORMAT})",
            envelope.format
        )));
    }
    let actual = format!("{:016x}", xxh3_64(envelope.body.get().as_bytes()));
    if actual != envelope.xxh3 {
        return Err(damaged(format!(
            "checksum mismatch (stored {}, computed {actual})",
            envelope.xxh3
        )));
    }
    serde_json::from_str(envelope.body.get()).map_err(|e| {
        damaged(format!(
            "checksum matches but the body does not decode: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Thing {
        name: String,
        n: u64,
    }

    #[test]
    fn round_trips_and_catches_every_single_byte_change() {
        let thing = Thing {
            name: "données/ü".into(),
            n: 42,
        };
        let bytes = encode(&thing).unwrap();
        assert_eq!(decode::<Thing>("x.json", &bytes).unwrap(), thing);
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[i] ^= 1 << bit;
                match decode::<Thing>("x.json", &damaged) {
                    Err(StorageError::Damaged(path, _)) => assert_eq!(path, "x.json"),
                    Err(other) => panic!("byte {i} bit {bit}: {other}"),
                    // Only a change the body's bytes do not see, e.g. in the envelope's spacing.
                    Ok(decoded) => assert_eq!(decoded, thing, "byte {i} bit {bit}"),
                }
            }
        }
        let newer = String::from_utf8(bytes)
            .unwrap()
            .replace("\"format\":1", "\"format\":2");
        let error = decode::<Thing>("x.json", newer.as_bytes()).unwrap_err();
        assert!(
            error.to_string().contains("written by a newer Sieve"),
            "{error}"
        );
        let legacy = serde_json::to_vec(&thing).unwrap();
        let error = decode::<Thing>("x.json", &legacy).unwrap_err();
        assert!(error.to_string().contains("x.json"), "{error}");
    }
}
