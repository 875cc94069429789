//! Logging in: the handshake, and the password check behind the login throttle.

use super::*;

/// The client's side of the connection after login, plain or TLS.
pub(super) type ClientReader = PacketReader<Box<dyn AsyncRead + Unpin + Send>>;
pub(super) type ClientWriter = PacketWriter<Box<dyn AsyncWrite + Unpin + Send>>;

/// MySQL's ER_SECURE_TRANSPORT_REQUIRED.
const SECURE_TRANSPORT_REQUIRED: u16 = 3159;

impl Connection {
    /// The handshake, switching to TLS if the client asks; the connection's reader and writer
    /// if the client logged in, None if not (it has been told why).
    pub(super) async fn login(
        &mut self,
        mut stream: TcpStream,
    ) -> io::Result<Option<(ClientReader, ClientWriter)>> {
        let deadline = tokio::time::Instant::now() + self.shared.limits.handshake_timeout;
        let waiting = "did not log in within connect_timeout";
        let offered = SERVER_CAPABILITIES
            | if self.shared.tls.is_some() {
                capability::SSL
            } else {
                0
            };
        // Read on borrowed halves: what was read past the first packet goes on to TLS.
        let (first, pending) = {
            let (read, write) = stream.split();
            let mut reader = PacketReader::new(read);
            let mut writer = PacketWriter::new(write);
            writer.packet(&greeting(
                MYSQL_VERSION,
                self.id,
                &self.salt,
                UTF8MB4 as u8,
                offered,
                self.shared.access.root().plugin,
            ));
            writer.flush().await?;
            let first = match reader.next(PRE_AUTH_MAX_PACKET, deadline, waiting).await {
                Ok(Some(packet)) => packet,
                Ok(None) => return Ok(None),
                Err(e) => return refuse(&mut writer, e).await.map(|()| None),
            };
            (first, reader.into_pending())
        };
        let (mut reader, mut writer, packet, secure) = if tls::is_ssl_request(&first.payload) {
            let Some(acceptor) = self.shared.tls.clone() else {
                // Not offered: only a client that ignores the greeting gets here.
                let (_, write) = stream.into_split();
                let mut writer = PacketWriter::new(write);
                writer.reply_to(first.sequence);
                writer.packet(&error_payload(
                    error::NOT_SUPPORTED_YET,
                    "this server does not offer SSL; connect without it (--ssl-mode=DISABLED)",
                ));
                writer.flush().await?;
                return Ok(None);
            };
            let accepting = acceptor.accept(tls::Prefixed::new(pending, stream));
            let tls = match tokio::time::timeout_at(deadline, accepting).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    log::debug!("TLS handshake with {} failed: {e}", self.peer);
                    return Ok(None);
                }
                Err(_) => return Ok(None),
            };
            let (read, write) = tokio::io::split(tls);
            let mut reader: ClientReader = PacketReader::new(Box::new(read));
            let mut writer: ClientWriter = PacketWriter::new(Box::new(write));
            let packet = match reader.next(PRE_AUTH_MAX_PACKET, deadline, waiting).await {
                Ok(Some(packet)) => packet,
                Ok(None) => return Ok(None),
                Err(e) => return refuse(&mut writer, e).await.map(|()| None),
            };
            writer.reply_to(packet.sequence);
            (reader, writer, packet, true)
        } else {
            let (read, write) = stream.into_split();
            let reader: ClientReader = PacketReader::with_pending(Box::new(read), pending);
            let mut writer: ClientWriter = PacketWriter::new(Box::new(write));
            writer.reply_to(first.sequence);
            (reader, writer, first, false)
        };
        if !secure && self.shared.require_secure_transport && !self.peer.is_loopback() {
            writer.packet(&error_payload(
                SECURE_TRANSPORT_REQUIRED,
                "Connections using insecure transport are prohibited while \
                 --require_secure_transport=ON.",
            ));
            writer.flush().await?;
            return Ok(None);
        }
        let Ok(mut response) = parse_response(&packet.payload) else {
            let message = "Bad handshake";
            writer.packet(&error_payload(error::MALFORMED_PACKET, message));
            writer.flush().await?;
            return Ok(None);
        };
        self.capabilities = response.capabilities & offered & !capability::SSL;
        let user = String::from_utf8_lossy(&response.user).into_owned();
        let account = self.shared.access.account(&user, self.peer).await;
        // An unknown user goes through the server's default login, then is denied.
        let plugin = match &account {
            Some(account) => account.plugin,
            None => self.shared.access.root().plugin,
        };
        let answered = match response.plugin.as_deref() {
            Some(name) if response.capabilities & capability::PLUGIN_AUTH != 0 => name,
            _ => AuthPlugin::Native.name(),
        };
        if answered != plugin.name() {
            writer.packet(&auth_switch(plugin, &self.salt));
            writer.flush().await?;
            match reader.next(PRE_AUTH_MAX_PACKET, deadline, waiting).await {
                Ok(Some(Packet { sequence, payload })) => {
                    writer.reply_to(sequence);
                    response.auth = payload;
                }
                Ok(None) => return Ok(None),
                Err(e) => return refuse(&mut writer, e).await.map(|()| None),
            }
        }
        let proof = match plugin {
            AuthPlugin::Native => Some(Proof::NativeScramble(std::mem::take(&mut response.auth))),
            AuthPlugin::CachingSha2 => {
                let mut exchange = Exchange {
                    reader: &mut reader,
                    writer: &mut writer,
                    deadline,
                };
                match self
                    .caching_sha2(&mut exchange, &response, secure, account.as_deref())
                    .await
                {
                    Ok(proof) => proof,
                    Err(Refused::Gone) => return Ok(None),
                    Err(Refused::Read(e)) => return refuse(&mut writer, e).await.map(|()| None),
                    Err(Refused::Io(e)) => return Err(e),
                }
            }
        };
        let tried_password = !(response.auth.is_empty() || response.auth == [0]);
        if !self.authenticate(&user, account, proof).await {
            let message = format!(
                "Access denied for user '{}'@'{}' (using password: {})",
                String::from_utf8_lossy(&response.user),
                self.peer,
                if tried_password { "YES" } else { "NO" }
            );
            writer.packet(&error_payload(error::ACCESS_DENIED, &message));
            writer.flush().await?;
            return Ok(None);
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
                return Ok(None);
            }
        }
        // mysql-connector-python names an empty database in its handshake.
        if let Some(database) = response.database.filter(|d| !d.is_empty()) {
            let database = String::from_utf8_lossy(&database);
            if let Err(e) = self.session.use_database(&database).await {
                let (code, message) = super::results::mysql_error(&e);
                writer.packet(&error_payload(code, &message));
                writer.flush().await?;
                return Ok(None);
            }
        }
        writer.packet(&ok_packet(0, self.status()));
        writer.flush().await?;
        Ok(Some((reader, writer)))
    }

    /// `caching_sha2_password` after the client's scramble: the fast path if the account has
    /// the password's digest cached and the scramble matches it, else a full login, where the
    /// client sends the password itself inside TLS or encrypted to the server's RSA key (which
    /// it asks for first unless it has it). None: no proof a password could match.
    async fn caching_sha2(
        &self,
        exchange: &mut Exchange<'_>,
        response: &HandshakeResponse,
        secure: bool,
        account: Option<&Account>,
    ) -> Result<Option<Proof>, Refused> {
        // No password: nothing, or (Oracle's libmysqlclient) a lone NUL.
        if response.auth.is_empty() || response.auth == [0] {
            return Ok(Some(Proof::Password(Vec::new())));
        }
        if account.is_some_and(|a| fast_sha2(a, &self.salt, &response.auth)) {
            exchange.writer.packet(&sha2::FAST_AUTH_SUCCESS);
            return Ok(Some(Proof::FastAuthenticated));
        }
        if account.is_some_and(|a| a.sha2_digest().is_some()) {
            // The scramble could have been checked and did not match: a wrong password (or
            // user), denied now through the throttle, so guesses against the fast path are
            // slowed like any others.
            return Ok(None);
        }
        let mut answer = exchange.ask(&sha2::PERFORM_FULL_AUTHENTICATION).await?;
        if secure {
            // The password and a NUL, protected by TLS.
            answer.pop_if(|b| *b == 0);
            return Ok(Some(Proof::Password(answer)));
        }
        let key = match self.shared.rsa_key.pair().await {
            Ok(key) => key,
            Err(e) => {
                log::error!("caching_sha2_password without TLS needs the RSA key: {e}");
                return Ok(None);
            }
        };
        if answer == [sha2::REQUEST_PUBLIC_KEY] {
            let mut more = vec![sha2::AUTH_MORE_DATA];
            more.extend_from_slice(key.public_pem.as_bytes());
            answer = exchange.ask(&more).await?;
        }
        // Anything else (the password in clear on a plain connection) proves nothing.
        Ok(key
            .decrypt_password(&self.salt, &answer)
            .map(Proof::Password))
    }

    pub(super) async fn authenticate(
        &self,
        user: &str,
        account: Option<Arc<Account>>,
        proof: Option<Proof>,
    ) -> bool {
        let (checked, salt) = (account.clone(), self.salt);
        let ok = self
            .shared
            .access
            .throttle()
            .check(self.peer, move || {
                checked.is_some_and(|account| {
                    proof.is_some_and(|proof| verify(&account, &salt, &proof))
                })
            })
            .await;
        crate::metrics::login(ok);
        if let (true, Some(account)) = (ok, account) {
            let access = self.shared.access.clone();
            self.session
                .set_principal(Principal::logged_in(access, account, self.peer));
            self.killable.logged_in(user);
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

/// Why a login exchange ended early.
enum Refused {
    /// The client left, or did not answer in time.
    Gone,
    /// It sent a packet that cannot be read.
    Read(ReadError),
    Io(io::Error),
}

/// The login's side of the connection while it asks the client for more.
struct Exchange<'a> {
    reader: &'a mut ClientReader,
    writer: &'a mut ClientWriter,
    deadline: tokio::time::Instant,
}

impl Exchange<'_> {
    /// Sends `payload` and reads the client's answer.
    async fn ask(&mut self, payload: &[u8]) -> Result<Vec<u8>, Refused> {
        self.writer.packet(payload);
        self.writer.flush().await.map_err(Refused::Io)?;
        let waiting = "did not log in within connect_timeout";
        match self
            .reader
            .next(PRE_AUTH_MAX_PACKET, self.deadline, waiting)
            .await
        {
            Ok(Some(Packet { sequence, payload })) => {
                self.writer.reply_to(sequence);
                Ok(payload)
            }
            Ok(None) => Err(Refused::Gone),
            Err(e) => Err(Refused::Read(e)),
        }
    }
}
