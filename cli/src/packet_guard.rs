//! What stands between a client's socket and opensrv-mysql: it hands the protocol library the
//! client's bytes one MySQL packet at a time, bounds packet sizes, and ends connections that
//! stall.
//!
//! - One packet per read. opensrv-mysql 0.7.0's `PacketReader::next_async` returns a packet that
//!   borrows its buffer and then, when the same socket read held more bytes, replaces that buffer
//!   (`self.bytes = rest.to_vec()`): a use-after-free that answers pipelined commands from freed
//!   memory. A read from this guard never crosses the end of a packet, so that branch never runs.
//! - Sizes. Before login a packet may hold [`PRE_AUTH_MAX_PACKET`] bytes (a handshake response is
//!   a few hundred), after it `max_allowed_packet`, as MySQL does; a larger one is answered with
//!   MySQL's error 1153 and the connection is closed, before its bytes are buffered anywhere.
//! - Time. Login must finish within the handshake timeout (a deadline, so a byte every few seconds
//!   does not keep a connection), and a logged-in client that sends nothing for the idle timeout
//!   is disconnected (MySQL's `connect_timeout` and `wait_timeout`).
//!
//! Written here because no crate frames MySQL packets in front of another library's reader.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// The largest packet a client may send before it has logged in.
pub const PRE_AUTH_MAX_PACKET: usize = 16 << 10;

/// A packet header's length field when more of the same packet follows.
const CONTINUED: usize = 0xff_ffff;

/// Socket bytes read ahead of the packet being handed on, at most.
const READ_AHEAD: usize = 8 << 10;

#[derive(Debug, Clone, Copy)]
pub struct GuardLimits {
    pub max_allowed_packet: usize,
    pub handshake_timeout: Duration,
    pub idle_timeout: Duration,
}

pub struct PacketGuard<R> {
    inner: R,
    /// Where an oversized packet's error goes (the same socket).
    errors: Arc<TcpStream>,
    limits: GuardLimits,
    /// Set by the backend once the client has logged in.
    authenticated: Arc<AtomicBool>,
    /// Read from the socket, not handed on yet.
    pending: Vec<u8>,
    /// Bytes of the current physical packet (header included) still to hand on.
    in_packet: usize,
    /// Payload bytes of the current logical packet so far (it spans physical packets whose
    /// length field is 0xffffff).
    logical: usize,
    continued: bool,
    handshake_deadline: Instant,
    idle: Option<Pin<Box<Sleep>>>,
}

impl<R> PacketGuard<R> {
    pub fn new(
        inner: R,
        errors: Arc<TcpStream>,
        limits: GuardLimits,
        authenticated: Arc<AtomicBool>,
    ) -> Self {
        Self {
            inner,
            errors,
            limits,
            authenticated,
            pending: Vec::new(),
            in_packet: 0,
            logical: 0,
            continued: false,
            handshake_deadline: Instant::now() + limits.handshake_timeout,
            idle: None,
        }
    }

    /// Starts the next physical packet from the header at the front of `pending`.
    fn start_packet(&mut self) -> io::Result<()> {
        let length = usize::from(self.pending[0])
            | usize::from(self.pending[1]) << 8
            | usize::from(self.pending[2]) << 16;
        let sequence = self.pending[3];
        self.logical = if self.continued {
            self.logical + length
        } else {
            length
        };
        self.continued = length == CONTINUED;
        let authenticated = self.authenticated.load(Ordering::Acquire);
        let limit = if authenticated {
            self.limits.max_allowed_packet
        } else {
            PRE_AUTH_MAX_PACKET
        };
        if self.logical > limit {
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
        self.in_packet = 4 + length;
        Ok(())
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
            if this.in_packet > 0 && !this.pending.is_empty() {
                let n = this.in_packet.min(this.pending.len()).min(out.remaining());
                out.put_slice(&this.pending[..n]);
                this.pending.drain(..n);
                this.in_packet -= n;
                this.idle = None;
                return Poll::Ready(Ok(()));
            }
            if this.in_packet == 0 && this.pending.len() >= 4 {
                this.start_packet()?;
                continue;
            }
            let mut chunk = [0u8; READ_AHEAD];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(result) => result?,
                Poll::Pending => {
                    this.check_time(cx)?;
                    return Poll::Pending;
                }
            }
            if read.filled().is_empty() {
                // End of stream; opensrv reports a packet it was cut off in.
                return Poll::Ready(Ok(()));
            }
            this.pending.extend_from_slice(read.filled());
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
