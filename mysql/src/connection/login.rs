//! Logging in: the handshake, and the password check behind the login throttle.

use super::*;

impl Connection {
    /// The handshake; false if the client did not log in (it has been told why).
    pub(super) async fn login<R, W>(
        &mut self,
        reader: &mut PacketReader<R>,
        writer: &mut Writer<W>,
    ) -> io::Result<bool>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let deadline = tokio::time::Instant::now() + self.shared.limits.handshake_timeout;
        let waiting = "did not log in within connect_timeout";
        writer.packet(&greeting(MYSQL_VERSION, self.id, &self.salt, UTF8MB4 as u8));
        writer.flush().await?;
        let packet = match reader.next(PRE_AUTH_MAX_PACKET, deadline, waiting).await {
            Ok(Some(packet)) => packet,
            Ok(None) => return Ok(false),
            Err(e) => return refuse(writer, e).await.map(|()| false),
        };
        writer.reply_to(packet.sequence);
        let Ok(mut response) = parse_response(&packet.payload) else {
            let message = "Bad handshake";
            writer.packet(&error_payload(error::MALFORMED_PACKET, message));
            writer.flush().await?;
            return Ok(false);
        };
        if response.capabilities & capability::SSL != 0 {
            writer.packet(&error_payload(
                error::NOT_SUPPORTED_YET,
                "this server does not offer SSL; connect without it (--ssl-mode=DISABLED)",
            ));
            writer.flush().await?;
            return Ok(false);
        }
        self.capabilities = response.capabilities & SERVER_CAPABILITIES;
        let switch = response.capabilities & capability::PLUGIN_AUTH != 0
            && response
                .plugin
                .as_deref()
                .is_some_and(|p| p != NATIVE_PASSWORD);
        if switch {
            writer.packet(&auth_switch(&self.salt));
            writer.flush().await?;
            match reader.next(PRE_AUTH_MAX_PACKET, deadline, waiting).await {
                Ok(Some(Packet { sequence, payload })) => {
                    writer.reply_to(sequence);
                    response.auth = payload;
                }
                Ok(None) => return Ok(false),
                Err(e) => return refuse(writer, e).await.map(|()| false),
            }
        }
        if !self.authenticate(&response).await {
            let message = format!(
                "Access denied for user '{}'@'{}' (using password: {})",
                String::from_utf8_lossy(&response.user),
                self.peer,
                if response.auth.is_empty() {
                    "NO"
                } else {
                    "YES"
                }
            );
            writer.packet(&error_payload(error::ACCESS_DENIED, &message));
            writer.flush().await?;
            return Ok(false);
        }
        match self.shared.slots.clone().try_acquire_owned() {
            Ok(slot) => self.slot = Some(slot),
            Err(_) => {
                log::warn!(
                    "refused {} after login: max_connections connections are open",
                    self.peer
                );
                writer.packet(&error_payload(error::CON_COUNT, "Too many connections"));
                writer.flush().await?;
                return Ok(false);
            }
        }
        // mysql-connector-python names an empty database in its handshake.
        if let Some(database) = response.database.filter(|d| !d.is_empty()) {
            let database = String::from_utf8_lossy(&database);
            if let Err(e) = self.session.use_database(&database).await {
                writer.packet(&error_payload(error::BAD_DB, &e.to_string()));
                writer.flush().await?;
                return Ok(false);
            }
        }
        writer.packet(&ok_packet(0, self.status()));
        writer.flush().await?;
        Ok(true)
    }

    pub(super) async fn authenticate(&self, response: &HandshakeResponse) -> bool {
        let account = &self.shared.account;
        let ok = self
            .shared
            .throttle
            .check(self.peer, || {
                account.verify(&response.user, &self.salt, &response.auth)
            })
            .await;
        let user = String::from_utf8_lossy(&response.user);
        if ok {
            self.session.set_client(&Client {
                user: format!("{user}@{}", self.peer),
                connection_id: u64::from(self.id),
            });
        } else {
            log::warn!("access denied for user '{user}' from {}", self.peer);
        }
        ok
    }
}
