//! The codecs a located read decompresses its pages with itself, rather than leaving the
//! chunk to DataFusion's Parquet scan: every codec parquet-rs reads. Zstd (Sieve's own blocks,
//! PyIceberg's and Iceberg's default since 1.4), snappy (Spark's and Hive's default, and
//! PyArrow's), gzip (Iceberg's default before 1.4, so most older tables), LZ4 (raw, as PyArrow
//! writes it, or in Hadoop's framing, as parquet-java does) and Brotli.
//!
//! A page is decompressed whole, or only as far as a reader of its first rows needs
//! ([`Reach`], [`super::page_cut`]): zstd a block at a time ([`super::zstd_pages`]), gzip and
//! Brotli [`STEP`] at a time. Snappy and LZ4 are always decompressed whole: their block formats
//! have no points to stop at that their crates expose, and they decompress several times faster
//! than zstd anyway.
//!
//! The page's decompressed size is not known here (parquet-rs keeps its page header to itself
//! when it reads pages as stored), so a raw LZ4 page, which does not record it, is decompressed
//! into a buffer grown until it fits, as a zstd frame that does not record it is
//! ([`capacities`]).

use std::io::Read;

use bytes::Bytes;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::errors::{ParquetError, Result as ParquetResult};

use super::zstd_pages;

/// The most a page is taken to decompress to: parquet writers cut pages at about 1 MB and
/// dictionaries at a few. A page claiming more is refused before anything is allocated.
pub(crate) const LARGEST_PAGE: usize = 256 << 20;

/// How much of a gzip or Brotli page is decompressed between two questions to its reader.
const STEP: u64 = 64 << 10;

/// The capacities a page of `compressed` bytes whose decompressed size is not known is tried
/// in: 8 times its size (at least 64 KiB), then 4 times larger up to [`LARGEST_PAGE`].
pub(super) fn capacities(compressed: usize) -> impl Iterator<Item = usize> {
    let first = compressed.saturating_mul(8).clamp(64 << 10, LARGEST_PAGE);
    std::iter::successors(Some(first), |&c| {
        (c < LARGEST_PAGE).then(|| (c * 4).min(LARGEST_PAGE))
    })
}

/// What a reader of a page's first rows says of the page's bytes decompressed so far.
pub(crate) enum Reach {
    /// Its rows lie within the page's first `n` bytes (`n` may be more than decompressed yet).
    Within(usize),
    /// More bytes are needed to tell.
    Further,
    /// It cannot tell: the whole page is decompressed.
    Whole,
}

/// What a decompressor does after asking a page's reader ([`next`]).
pub(super) enum Next {
    /// The bytes so far hold the rows, and are cut after them.
    Done,
    /// Decompress another step.
    More,
    /// Decompress the rest.
    ToTheEnd,
}

/// Asks `reach` of the bytes decompressed so far, `out`, and cuts them where they hold the rows.
pub(super) fn next(reach: &mut impl FnMut(&[u8]) -> Reach, out: &mut Vec<u8>) -> Next {
    match reach(out) {
        Reach::Within(n) if n <= out.len() => {
            out.truncate(n);
            Next::Done
        }
        Reach::Within(_) | Reach::Further => Next::More,
        Reach::Whole => Next::ToTheEnd,
    }
}

/// A column chunk's codec, as a located read decompresses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageCodec {
    Uncompressed,
    Zstd,
    Snappy,
    Gzip,
    /// LZ4's block format, unframed (LZ4_RAW).
    Lz4Raw,
    /// LZ4 in Hadoop's framing (the deprecated LZ4), with parquet-rs's fallbacks.
    Lz4,
    Brotli,
}

