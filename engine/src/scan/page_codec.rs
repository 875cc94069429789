//! The codecs a located read decompresses its pages with itself, rather than leaving the
//! chunk to DataFusion's Parquet scan: zstd (Sieve's own blocks, PyIceberg's and Iceberg's
//! default since 1.4), snappy (Spark's and Hive's default, and PyArrow's) and gzip (Iceberg's
//! default before 1.4, so most older tables). Others (LZ4, Brotli) are rare in tables users
//! have and are left to the scan, which reads every codec.
//!
//! A page is decompressed whole, or only as far as a reader of its first rows needs
//! ([`Reach`], [`super::page_cut`]): zstd a block at a time ([`super::zstd_pages`]), gzip 64
//! KiB at a time. Snappy is always decompressed whole: its raw format has no points to stop at
//! that the `snap` crate exposes, and it decompresses several times faster than zstd anyway.

use std::io::Read;

use bytes::Bytes;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::errors::{ParquetError, Result as ParquetResult};

use super::zstd_pages;

/// The most a page is taken to decompress to: parquet writers cut pages at about 1 MB and
/// dictionaries at a few. A page claiming more is refused before anything is allocated.
pub(crate) const LARGEST_PAGE: usize = 256 << 20;

/// How much of a gzip page is decompressed between two questions to its reader.
const GZIP_STEP: u64 = 64 << 10;

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
}

impl PageCodec {
    /// The codec of a chunk compressed by `compression`; None: the scan reads it.
    pub fn of(compression: Compression) -> Option<Self> {
        match compression {
            Compression::UNCOMPRESSED => Some(Self::Uncompressed),
            Compression::ZSTD(_) => Some(Self::Zstd),
            Compression::SNAPPY => Some(Self::Snappy),
            Compression::GZIP(_) => Some(Self::Gzip),
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
            Self::Gzip => return gzip_until(compressed, reach),
            Self::Uncompressed => compressed.to_vec(),
            Self::Snappy => snappy(compressed)?,
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

/// A gzip page (one or more members, as parquet-rs reads them) decompressed a step at a time
/// until `reach` is answered.
fn gzip_until(compressed: &[u8], mut reach: impl FnMut(&[u8]) -> Reach) -> ParquetResult<Bytes> {
    let bad = |e: std::io::Error| ParquetError::General(format!("a gzip page: {e}"));
    let mut decoder = flate2::read::MultiGzDecoder::new(compressed);
    let mut out = Vec::with_capacity(compressed.len().saturating_mul(4).min(LARGEST_PAGE));
    let mut told = false;
    loop {
        // Told to go on to the end: one byte past the largest page, to tell a page too large.
        let step = match told {
            true => (LARGEST_PAGE + 1).saturating_sub(out.len()) as u64,
            false => GZIP_STEP,
        };
        let read = (&mut decoder)
            .take(step)
            .read_to_end(&mut out)
            .map_err(bad)?;
        if out.len() > LARGEST_PAGE {
            return Err(too_large("a gzip page"));
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

    /// Each codec gives the page whole, or cut where its reader's rows end; a zstd or gzip page
    /// is decompressed no further than a step (a zstd block) past that end; a page cut short
    /// is an error, not a short page.
    #[test]
    fn pages_decompress_whole_or_as_far_as_their_rows_reach() {
        let page = page();
        for (codec, compressed) in [
            // One frame recording its size, as parquet-rs writes a page.
            (PageCodec::Zstd, zstd::bulk::compress(&page, 3).unwrap()),
            (PageCodec::Snappy, snappy(&page)),
            (PageCodec::Gzip, gzip(&page)),
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
                    PageCodec::Gzip => GZIP_STEP as usize,
                    // Asked once, of the whole page.
                    PageCodec::Snappy | PageCodec::Uncompressed => page.len() + 1,
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
