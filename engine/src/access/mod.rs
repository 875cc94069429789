//! Who may log in and what they may do: accounts (the configured root and the users made with
//! CREATE USER, stored in the catalog), their password hashes, the privileges granted to them,
//! the session's principal the places that touch tables check, and the throttle every port's
//! password checks go through.

pub mod accounts;
pub mod login_throttle;
pub mod password;
pub mod principal;
pub mod privileges;
pub mod redact;
pub mod user_statements;
