//! A MySQL client at the packet level, for what real drivers never do on purpose: pipelining,
//! oversized or malformed packets, silence.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use rsa::pkcs8::DecodePublicKey;
use rsa::sha2::{Digest, Sha256};
use sha1::Sha1;

pub struct Wire {
    pub stream: TcpStream,
    /// How the server ended the last `caching_sha2_password` login's scramble: 3 for the fast
    /// path, 4 for a full login.
    pub sha2_reply: Option<u8>,
}

/// A packet's sequence number and payload.
pub type Packet = (u8, Vec<u8>);

pub fn packet(sequence: u8, payload: &[u8]) -> Vec<u8> {
    let mut bytes = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    bytes.push(sequence);
    bytes.extend_from_slice(payload);
    bytes
}

/// A command packet (sequence 0): `command` byte then `body`.
pub fn command(command: u8, body: &[u8]) -> Vec<u8> {
    let mut payload = vec![command];
    payload.extend_from_slice(body);
    packet(0, &payload)
}

pub const COM_INIT_DB: u8 = 0x02;
pub const COM_QUERY: u8 = 0x03;
pub const COM_PING: u8 = 0x0e;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;
pub const COM_STMT_CLOSE: u8 = 0x19;

/// COM_STMT_EXECUTE of statement `id` with one BIGINT parameter.
pub fn execute_with_bigint(id: u32, value: i64) -> Vec<u8> {
    let mut body = id.to_le_bytes().to_vec();
    body.push(0); // no cursor
    body.extend_from_slice(&1u32.to_le_bytes()); // iterations
    body.push(0); // null bitmap: not NULL
    body.push(1); // types follow
    body.extend_from_slice(&[0x08, 0x00]); // MYSQL_TYPE_LONGLONG, signed
    body.extend_from_slice(&value.to_le_bytes());
    command(COM_STMT_EXECUTE, &body)
}

fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut hasher = Sha1::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

impl Wire {
    pub fn connect(port: u16) -> Self {
        Self::connect_to("127.0.0.1", port)
    }