impl PageCodec {
    /// The codec of a chunk compressed by `compression`; None: the scan reads it.
    pub fn of(compression: Compression) -> Option<Self> {
        match compression {
            Compression::UNCOMPRESSED => Some(Self::Uncompressed),
            Compression::ZSTD(_) => Some(Self::Zstd),
            Compression::SNAPPY => Some(Self::Snappy),
            Compression::GZIP(_) => Some(Self::Gzip),
            Compression::LZ4_RAW => Some(Self::Lz4Raw),
            Compression::LZ4 => Some(Self::Lz4),
            Compression::BROTLI(_) => Some(Self::Brotli),
            // LZO, which parquet-rs does not read either.
            _ => None,
        }
    }

    /// `compressed` decompressed whole.
    pub fn decompress(self, compressed: &[u8]) -> ParquetResult<Bytes> {
        match self {
            // In one call, not block by block.
            Self::Zstd => zstd_pages::decompress(compressed),
            _ => self.decompress_until(compressed, |_| Reach::Whole),
        }
    }

    /// `compressed` decompressed as far as the bytes `reach` needs, then cut to those bytes;
    /// whole where `reach` cannot tell. `reach` is asked after each step, with all bytes so far.
    pub fn decompress_until(
        self,
        compressed: &[u8],
        mut reach: impl FnMut(&[u8]) -> Reach,
    ) -> ParquetResult<Bytes> {
        let mut whole = match self {
            Self::Zstd => return zstd_pages::decompress_until(compressed, reach),
            Self::Gzip => {
                let gzip = flate2::read::MultiGzDecoder::new(compressed);
                return streamed_until(gzip, compressed.len(), "a gzip page", reach);
            }
            Self::Brotli => {
                // 4096: the buffer it copies its input through; the input is already in memory.
                let brotli = brotli_decompressor::Decompressor::new(compressed, 4096);
                return streamed_until(brotli, compressed.len(), "a Brotli page", reach);
            }
            Self::Uncompressed => compressed.to_vec(),
            Self::Snappy => snappy(compressed)?,
            Self::Lz4Raw => lz4_raw(compressed)?,
            Self::Lz4 => lz4_hadoop(compressed)?,
        };
        if let Reach::Within(n) = reach(&whole) {
            whole.truncate(n);
        }
        Ok(Bytes::from(whole))
    }
}

/// A snappy page (the raw format, its length first), decompressed whole.
fn snappy(compressed: &[u8]) -> ParquetResult<Vec<u8>> {
    let bad = |e: snap::Error| ParquetError::General(format!("a snappy page: {e}"));
    let size = snap::raw::decompress_len(compressed).map_err(bad)?;
    if size > LARGEST_PAGE {
        return Err(too_large("a snappy page"));
    }
    snap::raw::Decoder::new()
        .decompress_vec(compressed)
        .map_err(bad)
}

/// A raw LZ4 page decompressed whole, into a buffer grown until it fits.
fn lz4_raw(compressed: &[u8]) -> ParquetResult<Vec<u8>> {
    use lz4_flex::block::DecompressError;
    for capacity in capacities(compressed.len()) {
        let mut out = vec![0; capacity];
        match lz4_flex::block::decompress_into(compressed, &mut out) {
            Ok(size) => {
                out.truncate(size);
                return Ok(out);
            }
            Err(DecompressError::OutputTooSmall { .. }) => {}
            Err(e) => return Err(ParquetError::General(format!("an LZ4 page: {e}"))),
        }
    }
    Err(too_large("an LZ4 page"))
}

/// A page of the deprecated LZ4 codec decompressed whole. Parquet-java writes it in Hadoop's
/// framing: blocks, each its decompressed and compressed sizes (32-bit big-endian) then the
/// raw block. Older parquet-cpp and parquet-rs wrote LZ4's frame format or raw blocks under
/// the same name; those are read as parquet-rs reads them, after Hadoop's framing fails.
fn lz4_hadoop(compressed: &[u8]) -> ParquetResult<Vec<u8>> {
    if let Some(page) = hadoop_frames(compressed) {
        return Ok(page);
    }
    let magic = compressed
        .first_chunk::<4>()
        .map(|m| u32::from_le_bytes(*m));
    if magic == Some(0x184D_2204) {
        let frames = lz4_flex::frame::FrameDecoder::new(compressed);
        let whole = |_: &[u8]| Reach::Whole;
        return streamed_until(frames, compressed.len(), "an LZ4 page", whole).map(Vec::from);
    }
    lz4_raw(compressed)
}

