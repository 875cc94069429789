//! LOAD DATA LOCAL INFILE on the wire: the server answers the statement with a request for the
//! file (0xFB and its name), the client sends the file in packets and an empty packet at its
//! end, and the server answers the statement. The file is loaded as it arrives, two packets
//! ahead of the loader. Once asked for, the file is read to its end even if the load has failed
//! (the client sends it whatever the server says), so the connection stays in step; a client
//! that leaves mid-file commits nothing.

use bytes::Bytes;
use futures::SinkExt;
use futures::channel::mpsc;
use sieve_engine::LocalLoad;

use super::statements::PROGRESS_EVERY;
use super::*;

/// The one request a server sends in answer to a statement: "send me this file".
const LOCAL_INFILE_REQUEST: u8 = 0xfb;

impl Connection {
    pub(super) async fn load_local<W: AsyncWrite + Unpin>(
        &mut self,
        sql: &str,
        load: LocalLoad,
        more: u16,
        r: &mut ClientReader,
        w: &mut Writer<W>,
    ) -> io::Result<Outcome> {
        let refused = match (
            self.shared.local_infile,
            self.capabilities & capability::LOCAL_FILES != 0,
        ) {
            (false, _) => Some("the server's local_infile is off"),
            (true, false) => Some("the client did not enable it (mysql: --local-infile=1)"),
            (true, true) => None,
        };
        if let Some(side) = refused {
            let message = format!(
                "Loading local data is disabled; this must be enabled on both the client and \
                 server sides: {side}"
            );
            w.packet(&error_payload(error::LOCAL_INFILE_DISABLED, &message));
            return Ok(Outcome::Failed);
        }
        let _running = self.killable.running(sql, self.session.database());
        let mut request = vec![LOCAL_INFILE_REQUEST];
        request.extend_from_slice(load.file().as_bytes());
        w.packet(&request);
        w.flush().await?;

        let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(2);
        let head: String = sql.chars().take(80).collect();
        let loading =
            self.session
                .progress()
                .watch(load.run(rx), PROGRESS_EVERY, |rows, elapsed| {
                    log::info!(
                        "{rows} rows loaded in {:.0} s ({:.0} rows/s): {head}",
                        elapsed.as_secs_f64(),
                        rate(rows, elapsed)
                    );
                });
        let (loaded, sent) = tokio::join!(loading, send_file(r, tx, self.shared.limits));
        let last = match sent {
            Ok(last) => last,
            Err(e) => return refuse(w, e).await.map(|()| Outcome::Failed),
        };
        w.reply_to(last);
        match loaded {
            Ok(loaded) => {
                if loaded.rows > 0
                    && let Some(writes) = &mut self.transaction
                {
                    *writes += 1;
                }
                let info = format!(
                    "Records: {}  Deleted: 0  Skipped: {}  Warnings: 0",
                    loaded.rows + loaded.skipped,
                    loaded.skipped
                );
                w.packet(&ok_packet_with_info(
                    loaded.rows,
                    self.status() | more,
                    &info,
                ));
                Ok(Outcome::Done)
            }
            Err(e) => {
                let (code, message) = mysql_error(&e);
                w.packet(&error_payload(code, &message));
                Ok(Outcome::Failed)
            }
        }
    }
}

/// Passes the client's file packets to `tx` up to the empty one that ends it; its sequence
/// number. Once the loader stops taking them (it failed), the rest are read and dropped.
async fn send_file(
    r: &mut ClientReader,
    mut tx: mpsc::Sender<io::Result<Bytes>>,
    limits: GuardLimits,
) -> Result<u8, ReadError> {
    let mut taken = true;
    loop {
        let deadline = tokio::time::Instant::now() + limits.idle_timeout;
        let waiting = "silent for longer than wait_timeout while sending a LOAD DATA file";
        let packet = match r.next(limits.max_allowed_packet, deadline, waiting).await {
            Ok(Some(packet)) => packet,
            Ok(None) => {
                let gone = io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "client went away mid-file",
                );
                let _ = tx
                    .send(Err(io::Error::new(gone.kind(), gone.to_string())))
                    .await;
                return Err(ReadError::Io(gone));
            }
            Err(e) => {
                let failed = io::Error::other("the client's file could not be read to its end");
                let _ = tx.send(Err(failed)).await;
                return Err(e);
            }
        };
        if packet.payload.is_empty() {
            return Ok(packet.sequence);
        }
        if taken {
            taken = tx.send(Ok(Bytes::from(packet.payload))).await.is_ok();
        }
    }
}
