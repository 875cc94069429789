//! MySQL packets on a socket: framing in both directions, with the limits a server owes itself.
//!
//! - Sizes. Before login a packet may hold [`PRE_AUTH_MAX_PACKET`] bytes (a handshake response is
//!   a few hundred), after it `max_allowed_packet`, as MySQL does; a larger one is refused as
//!   soon as its header says so, before its body is buffered anywhere.
//! - Time. Login must finish by a deadline (so a byte every few seconds does not keep a
//!   connection), and a logged-in client that sends nothing for the idle timeout is disconnected
//!   (MySQL's `connect_timeout` and `wait_timeout`).
//! - Pipelining. A read may hold several packets, or part of one: each is framed out of the
//!   buffer whole and owned, so a client that sends commands back to back gets each answered in
//!   order (the bug this replaces: opensrv-mysql 0.7.0 returned a packet borrowing a buffer it
//!   then freed).

use std::io;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// The largest packet a client may send before it has logged in.
pub const PRE_AUTH_MAX_PACKET: usize = 16 << 10;

/// A packet header's length field when more of the same packet follows.
const CONTINUED: usize = 0xff_ffff;

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 8 << 10;

/// Written replies are sent once this many bytes are waiting (and at the end of each reply).
const WRITE_CHUNK: usize = 64 << 10;

#[derive(Debug, Clone, Copy)]
pub struct GuardLimits {
    pub max_allowed_packet: usize,
    pub handshake_timeout: Duration,
    pub idle_timeout: Duration,
}

/// One logical packet from the client.
#[derive(Debug)]
pub struct Packet {
    /// The sequence number of its last physical packet: a reply continues from it.
    pub sequence: u8,
    pub payload: Vec<u8>,
}

#[derive(Debug)]
pub enum ReadError {
    /// Over the limit: the sequence number its header carried, and the limit.
    Oversized(u8, usize),
    /// Nothing arrived in time: what the client failed to do.
    TimedOut(&'static str),
    Io(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// The whole logical packet at the front of `pending`, once it has arrived: its length with
/// headers, and its last sequence number. Refuses one over `limit` as soon as a header says so.
fn frame(pending: &[u8], limit: usize) -> Result<Option<(usize, u8)>, ReadError> {
    let (mut at, mut payload) = (0, 0);
    loop {
        let Some(header) = pending.get(at..at + 4) else {
            return Ok(None);
        };
        let length =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        payload += length;
        if payload > limit {
            return Err(ReadError::Oversized(header[3], limit));
        }
        at += 4 + length;
        if length < CONTINUED {
            return Ok((pending.len() >= at).then_some((at, header[3])));
        }
    }
}

pub struct PacketReader<R> {
    inner: R,
    /// Read from the socket, not framed yet.
    pending: BytesMut,
}

impl<R: AsyncRead + Unpin> PacketReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_pending(inner, BytesMut::new())
    }

    /// A reader whose socket's first bytes were read already (by the reader before a switch
    /// to TLS).
    pub fn with_pending(inner: R, pending: BytesMut) -> Self {
        Self { inner, pending }
    }

    /// The bytes read from the socket and not framed yet.
    pub fn into_pending(self) -> BytesMut {
        self.pending
    }

    /// The next packet, if the client sends one within `limit` bytes by `deadline`; None once
    /// it has closed the connection (perhaps inside a packet, which is dropped).
    pub async fn next(
        &mut self,
        limit: usize,
        deadline: Instant,
        waiting_for: &'static str,
    ) -> Result<Option<Packet>, ReadError> {
        loop {
            if let Some((len, sequence)) = frame(&self.pending, limit)? {
                let packet = self.pending.split_to(len);
                let payload = packet
                    .chunks(4 + CONTINUED)
                    .flat_map(|physical| &physical[4..])
                    .copied()
                    .collect();
                if self.pending.is_empty() && self.pending.capacity() > 4 * READ_CHUNK {
                    // Give back what a large packet took.
                    self.pending = BytesMut::new();
                }
                return Ok(Some(Packet { sequence, payload }));
            }
            self.pending.reserve(READ_CHUNK);
            let read = tokio::time::timeout_at(deadline, self.inner.read_buf(&mut self.pending));
            match read.await {
                Err(_) => return Err(ReadError::TimedOut(waiting_for)),
                Ok(Ok(0)) => return Ok(None),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e.into()),
            }
        }
    }
}