    pub fn connect_to(host: &str, port: u16) -> Self {
        let stream = TcpStream::connect((host, port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Self {
            stream,
            sha2_reply: None,
        }
    }

    /// The next packet; None when the server closed the connection.
    pub fn read(&mut self) -> Option<Packet> {
        let mut header = [0u8; 4];
        self.stream.read_exact(&mut header).ok()?;
        let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let mut payload = vec![0; length];
        self.stream.read_exact(&mut payload).ok()?;
        Some((header[3], payload))
    }

    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// The greeting's 20-byte salt.
    pub fn greeting(&mut self) -> Vec<u8> {
        let (_, payload) = self.read().expect("a greeting");
        assert_eq!(payload[0], 10, "protocol version 10");
        let version_end = payload[1..].iter().position(|&b| b == 0).unwrap() + 1;
        let part1 = &payload[version_end + 5..version_end + 13];
        // filler 1, capabilities 2, charset 1, status 2, capabilities 2, salt length 1, reserved 10
        let part2 = &payload[version_end + 13 + 19..version_end + 13 + 19 + 12];
        [part1, part2].concat()
    }

    /// Logs in as `user` with `password`, answering first for `mysql_native_password` as older
    /// clients do and following the server's switch to `caching_sha2_password` (fast, or full
    /// with the password encrypted to the key the server sends); the server's last reply.
    pub fn login(&mut self, user: &str, password: &str) -> Packet {
        let salt = self.greeting();
        let scramble: Vec<u8> = if password.is_empty() {
            Vec::new()
        } else {
            let stage1 = sha1(&[password.as_bytes()]);
            xor(&stage1, &sha1(&[&salt, &sha1(&[&stage1])]))
        };
        // CLIENT_LONG_PASSWORD | LOCAL_FILES | PROTOCOL_41 | TRANSACTIONS | SECURE_CONNECTION |
        // PLUGIN_AUTH
        let capabilities: u32 = 0x1 | 0x80 | 0x200 | 0x2000 | 0x8000 | 0x80000;
        let mut payload = capabilities.to_le_bytes().to_vec();
        payload.extend_from_slice(&(16u32 << 20).to_le_bytes());
        payload.push(33);
        payload.extend_from_slice(&[0; 23]);
        payload.extend_from_slice(user.as_bytes());
        payload.push(0);
        payload.push(scramble.len() as u8);
        payload.extend_from_slice(&scramble);
        payload.extend_from_slice(b"mysql_native_password\0");
        self.send(&packet(1, &payload)).unwrap();
        let (sequence, reply) = self.read().expect("a reply to the login");
        if reply.first() != Some(&0xfe) || !reply.starts_with(b"\xfecaching_sha2_password\0") {
            return (sequence, reply);
        }
        let stage1 = sha256(&[password.as_bytes()]);
        let scramble = if password.is_empty() {
            Vec::new()
        } else {
            xor(&stage1, &sha256(&[&sha256(&[&stage1]), &salt]))
        };
        self.send(&packet(sequence + 1, &scramble)).unwrap();
        let (sequence, reply) = self.read().expect("a reply to the scramble");
        self.sha2_reply = (reply.len() == 2 && reply[0] == 1).then(|| reply[1]);
        match reply.as_slice() {
            [1, 3] => self.read().expect("OK after the fast path"),
            [1, 4] => {
                self.send(&packet(sequence + 1, &[2])).unwrap();
                let (sequence, key) = self.read().expect("the server's public key");
                let pem = std::str::from_utf8(&key[1..]).expect("a PEM key");
                let key = rsa::PublicKey::from_public_key_pem(pem).expect("an RSA public key");
                let message = xor(
                    &[password.as_bytes(), &[0]].concat(),
                    &salt
                        .iter()
                        .cycle()
                        .take(password.len() + 1)
                        .copied()
                        .collect::<Vec<_>>(),
                );
                let sealed = key.oaep_encrypt::<Sha1>(&message).unwrap();
                self.send(&packet(sequence + 1, &sealed)).unwrap();
                self.read().expect("a reply to the password")
            }
            _ => (sequence, reply),
        }
    }

    /// Reads one complete reply to a command: an OK or ERR packet, or a text result set (up to
    /// its closing EOF); returns its packets.
    pub fn reply(&mut self) -> Vec<Packet> {
        let first = self.read().expect("a reply");
        if matches!(first.1.first(), Some(0x00 | 0xff)) {
            return vec![first];
        }
        let mut packets = vec![first];
        let mut eofs = 0;
        while eofs < 2 {
            let next = self.read().expect("more of the result set");
            if next.1.first() == Some(&0xfe) && next.1.len() < 9 {
                eofs += 1;
            }
            if next.1.first() == Some(&0xff) {
                packets.push(next);
                break;
            }
            packets.push(next);
        }
        packets
    }
}

impl Wire {
    /// Reads the reply to COM_STMT_PREPARE: the statement's id and parameter count, after its
    /// parameter and column definitions. Panics on an error.
    pub fn prepare_ok(&mut self) -> (u32, u16) {
        let (_, ok) = self.read().expect("a reply to PREPARE");
        assert_eq!(
            ok[0],
            0x00,
            "PREPARE failed: {}",
            String::from_utf8_lossy(&ok)
        );
        let id = u32::from_le_bytes(ok[1..5].try_into().unwrap());
        let columns = u16::from_le_bytes([ok[5], ok[6]]);
        let params = u16::from_le_bytes([ok[7], ok[8]]);
        for count in [params, columns] {
            if count > 0 {
                for _ in 0..=count {
                    self.read().expect("a definition or its EOF");
                }
            }
        }
        (id, params)
    }

    /// The single BIGINT of a one-row, one-column binary result set.
    pub fn binary_bigint(&mut self) -> i64 {
        let packets = self.reply();
        assert_eq!(packets[0].1, [1], "one column: {packets:?}");
        // Column count, its definition, EOF, the row, EOF.
        assert_eq!(packets.len(), 5, "{packets:?}");
        let row = &packets[3].1;
        assert_eq!(row[..2], [0x00, 0x00], "a binary row with no NULL");
        i64::from_le_bytes(row[2..10].try_into().unwrap())
    }
}

/// An ERR packet's error code.
pub fn error_code(payload: &[u8]) -> Option<u16> {
    (payload.first() == Some(&0xff)).then(|| u16::from_le_bytes([payload[1], payload[2]]))
}
