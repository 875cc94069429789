//! Who may log in and what they may do: accounts (the configured root and the users made with
//! CREATE USER, stored in the catalog), their password hashes, the privileges granted to them,
//! and the session's principal the places that touch tables check.

pub mod accounts;
pub mod password;
pub mod principal;
pub mod privileges;
pub mod redact;
pub mod user_statements;
