//! The server's small answers: OK, ERR and EOF packets, and the SQLSTATE of each error code.

use super::handshake::capability;
use super::wire::put_lenenc_int;

/// Status flags (SERVER_STATUS_*).
pub mod status {
    pub const IN_TRANS: u16 = 0x0001;
    pub const AUTOCOMMIT: u16 = 0x0002;
    pub const MORE_RESULTS_EXISTS: u16 = 0x0008;
}

/// MySQL error codes the server answers with.
pub mod error {
    pub const CON_COUNT: u16 = 1040;
    pub const DB_ACCESS_DENIED: u16 = 1044;
    pub const TABLE_ACCESS_DENIED: u16 = 1142;
    pub const NONEXISTING_GRANT: u16 = 1141;
    pub const SPECIFIC_ACCESS_DENIED: u16 = 1227;
    pub const CANNOT_USER: u16 = 1396;
    pub const CANT_CREATE_USER_WITH_GRANT: u16 = 1410;
    pub const ACCESS_DENIED: u16 = 1045;
    pub const UNKNOWN_COM: u16 = 1047;
    pub const BAD_DB: u16 = 1049;
    pub const DB_CREATE_EXISTS: u16 = 1007;
    pub const TABLE_EXISTS: u16 = 1050;
    pub const DUP_KEYNAME: u16 = 1061;
    pub const KEY_COLUMN_DOES_NOT_EXIST: u16 = 1072;
    pub const CANT_DROP_FIELD_OR_KEY: u16 = 1091;
    pub const PARSE: u16 = 1064;
    pub const EMPTY_QUERY: u16 = 1065;
    pub const NO_SUCH_THREAD: u16 = 1094;
    pub const KILL_DENIED: u16 = 1095;
    pub const NO_SUCH_TABLE: u16 = 1146;
    pub const NET_PACKET_TOO_LARGE: u16 = 1153;
    pub const OUT_OF_RESOURCES: u16 = 1041;
    pub const UNKNOWN: u16 = 1105;
    pub const UNKNOWN_SYSTEM_VARIABLE: u16 = 1193;
    pub const WARNING_NOT_COMPLETE_ROLLBACK: u16 = 1196;
    pub const WRONG_ARGUMENTS: u16 = 1210;
    pub const NOT_SUPPORTED_YET: u16 = 1235;
    pub const UNKNOWN_STMT_HANDLER: u16 = 1243;
    pub const INVALID_CHARACTER_STRING: u16 = 1300;
    pub const QUERY_INTERRUPTED: u16 = 1317;
    pub const DATA_OUT_OF_RANGE: u16 = 1690;
    pub const LOCAL_INFILE_DISABLED: u16 = 3948;
    pub const MALFORMED_PACKET: u16 = 1835;
}

/// The SQLSTATE MySQL gives with `code`.
fn sql_state(code: u16) -> &'static str {
    match code {
        error::CON_COUNT => "08004",
        error::ACCESS_DENIED => "28000",
        error::UNKNOWN_COM | error::NET_PACKET_TOO_LARGE => "08S01",
        error::BAD_DB
        | error::PARSE
        | error::EMPTY_QUERY
        | error::NOT_SUPPORTED_YET
        | error::LOCAL_INFILE_DISABLED
        | error::DB_ACCESS_DENIED
        | error::TABLE_ACCESS_DENIED
        | error::NONEXISTING_GRANT
        | error::SPECIFIC_ACCESS_DENIED
        | error::CANT_CREATE_USER_WITH_GRANT
        | error::DUP_KEYNAME
        | error::KEY_COLUMN_DOES_NOT_EXIST
        | error::CANT_DROP_FIELD_OR_KEY => "42000",
        error::TABLE_EXISTS => "42S01",
        error::NO_SUCH_TABLE => "42S02",
        error::QUERY_INTERRUPTED => "70100",
        error::DATA_OUT_OF_RANGE => "22003",
        _ => "HY000",
    }
}

pub fn ok_packet(affected_rows: u64, status: u16) -> Vec<u8> {
    let mut out = vec![0];
    put_lenenc_int(&mut out, affected_rows);
    put_lenenc_int(&mut out, 0); // last insert id: Sieve has no AUTO_INCREMENT
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&[0, 0]); // warnings
    out
}

/// An OK packet with a human-readable summary (mysql_info(): what the mysql client prints under
/// "Query OK", such as LOAD DATA's "Records: … Skipped: …"). Length-encoded, as MySQL and
/// MariaDB servers send it and their clients read it (the protocol's older text says "rest of
/// the packet"; libmariadb then reports a malformed packet).
pub fn ok_packet_with_info(affected_rows: u64, status: u16, info: &str) -> Vec<u8> {
    let mut out = ok_packet(affected_rows, status);
    put_lenenc_int(&mut out, info.len() as u64);
    out.extend_from_slice(info.as_bytes());
    out
}

/// The payload of an ERR packet.
pub fn error_payload(code: u16, message: &str) -> Vec<u8> {
    let mut out = vec![0xff];
    out.extend_from_slice(&code.to_le_bytes());
    out.push(b'#');
    out.extend_from_slice(sql_state(code).as_bytes());
    out.extend_from_slice(message.as_bytes());
    out
}

/// A whole ERR packet, for answers written outside a connection's writer.
pub fn error_packet(sequence: u8, code: u16, message: &str) -> Vec<u8> {
    let payload = error_payload(code, message);
    let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    out.push(sequence);
    out.extend_from_slice(&payload);
    out
}

/// What ends a result set (its rows, or a COM_FIELD_LIST): an OK packet with the EOF header for
/// clients that said CLIENT_DEPRECATE_EOF, the old EOF packet for the others.
pub fn end_of_rows(capabilities: u32, status: u16) -> Vec<u8> {
    if capabilities & capability::DEPRECATE_EOF != 0 {
        let mut out = ok_packet(0, status);
        out[0] = 0xfe;
        out
    } else {
        eof_packet(status)
    }
}

pub fn eof_packet(status: u16) -> Vec<u8> {
    let mut out = vec![0xfe, 0, 0];
    out.extend_from_slice(&status.to_le_bytes());
    out
}

/// COM_STATISTICS' answer: one line of text, in MySQL's words.
pub fn statistics(uptime_secs: u64, threads: usize, questions: u64) -> Vec<u8> {
    let per_second = questions as f64 / uptime_secs.max(1) as f64;
    let line = format!(
        "Uptime: {uptime_secs}  Threads: {threads}  Questions: {questions}  Slow queries: 0  \
         Opens: 0  Flush tables: 0  Open tables: 0  Queries per second avg: {per_second:.3}"
    );
    line.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_in_mysql_layout() {
        assert_eq!(ok_packet(3, status::AUTOCOMMIT), [0, 3, 0, 2, 0, 0, 0]);
        assert_eq!(
            end_of_rows(capability::DEPRECATE_EOF, status::MORE_RESULTS_EXISTS),
            [0xfe, 0, 0, 8, 0, 0, 0]
        );
        assert_eq!(end_of_rows(0, status::AUTOCOMMIT), [0xfe, 0, 0, 2, 0]);
        assert_eq!(error_payload(1146, "no")[..9], *b"\xff\x7a\x04#42S02");
    }
}