pub struct PacketWriter<W> {
    inner: W,
    out: Vec<u8>,
    sequence: u8,
}

impl<W: AsyncWrite + Unpin> PacketWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            out: Vec::new(),
            sequence: 0,
        }
    }

    /// Replies to a packet continue its sequence.
    pub fn reply_to(&mut self, sequence: u8) {
        self.sequence = sequence.wrapping_add(1);
    }

    /// Queues one logical packet (split into physical ones of under 16 MiB).
    pub fn packet(&mut self, payload: &[u8]) {
        let mut chunks = payload.chunks(CONTINUED);
        let mut last = 0;
        for chunk in chunks.by_ref() {
            self.physical(chunk);
            last = chunk.len();
        }
        if last == CONTINUED || payload.is_empty() {
            // A payload that fills its last physical packet ends with an empty one.
            self.physical(&[]);
        }
    }

    fn physical(&mut self, chunk: &[u8]) {
        self.out
            .extend_from_slice(&(chunk.len() as u32).to_le_bytes()[..3]);
        self.out.push(self.sequence);
        self.sequence = self.sequence.wrapping_add(1);
        self.out.extend_from_slice(chunk);
    }

    /// Sends what is queued once there is enough of it to be worth a write.
    pub async fn flush_if_full(&mut self) -> io::Result<()> {
        if self.out.len() >= WRITE_CHUNK {
            self.flush().await?;
        }
        Ok(())
    }

    pub async fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.inner.write_all(&self.out).await?;
            self.out.clear();
            if self.out.capacity() > 4 * WRITE_CHUNK {
                self.out = Vec::new();
            }
        }
        self.inner.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn physical(sequence: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        out.push(sequence);
        out.extend_from_slice(payload);
        out
    }

    #[tokio::test]
    async fn pipelined_packets_are_framed_one_by_one() {
        let mut bytes = physical(0, b"\x03select 1");
        bytes.extend(physical(0, b"\x0e"));
        bytes.extend(&physical(0, b"\x03sel")[..6]); // cut short by the client leaving
        let mut reader = PacketReader::new(bytes.as_slice());
        let far = Instant::now() + Duration::from_secs(5);
        let first = reader.next(100, far, "").await.unwrap().unwrap();
        assert_eq!(first.payload, b"\x03select 1");
        let second = reader.next(100, far, "").await.unwrap().unwrap();
        assert_eq!(second.payload, b"\x0e");
        assert!(reader.next(100, far, "").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn oversized_packets_are_refused_from_their_header() {
        let header = [0xff, 0xff, 0x0f, 3]; // a megabyte announced, none sent
        let mut reader = PacketReader::new(&header[..]);
        let far = Instant::now() + Duration::from_secs(5);
        assert!(matches!(
            reader.next(1000, far, "").await,
            Err(ReadError::Oversized(3, 1000))
        ));
    }

    #[tokio::test]
    async fn large_payloads_round_trip_through_continued_packets() {
        let payload: Vec<u8> = (0..CONTINUED * 2 + 10).map(|i| i as u8).collect();
        let mut wire = Vec::new();
        {
            let mut writer = PacketWriter::new(&mut wire);
            writer.packet(&payload);
            writer.packet(&payload[..CONTINUED]);
            writer.flush().await.unwrap();
        }
        let mut reader = PacketReader::new(wire.as_slice());
        let far = Instant::now() + Duration::from_secs(5);
        let got = reader.next(usize::MAX, far, "").await.unwrap().unwrap();
        assert_eq!((got.payload.len(), got.sequence), (payload.len(), 2));
        let exact = reader.next(usize::MAX, far, "").await.unwrap().unwrap();
        assert_eq!((exact.payload.len(), exact.sequence), (CONTINUED, 4));
    }
}
