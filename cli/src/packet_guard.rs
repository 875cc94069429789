//! What stands between a client's socket and opensrv-mysql: it hands the protocol library the
//! client's bytes one whole MySQL packet at a time, bounds packet sizes, refuses text that is not
//! UTF-8, and ends connections that stall.
//!
//! - One packet per read. opensrv-mysql 0.7.0's `PacketReader::next_async` returns a packet that
//!   borrows its buffer and then, when the same socket read held more bytes, replaces that buffer
//!   (`self.bytes = rest.to_vec()`): a use-after-free that answers pipelined commands from freed
//!   memory. A read from this guard never crosses the end of a packet, so that branch never runs.
//! - Sizes. Before login a packet may hold [`PRE_AUTH_MAX_PACKET`] bytes (a handshake response is
//!   a few hundred), after it `max_allowed_packet`, as MySQL does; a larger one is answered with
//!   MySQL's error 1153 and the connection is closed, when its header arrives and before its body
//!   is buffered anywhere.
//! - Text. opensrv turns a query, a statement to prepare or a database name that is not UTF-8
//!   into an I/O error that closes the connection; the guard answers such a command itself with
//!   MySQL's error 1300 and the connection goes on. It can, because opensrv reads the next packet
//!   only once it has sent its answer to the last one.
//! - Statements. opensrv closes the connection when a client executes a statement id it does
//!   not know (one it closed, or never prepared); MySQL answers error 1243 and goes on, and so
//!   does the guard, from the ids the backend has open ([`OpenStatements`]).
//! - Time. Login must finish within the handshake timeout (a deadline, so a byte every few seconds
//!   does not keep a connection), and a logged-in client that sends nothing for the idle timeout
//!   is disconnected (MySQL's `connect_timeout` and `wait_timeout`).
//!
//! Written here because no crate frames MySQL packets in front of another library's reader.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// The largest packet a client may send before it has logged in.
pub const PRE_AUTH_MAX_PACKET: usize = 16 << 10;

/// A packet header's length field when more of the same packet follows.
const CONTINUED: usize = 0xff_ffff;

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 8 << 10;

/// Commands whose body opensrv reads as UTF-8 text: COM_INIT_DB, COM_QUERY, COM_STMT_PREPARE.
const TEXT_COMMANDS: [u8; 3] = [0x02, 0x03, 0x16];
const COM_STMT_EXECUTE: u8 = 0x17;

/// The prepared statement ids a connection's backend has open, shared with its guard.
#[derive(Debug, Default)]
pub struct OpenStatements(Mutex<HashSet<u32>>);

impl OpenStatements {
    pub fn opened(&self, id: u32) {
        self.ids().insert(id);
    }

    pub fn closed(&self, id: u32) {
        self.ids().remove(&id);
    }

