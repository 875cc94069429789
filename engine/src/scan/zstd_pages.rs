//! Parquet pages' zstd frames, decompressed by one context per thread: whole, or only as far as
//! a reader of the page's first rows needs.
//!
//! Why one context per thread: parquet-rs's page reader makes a zstd codec per column chunk,
//! and creating a context runs `cpuid`, which traps to the hypervisor on a virtual machine:
//! 7 µs a context, a tenth of a lookup's CPU.
//!
//! Why a prefix: a lookup's rows end inside their page, and nothing after them is read
//! (parquet-rs trims a selection's trailing skip). PyArrow's pages hold 20,000 rows, some
//! 440 KB of strings decompressing at under 1 GB/s, which was a third of an attached lookup's
//! CPU. Zstd decodes a frame in blocks of up to 128 KB, so the frame is fed to the decoder one
//! block at a time and decoding stops at the first block boundary past what the reader needs.

use std::cell::RefCell;

use bytes::Bytes;
use datafusion::parquet::errors::{ParquetError, Result as ParquetResult};
use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer, ResetDirective, get_frame_content_size};

use super::page_codec::{LARGEST_PAGE, Next, Reach, capacities, next};

thread_local! {
    /// This thread's zstd decompression context, reused by every page it decompresses.
    static CONTEXT: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

fn zstd_error(what: &str, code: usize) -> ParquetError {
    let name = zstd::zstd_safe::get_error_name(code);
    ParquetError::General(format!("{what}: {name}"))
}

/// The size `frame` records of its content, if it records one.
fn content_size(frame: &[u8]) -> ParquetResult<Option<usize>> {
    let size = get_frame_content_size(frame)
        .map_err(|_| ParquetError::General("a zstd page that is not a zstd frame".into()))?;
    match size.map(usize::try_from) {
        None => Ok(None),
        Some(Ok(size)) if size <= LARGEST_PAGE => Ok(Some(size)),
        Some(_) => Err(ParquetError::General(format!(
            "a zstd page claiming {size:?} bytes, over {} MiB",
            LARGEST_PAGE >> 20
        ))),
    }
}

fn with_context<T>(f: impl FnOnce(&mut DCtx<'static>) -> ParquetResult<T>) -> ParquetResult<T> {
    CONTEXT.with_borrow_mut(|context| f(context.get_or_insert_with(DCtx::create)))
}

/// The zstd frame `compressed` decompressed whole. Parquet-rs writes each page as one frame
/// that records its size; Spark's writer (parquet-java streaming through zstd-jni) does not,
/// and such a frame is decompressed into a buffer grown until it fits.
pub(super) fn decompress(compressed: &[u8]) -> ParquetResult<Bytes> {
    let size = content_size(compressed)?;
    with_context(|context| {
        let Some(size) = size else {
            return decompress_unsized(context, compressed);
        };
        let mut out = Vec::with_capacity(size);
        (context.decompress(&mut out, compressed))
            .map_err(|code| zstd_error("a zstd page did not decompress", code))?;
        if out.len() != size {
            return Err(ParquetError::General(format!(
                "a zstd page decompressed to {} bytes instead of {size}",
                out.len()
            )));
        }
        Ok(Bytes::from(out))
    })
}

/// A zstd frame that does not record its size, decompressed by `context` into a buffer grown
/// until it fits ([`capacities`]; zstd fails a buffer too small).
fn decompress_unsized(context: &mut DCtx<'static>, compressed: &[u8]) -> ParquetResult<Bytes> {
    let mut failed = 0;
    for capacity in capacities(compressed.len()) {
        let mut out = Vec::with_capacity(capacity);
        match context.decompress(&mut out, compressed) {
            Ok(_) => return Ok(Bytes::from(out)),
            Err(code) => failed = code,
        }
    }
    let what = format!(
        "a zstd page without its size did not decompress within {} MiB",
        LARGEST_PAGE >> 20
    );
    Err(zstd_error(&what, failed))
}

/// The zstd frame `compressed` decompressed up to the first block boundary past the bytes
/// `reach` needs, then cut to those bytes; whole where `reach` cannot tell or the frame does
/// not record its size. `reach` is asked again after each block, with all bytes so far.
pub(super) fn decompress_until(
    compressed: &[u8],
    mut reach: impl FnMut(&[u8]) -> Reach,
) -> ParquetResult<Bytes> {
    let Some(size) = content_size(compressed)? else {
        return decompress(compressed);
    };
    with_context(|context| {
        (context.reset(ResetDirective::SessionOnly))
            .map_err(|code| zstd_error("a zstd context did not reset", code))?;
        let mut out = Vec::with_capacity(size);
        // The frame header's first bytes; after that, what zstd asks for: the rest of the
        // header, then each block with the next block's header.
        let (mut at, mut wanted, mut told) = (0, 5, false);
        loop {
            let end = compressed.len().min(at + wanted);
            let mut input = InBuffer::around(&compressed[at..end]);
            let decoded = out.len();
            let mut output = OutBuffer::around_pos(&mut out, decoded);
            let hint = (context.decompress_stream(&mut output, &mut input))
                .map_err(|code| zstd_error("a zstd page did not decompress", code))?;
            let consumed = input.pos();
            at += consumed;
            if hint == 0 {
                break;
            }
            if consumed == 0 && at == compressed.len() {
                return Err(ParquetError::General("a zstd page ends mid-frame".into()));
            }
            wanted = hint;
            if told {
                continue;
            }
            match next(&mut reach, &mut out) {
                Next::Done => return Ok(Bytes::from(out)),
                Next::More => {}
                Next::ToTheEnd => {
                    // The rest in one call: the output has room for all of it.
                    told = true;
                    wanted = compressed.len() - at;
                }
            }
        }
        if out.len() != size {
            return Err(ParquetError::General(format!(
                "a zstd page decompressed to {} bytes instead of {size}",
                out.len()
            )));
        }
        Ok(Bytes::from(out))
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// `bytes` compressed as one zstd frame, recording its size or not.
    fn frame(bytes: &[u8], sized: bool) -> Vec<u8> {
        let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        encoder.include_contentsize(sized).unwrap();
        if sized {
            encoder
                .set_pledged_src_size(Some(bytes.len() as u64))
                .unwrap();
        }
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn pages_decompress_whether_their_frames_record_their_size_or_not() {
        // 2 MB that compress to a few hundred bytes: more than 8 times their frame, so an
        // unsized frame's buffer grows three times.
        let page: Vec<u8> = (0..2_000_000u32).map(|i| (i / 1000) as u8).collect();
        for sized in [true, false] {
            let compressed = frame(&page, sized);
            assert!(compressed.len() * 8 < page.len());
            let known = get_frame_content_size(&compressed).unwrap();
            assert_eq!(known.is_some(), sized);
            assert_eq!(decompress(&compressed).unwrap(), page, "sized: {sized}");
            let whole = decompress_until(&compressed, |_| Reach::Whole).unwrap();
            assert_eq!(whole, page, "sized: {sized}");
        }
        assert!(decompress(b"not a zstd frame").is_err());
        assert!(decompress_until(b"not a zstd frame", |_| Reach::Further).is_err());
    }
}
