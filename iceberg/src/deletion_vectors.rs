//! Deletion vectors (spec v3: "Deletion Vectors"; Puffin's `deletion-vector-v1` blob): a bitmap
//! of the row ordinals deleted from one data file, a blob inside a Puffin file. The manifest
//! entry names the data file (`referenced_data_file`) and where the blob lies
//! (`content_offset`, `content_size_in_bytes`), so only the blob is read, not the Puffin footer.
//!
//! The blob is a 4-byte big-endian length of what follows up to the checksum, the magic bytes
//! `D1 D3 39 64`, the vector in Roaring's portable 64-bit serialization (a little-endian count
//! of 32-bit bitmaps, each a key and the bitmap), and a big-endian CRC-32 of the magic and the
//! vector. Any mismatch refuses the table: a vector read wrong would return deleted rows.

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{IcebergError, Result};
use crate::manifest::FileEntry;
use crate::position_deletes::Positions;
use crate::warehouse::Warehouse;

const MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];

/// Reads the vector `entry` names: the ordinals it deletes from its data file.
pub async fn read(warehouse: &Warehouse, entry: &FileEntry) -> Result<Positions> {
    let bad = |why: String| IcebergError::Deletes(entry.path.clone(), why);
    let Some(vector) = &entry.vector else {
        return Err(bad(
            "a deletion vector without referenced_data_file, content_offset or \
             content_size_in_bytes"
                .into(),
        ));
    };
    let range = vector.offset..vector.offset + vector.size;
    let blob = warehouse.read_range(&entry.path, range).await?;
    let deleted = decode(&blob).map_err(bad)?;
    if deleted.len() != entry.record_count {
        return Err(bad(format!(
            "the vector deletes {} rows, its manifest entry says {}",
            deleted.len(),
            entry.record_count
        )));
    }
    Ok(Positions::from([(vector.data_file.clone(), deleted)]))
}

/// The ordinals a `deletion-vector-v1` blob deletes. Ordinals are u32, as for position delete
/// files: a data file of over 4 billion rows is refused, not read.
fn decode(blob: &[u8]) -> std::result::Result<RoaringBitmap, String> {
    let (length, rest) = blob
        .split_first_chunk::<4>()
        .ok_or("a blob shorter than its length")?;
    let length = u32::from_be_bytes(*length) as usize;
    if rest.len() != length + 4 || length < MAGIC.len() {
        return Err(format!(
            "a blob of {} bytes whose length says {length} and a checksum",
            blob.len()
        ));
    }
    let (checked, crc) = rest.split_at(length);
    let crc = u32::from_be_bytes(crc.try_into().expect("4 bytes"));
    if crc32fast::hash(checked) != crc {
        return Err("the blob's CRC-32 does not match: it is damaged".into());
    }
    let (magic, vector) = checked.split_at(MAGIC.len());
    if magic != MAGIC {
        return Err(format!("magic {magic:02x?}, not a deletion-vector-v1 blob"));
    }
    let vector = RoaringTreemap::deserialize_from(vector)
        .map_err(|e| format!("the vector does not decode: {e}"))?;
    let mut deleted = RoaringBitmap::new();
    for (high, bitmap) in vector.bitmaps() {
        if high != 0 {
            return Err("a position beyond 2^32 rows".into());
        }
        deleted |= bitmap;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob as Iceberg's Java writer lays it out.
    fn blob(vector: &RoaringTreemap) -> Vec<u8> {
        let mut checked = MAGIC.to_vec();
        vector.serialize_into(&mut checked).unwrap();
        let mut blob = (checked.len() as u32).to_be_bytes().to_vec();
        blob.extend_from_slice(&checked);
        blob.extend_from_slice(&crc32fast::hash(&checked).to_be_bytes());
        blob
    }

    #[test]
    fn a_blob_decodes_to_its_ordinals_and_damage_is_refused() {
        let vector: RoaringTreemap = [0u64, 7, 9, 70_000, 4_000_000_000].into_iter().collect();
        let decoded = decode(&blob(&vector)).unwrap();
        assert_eq!(
            decoded.iter().collect::<Vec<_>>(),
            [0, 7, 9, 70_000, 4_000_000_000]
        );
        let mut damaged = blob(&vector);
        damaged[12] ^= 1;
        assert!(decode(&damaged).unwrap_err().contains("CRC-32"));
        let short = &blob(&vector)[..20];
        assert!(decode(short).unwrap_err().contains("length says"));
        let beyond: RoaringTreemap = [1u64 << 32].into_iter().collect();
        assert!(decode(&blob(&beyond)).unwrap_err().contains("2^32"));
    }
}
