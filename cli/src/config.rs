//! `--config sieve.toml`: settings a deployment keeps in a file rather than on the command line.
//! Flags and environment variables override it; it overrides the built-in defaults.
//!
//! ```toml
//! storage = "s3://bucket/sieve"
//! host = "0.0.0.0"
//! port = 3307
//! user = "root"
//! password = "change-me"
//! ```

use std::net::IpAddr;
use std::path::Path;

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub storage: Option<String>,
    pub host: Option<IpAddr>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl ConfigFile {
    pub fn load(path: Option<&Path>) -> Result<Self, String> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_unknown_keys() {
        let config: ConfigFile = toml::from_str("port = 4000\npassword = 'x'").unwrap();
        assert_eq!(
            (config.port, config.password.as_deref()),
            (Some(4000), Some("x"))
        );
        assert!(toml::from_str::<ConfigFile>("colour = 'red'").is_err());
    }
}