    fn is_open(&self, id: u32) -> bool {
        self.ids().contains(&id)
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<u32>> {
        // A set of integers cannot be left half-changed by a panic.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[derive(Debug, Clone, Copy)]
pub struct GuardLimits {
    pub max_allowed_packet: usize,
    pub handshake_timeout: Duration,
    pub idle_timeout: Duration,
}

pub struct PacketGuard<R> {
    inner: R,
    /// Where the guard's own answers go (the same socket).
    errors: Arc<TcpStream>,
    limits: GuardLimits,
    /// Set by the backend once the client has logged in.
    authenticated: Arc<AtomicBool>,
    /// Kept by the backend: the statement ids COM_STMT_EXECUTE may name.
    statements: Arc<OpenStatements>,
    /// Read from the socket, not handed on yet.
    pending: BytesMut,
    /// Bytes at the front of `pending` that make up a checked packet, still to hand on.
    ready: usize,
    /// An answer of the guard's own, still to write.
    answer: Vec<u8>,
    handshake_deadline: Instant,
    idle: Option<Pin<Box<Sleep>>>,
}

/// A whole logical packet at the front of the buffer: it may span physical packets whose length
/// field is 0xffffff.
struct Framed {
    /// Its bytes, headers included.
    len: usize,
    /// The sequence number of its last physical packet.
    sequence: u8,
}

/// The error of a packet over `limit`: its header's sequence number and the limit.
struct Oversized(u8);

/// Finds the logical packet at the front of `pending`, once all of it has arrived; refuses one
/// over `limit` as soon as a header says so.
fn frame(pending: &[u8], limit: usize) -> Result<Option<Framed>, Oversized> {
    let (mut at, mut payload) = (0, 0);
    loop {
        let Some(header) = pending.get(at..at + 4) else {
            return Ok(None);
        };
        let length =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        payload += length;
        if payload > limit {
            return Err(Oversized(header[3]));
        }
        at += 4 + length;
        if length < CONTINUED {
            return Ok((pending.len() >= at).then_some(Framed {
                len: at,
                sequence: header[3],
            }));
        }
    }
}

/// The payload of a framed packet, without its headers.
fn payload(packet: &[u8]) -> Cow<'_, [u8]> {
    if packet.len() < 4 + CONTINUED {
        return Cow::Borrowed(&packet[4..]);
    }
    Cow::Owned(
        packet
            .chunks(4 + CONTINUED)
            .flat_map(|physical| &physical[4..])
            .copied()
            .collect(),
    )
}

/// MySQL's error 1243 for COM_STMT_EXECUTE of a statement that is not open, if it is one.
fn unknown_statement(payload: &[u8], open: &OpenStatements) -> Option<String> {
    let (&command, body) = payload.split_first()?;
    if command != COM_STMT_EXECUTE {
        return None;
    }
    let id = u32::from_le_bytes(body.get(..4)?.try_into().ok()?);
    (!open.is_open(id))
        .then(|| format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"))
}

/// MySQL's error 1300 for a text command that is not UTF-8, if it is one.
fn invalid_text(payload: &[u8]) -> Option<String> {
    let (command, text) = payload.split_first()?;
    if !TEXT_COMMANDS.contains(command) {
        return None;
    }
    let error = std::str::from_utf8(text).err()?;
    let bad = &text[error.valid_up_to()..];
    let shown: String = bad.iter().take(16).map(|b| format!("{b:02X}")).collect();
    Some(format!("Invalid utf8mb4 character string: '{shown}'"))
}

impl<R> PacketGuard<R> {
    pub fn new(
        inner: R,
        errors: Arc<TcpStream>,
        limits: GuardLimits,
        authenticated: Arc<AtomicBool>,
        statements: Arc<OpenStatements>,
    ) -> Self {
        Self {
            inner,
            errors,
            limits,
            authenticated,
            statements,
            pending: BytesMut::new(),
            ready: 0,
            answer: Vec::new(),
            handshake_deadline: Instant::now() + limits.handshake_timeout,
            idle: None,
        }
    }

    /// Checks the packet at the front of `pending`, once whole: it becomes ready to hand on, or
    /// the guard answers it.
    fn check_packet(&mut self) -> io::Result<bool> {
        let authenticated = self.authenticated.load(Ordering::Acquire);
        let limit = if authenticated {
            self.limits.max_allowed_packet
        } else {
            PRE_AUTH_MAX_PACKET
        };
        let packet = match frame(&self.pending, limit) {
            Ok(Some(packet)) => packet,
            Ok(None) => return Ok(false),
            Err(Oversized(sequence)) => {
                let message = if authenticated {
                    format!("Got a packet bigger than 'max_allowed_packet' bytes ({limit})")
                } else {
                    format!("Got a packet bigger than {limit} bytes before logging in")
                };
                // Best effort: the connection closes whether or not the client reads it.
                let _ = self.errors.try_write(&error_packet(
                    sequence.wrapping_add(1),
                    1153,
                    "08S01",
                    &message,
                ));
                return Err(io::Error::new(io::ErrorKind::InvalidData, message));
            }
        };
        let refused = authenticated
            .then(|| {
                let payload = payload(&self.pending[..packet.len]);
                invalid_text(&payload)
                    .map(|message| (1300, message))
                    .or_else(|| unknown_statement(&payload, &self.statements).map(|m| (1243, m)))
            })
            .flatten();
        match refused {
            Some((code, message)) => {
                self.answer =
                    error_packet(packet.sequence.wrapping_add(1), code, "HY000", &message);
                self.pending.advance(packet.len);
            }
            None => self.ready = packet.len,
        }
        Ok(true)
    }

    /// Writes the guard's own answer to the client.
    fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.answer.is_empty() {
            ready!(self.errors.poll_write_ready(cx))?;
            match self.errors.try_write(&self.answer) {
                Ok(n) => drop(self.answer.drain(..n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// The error of a client that took too long, if it did.
    fn check_time(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let (deadline, what) = if self.authenticated.load(Ordering::Acquire) {
            let limit = self.limits.idle_timeout;
            let idle = self
                .idle
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
            (idle.as_mut(), "idle for longer than the idle timeout")
        } else {
            let deadline = self.handshake_deadline;
            let idle = self
                .idle
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            (idle.as_mut(), "did not log in within the handshake timeout")
        };
        if deadline.poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("client {what}"),
            ));
        }
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for PacketGuard<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.ready > 0 {
                let n = this.ready.min(out.remaining());
                out.put_slice(&this.pending[..n]);
                this.pending.advance(n);
                this.ready -= n;
                if this.pending.is_empty() && this.pending.capacity() > 4 * READ_CHUNK {
                    // Give back what a large packet took.
                    this.pending = BytesMut::new();
                }
                return Poll::Ready(Ok(()));
            }
            ready!(this.poll_answer(cx))?;
            if this.check_packet()? {
                continue;
            }
            let start = this.pending.len();
            this.pending.resize(start + READ_CHUNK, 0);
            let mut read = ReadBuf::new(&mut this.pending[start..]);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let filled = read.filled().len();
            this.pending.truncate(start + filled);
            match polled {
                Poll::Ready(result) => result?,
                Poll::Pending => {
                    this.check_time(cx)?;
                    return Poll::Pending;
                }
            }
            if filled == 0 {
                // End of stream, perhaps inside a packet, which is dropped.
                return Poll::Ready(Ok(()));
            }
            this.idle = None;
        }
    }
}

/// A MySQL ERR packet.
pub fn error_packet(sequence: u8, code: u16, sql_state: &str, message: &str) -> Vec<u8> {
    let mut payload = vec![0xff];
    payload.extend_from_slice(&code.to_le_bytes());
    payload.push(b'#');
    payload.extend_from_slice(sql_state.as_bytes());
    payload.extend_from_slice(message.as_bytes());
    let length = payload.len() as u32;
    let mut packet = length.to_le_bytes()[..3].to_vec();
    packet.push(sequence);
    packet.extend_from_slice(&payload);
    packet
}