/// `compressed` read as Hadoop's LZ4 blocks; None where it is not that.
fn hadoop_frames(mut compressed: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    while !compressed.is_empty() {
        let (sizes, rest) = compressed.split_first_chunk::<8>()?;
        let [d0, d1, d2, d3, c0, c1, c2, c3] = *sizes;
        let size = u32::from_be_bytes([d0, d1, d2, d3]) as usize;
        let length = u32::from_be_bytes([c0, c1, c2, c3]) as usize;
        if length > rest.len() || out.len() + size > LARGEST_PAGE {
            return None;
        }
        let start = out.len();
        out.resize(start + size, 0);
        let block = lz4_flex::block::decompress_into(&rest[..length], &mut out[start..]);
        if block.ok()? != size {
            return None;
        }
        compressed = &rest[length..];
    }
    Some(out)
}

/// A page read through `decoder`, a streaming decompressor of its `compressed` bytes (one or
/// more gzip members, as parquet-rs reads them, or a Brotli stream), a [`STEP`] at a time until
/// `reach` is answered.
fn streamed_until(
    mut decoder: impl Read,
    compressed: usize,
    what: &str,
    mut reach: impl FnMut(&[u8]) -> Reach,
) -> ParquetResult<Bytes> {
    let bad = |e: std::io::Error| ParquetError::General(format!("{what}: {e}"));
    let mut out = Vec::with_capacity(compressed.saturating_mul(4).min(LARGEST_PAGE));
    let mut told = false;
    loop {
        // Told to go on to the end: one byte past the largest page, to tell a page too large.
        let step = match told {
            true => (LARGEST_PAGE + 1).saturating_sub(out.len()) as u64,
            false => STEP,
        };
        let read = (&mut decoder)
            .take(step)
            .read_to_end(&mut out)
            .map_err(bad)?;
        if out.len() > LARGEST_PAGE {
            return Err(too_large(what));
        }
        if read == 0 {
            return Ok(Bytes::from(out));
        }
        if told {
            continue;
        }
        match next(&mut reach, &mut out) {
            Next::Done => return Ok(Bytes::from(out)),
            Next::More => {}
            Next::ToTheEnd => told = true,
        }
    }
}

fn too_large(what: &str) -> ParquetError {
    ParquetError::General(format!(
        "{what} decompressing to over {} MiB",
        LARGEST_PAGE >> 20
    ))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// 1 MB of little-compressible digits.
    fn page() -> Vec<u8> {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        (0..1 << 20)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                b'0' + (state % 10) as u8
            })
            .collect()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn snappy(bytes: &[u8]) -> Vec<u8> {
        snap::raw::Encoder::new().compress_vec(bytes).unwrap()
    }

    fn brotli(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = brotli::CompressorWriter::new(Vec::new(), 4096, 1, 22);
        encoder.write_all(bytes).unwrap();
        encoder.into_inner()
    }

    /// `bytes` in Hadoop's LZ4 framing, as parquet-java writes it: one block a `block` bytes.
    fn hadoop(bytes: &[u8], block: usize) -> Vec<u8> {
        let mut framed = Vec::new();
        for part in bytes.chunks(block) {
            let compressed = lz4_flex::block::compress(part);
            framed.extend((part.len() as u32).to_be_bytes());
            framed.extend((compressed.len() as u32).to_be_bytes());
            framed.extend(compressed);
        }
        framed
    }

    /// Each codec gives the page whole, or cut where its reader's rows end; a zstd, gzip or
    /// Brotli page is decompressed no further than a step (a zstd block) past that end; a page
    /// cut short is an error, not a short page.
    #[test]
    fn pages_decompress_whole_or_as_far_as_their_rows_reach() {
        let page = page();
        for (codec, compressed) in [
            // One frame recording its size, as parquet-rs writes a page.
            (PageCodec::Zstd, zstd::bulk::compress(&page, 3).unwrap()),
            (PageCodec::Snappy, snappy(&page)),
            (PageCodec::Gzip, gzip(&page)),
            (PageCodec::Brotli, brotli(&page)),
            (PageCodec::Lz4Raw, lz4_flex::block::compress(&page)),
            (PageCodec::Lz4, hadoop(&page, 256 << 10)),
            (PageCodec::Uncompressed, page.clone()),
        ] {
            assert_eq!(codec.decompress(&compressed).unwrap(), page, "{codec:?}");
            for want in [1, 65_536, 65_537, 600_000, 1 << 20] {
                let mut seen = 0;
                let got = codec
                    .decompress_until(&compressed, |so_far| {
                        seen = so_far.len();
                        Reach::Within(want)
                    })
                    .unwrap();
                assert_eq!(got, page[..want.min(page.len())], "{codec:?}, want {want}");
                let step = match codec {
                    PageCodec::Zstd => 128 << 10,
                    PageCodec::Gzip | PageCodec::Brotli => STEP as usize,
                    // Asked once, of the whole page.
                    PageCodec::Snappy
                    | PageCodec::Lz4Raw
                    | PageCodec::Lz4
                    | PageCodec::Uncompressed => page.len() + 1,
                };
                assert!(seen < want + step, "{codec:?}: want {want}, decoded {seen}");
            }
            // A reader that asks for more, then gives up, gets the whole page.
            let mut calls = 0;
            let got = codec
                .decompress_until(&compressed, |_| {
                    calls += 1;
                    if calls < 3 {
                        Reach::Further
                    } else {
                        Reach::Whole
                    }
                })
                .unwrap();
            assert_eq!(got, page, "{codec:?}");
            if codec != PageCodec::Uncompressed {
                let cut = &compressed[..compressed.len() / 2];
                assert!(codec.decompress(cut).is_err(), "{codec:?}");
                let further = codec.decompress_until(cut, |_| Reach::Further);
                assert!(further.is_err(), "{codec:?}");
            }
        }
        // Two gzip members, as Hadoop's codec may write them, read as one page.
        let mut members = gzip(&page[..1000]);
        members.extend(gzip(&page[1000..]));
        assert_eq!(PageCodec::Gzip.decompress(&members).unwrap(), page);
        // The deprecated LZ4 also names LZ4's frame format and raw blocks, as older writers
        // wrote them; a raw page of zeros, 255 times smaller, grows its buffer to fit.
        let mut frame = lz4_flex::frame::FrameEncoder::new(Vec::new());
        frame.write_all(&page).unwrap();
        let zeros = vec![0; 4 << 20];
        for (compressed, want, raw) in [
            (frame.finish().unwrap(), &page, false),
            (lz4_flex::block::compress(&page), &page, true),
            (lz4_flex::block::compress(&zeros), &zeros, true),
        ] {
            assert_eq!(PageCodec::Lz4.decompress(&compressed).unwrap(), want);
            let read = PageCodec::Lz4Raw.decompress(&compressed);
            assert_eq!(read.ok().map(Vec::from), raw.then(|| want.clone()));
        }
        // A snappy page claiming more than a page can hold is refused before it is decoded.
        let mut claims = vec![0xff, 0xff, 0xff, 0xff, 0x0f];
        claims.extend_from_slice(b"short");
        let e = PageCodec::Snappy
            .decompress(&claims)
            .unwrap_err()
            .to_string();
        assert!(e.contains("over 256 MiB"), "{e}");
    }
}
