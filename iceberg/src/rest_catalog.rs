//! Iceberg's REST catalog (the spec: apache/iceberg `open-api/rest-catalog-open-api.yaml`), the
//! catalog Polaris, Unity Catalog, Lakekeeper, Gravitino, Nessie, AWS Glue and S3 Tables serve.
//! Sieve asks it three questions, as it asks the SQL catalog: the namespaces, a namespace's
//! tables, and a table's current metadata file (with the keys it vends for the table's files:
//! vended.rs). It writes nothing.
//!
//! The first question fetches the catalog's configuration (`GET /v1/config`), which may give a
//! path `prefix` (Polaris: the catalog's name) and another base `uri`; every later path goes
//! under them. A `token` is sent as a bearer token; a `credential` (`client_id:client_secret`)
//! is exchanged for one by OAuth2's client-credentials grant at `/v1/oauth/tokens`, again when
//! it expires or the catalog answers 401.
//!
//! Why by hand rather than a client crate: iceberg-rust's `iceberg-catalog-rest` depends on
//! the `iceberg` crate, which is built on arrow 58 (docs/research/iceberg.md); these three
//! reads are a few JSON documents over reqwest, which object_store already builds.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::sync::{Mutex, OnceCell};
use url::Url;

use crate::error::{IcebergError, Result};
use crate::vended::{self, StorageCredential, Vended};

/// How long connecting to the catalog may take, and a whole request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// A token this close to its expiry is renewed before use.
const TOKEN_MARGIN: Duration = Duration::from_secs(60);

/// How Sieve proves who it is to the catalog.
#[derive(Debug)]
pub enum RestAuth {
    None,
    /// A bearer token, sent as is.
    Token(String),
    /// OAuth2 client credentials, exchanged for a bearer token.
    Credential {
        client_id: String,
        client_secret: String,
        scope: String,
    },
}

#[derive(Debug)]
pub struct RestCatalog {
    /// Sieve's name for the catalog, for errors.
    name: String,
    uri: Url,
    /// The warehouse asked for in `GET /v1/config` (Polaris's catalog, Lakekeeper's warehouse).
    warehouse: Option<String>,
    auth: RestAuth,
    client: reqwest::Client,
    /// Where the catalog's routes are, from its configuration: fetched on the first question.
    routes: OnceCell<Url>,
    /// The bearer token a credential was exchanged for, and when it expires.
    token: Mutex<Option<(String, Option<Instant>)>>,
}

/// `GET /v1/config`: the client's properties, the server's overrides winning over its defaults.
#[derive(Deserialize)]
struct ConfigResponse {
    #[serde(default)]
    defaults: HashMap<String, String>,
    #[serde(default)]
    overrides: HashMap<String, String>,
}

/// A namespace named with its levels joined by dots, as the REST spec puts it in a path segment
/// or `parent`: the levels joined by 0x1F.
fn levels_segment(namespace: &str) -> String {
    namespace.replace('.', "\u{1f}")
}

#[derive(Deserialize)]
struct NamespacesPage {
    namespaces: Vec<Vec<String>>,
    #[serde(rename = "next-page-token")]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct TablesPage {
    identifiers: Vec<TableIdentifier>,
    #[serde(rename = "next-page-token")]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct TableIdentifier {
    name: String,
}

#[derive(Deserialize)]
struct LoadTableResponse {
    #[serde(rename = "metadata-location")]
    metadata_location: Option<String>,
    #[serde(default)]
    metadata: TableLocation,
    /// The table's properties for its client: vended keys among them.
    #[serde(default)]
    config: HashMap<String, String>,
    #[serde(default, rename = "storage-credentials")]
    storage_credentials: Vec<StorageCredential>,
}

/// Of the table's metadata, only where its files are.
#[derive(Default, Deserialize)]
struct TableLocation {
    location: Option<String>,
}

/// A table as the catalog answers its load.
pub struct LoadedTable {
    pub metadata_location: String,
    /// The S3 keys the catalog vends for the table's files, if it vends any.
    pub vended: Vec<Vended>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    expires_in: Option<u64>,
}

/// The spec's error model: `{"error": {"message", "type", "code"}}`.
#[derive(Deserialize)]
struct ErrorResponse {
    error: ErrorModel,
}

#[derive(Deserialize)]
struct ErrorModel {
    message: String,
    #[serde(rename = "type")]
    kind: String,
}

impl RestCatalog {
    pub fn new(name: &str, uri: &str, warehouse: Option<String>, auth: RestAuth) -> Result<Self> {
        let invalid = |why: String| IcebergError::Catalog {
            catalog: name.to_string(),
            why,
        };
        let uri = Url::parse(uri.trim_end_matches('/'))
            .map_err(|e| invalid(format!("uri {uri:?}: {e}")))?;
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("sieve/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| invalid(format!("cannot make an HTTP client: {e}")))?;
        Ok(Self {
            name: name.to_string(),
            uri,
            warehouse,
            auth,
            client,
            routes: OnceCell::new(),
            token: Mutex::new(None),
        })
    }

    /// Where `namespace.table`'s metadata file is now, and the keys vended for its files;
    /// None if the catalog has no such table.
    pub async fn load_table(&self, namespace: &str, table: &str) -> Result<Option<LoadedTable>> {
        let mut url = self
            .route(&["namespaces", &levels_segment(namespace), "tables", table])
            .await?;
        // Only the metadata file's name is used: leave the snapshots out of the answer.
        url.query_pairs_mut().append_pair("snapshots", "refs");
        // Polaris, Unity Catalog and Lakekeeper vend keys only when asked to.
        let delegation = ("X-Iceberg-Access-Delegation", "vended-credentials");
        let Some(loaded) = self
            .get_with::<LoadTableResponse>(url, &[delegation])
            .await?
        else {
            return Ok(None);
        };
        let vended = vended::from_load_table(
            loaded.metadata.location.as_deref(),
            &loaded.config,
            &loaded.storage_credentials,
        );
        let metadata_location = loaded.metadata_location.ok_or_else(|| {
            self.failed(format!(
                "table {namespace}.{table} has no metadata-location (a staged table)"
            ))
        })?;
        Ok(Some(LoadedTable {
            metadata_location,
            vended,
        }))
    }

    /// Every namespace, nested ones too, its levels joined by dots (`catalog.a.b.table`, or
    /// the database `catalog.a.b`): each namespace's children are listed by `?parent=`. A child
    /// is taken only if it is one level below its parent, so a server that ignores `parent`
    /// (and lists the top level again) adds nothing.
    pub async fn namespaces(&self) -> Result<Vec<String>> {
        let mut all = Vec::new();
        let mut parents: Vec<Option<String>> = vec![None];
        while let Some(parent) = parents.pop() {
            let mut url = self.route(&["namespaces"]).await?;
            if let Some(parent) = &parent {
                url.query_pairs_mut()
                    .append_pair("parent", &levels_segment(parent));
            }
            let depth = parent.as_ref().map_or(0, |p| p.split('.').count());
            let children = self
                .listed(url, |page: NamespacesPage| {
                    let names = (page.namespaces.into_iter())
                        .filter(|levels| levels.len() == depth + 1)
                        .map(|levels| levels.join("."));
                    (names.collect(), page.next_page_token)
                })
                .await?;
            for child in children {
                let below = match &parent {
                    Some(parent) => child.starts_with(&format!("{parent}.")),
                    None => true,
                };
                if below && !all.contains(&child) {
                    parents.push(Some(child.clone()));
                    all.push(child);
                }
            }
        }
        all.sort();
        Ok(all)
    }

    /// The tables of `namespace`, by name; none for a namespace the catalog does not have.
    pub async fn tables(&self, namespace: &str) -> Result<Vec<String>> {
        let base = (self.route(&["namespaces", &levels_segment(namespace), "tables"])).await?;
        self.listed(base, |page: TablesPage| {
            let names = page.identifiers.into_iter().map(|t| t.name);
            (names.collect(), page.next_page_token)
        })
        .await
    }

    /// Every name a paged listing at `base` gives, sorted: `names` takes a page's names and
    /// its `next-page-token`, followed until there is none. None at all for a 404.
    async fn listed<P: serde::de::DeserializeOwned>(
        &self,
        base: Url,
        names: impl Fn(P) -> (Vec<String>, Option<String>),
    ) -> Result<Vec<String>> {
        let mut all = Vec::new();
        let mut page_token: Option<String> = None;
        loop {
            let mut url = base.clone();
            if let Some(token) = &page_token {
                url.query_pairs_mut().append_pair("pageToken", token);
            }
            let Some(page) = self.get::<P>(url).await? else {
                break;
            };
            let (these, next) = names(page);
            all.extend(these);
            match next {
                Some(next) if !next.is_empty() => page_token = Some(next),
                _ => break,
            }
        }
        all.sort();
        Ok(all)
    }

    /// The URL of a route under `/v1/{prefix}/`, each segment percent-encoded as one path
    /// segment.
    async fn route(&self, segments: &[&str]) -> Result<Url> {
        let mut url = self.routes().await?.clone();
        url.path_segments_mut()
            .map_err(|_| self.failed(format!("uri {} cannot be a base", self.uri)))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    /// `{uri}/v1/{prefix}`, as the catalog's configuration gives them.
    async fn routes(&self) -> Result<&Url> {
        self.routes
            .get_or_try_init(|| async {
                let mut url = self.v1(&self.uri)?;
                url.path_segments_mut()
                    .map_err(|_| self.failed(format!("uri {} cannot be a base", self.uri)))?
                    .push("config");
                if let Some(warehouse) = &self.warehouse {
                    url.query_pairs_mut().append_pair("warehouse", warehouse);
                }
                let config = self.get::<ConfigResponse>(url).await?.ok_or_else(|| {
                    self.failed(format!(
                        "{} has no /v1/config: is it an Iceberg REST catalog?",
                        self.uri
                    ))
                })?;
                let mut properties = config.defaults;
                properties.extend(config.overrides);
                let base = match properties.get("uri") {
                    Some(uri) => Url::parse(uri.trim_end_matches('/')).map_err(|e| {
                        self.failed(format!(
                            "the catalog's configuration gives uri {uri:?}: {e}"
                        ))
                    })?,
                    None => self.uri.clone(),
                };
                let mut routes = self.v1(&base)?;
                if let Some(prefix) = properties.get("prefix").filter(|p| !p.is_empty()) {
                    routes
                        .path_segments_mut()
                        .map_err(|_| self.failed(format!("uri {base} cannot be a base")))?
                        .extend(prefix.split('/').filter(|s| !s.is_empty()));
                }
                Ok(routes)
            })
            .await
    }

    fn v1(&self, base: &Url) -> Result<Url> {
        let mut url = base.clone();
        url.path_segments_mut()
            .map_err(|_| self.failed(format!("uri {base} cannot be a base")))?
            .pop_if_empty()
            .push("v1");
        Ok(url)
    }

    /// GETs `url` as JSON; None when the catalog answers 404 (no such namespace or table).
    /// A 401 renews a credential's token and asks once more.
    async fn get<T: serde::de::DeserializeOwned>(&self, url: Url) -> Result<Option<T>> {
        self.get_with(url, &[]).await
    }

    /// [`Self::get`] with `headers` added.
    async fn get_with<T: serde::de::DeserializeOwned>(
        &self,
        url: Url,
        headers: &[(&str, &str)],
    ) -> Result<Option<T>> {
        let mut renewed = false;
        loop {
            let mut request = self.client.get(url.clone());
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            if let Some(token) = self.bearer(renewed).await? {
                request = request.bearer_auth(token);
            }
            let (status, body) = self.exchange(&format!("GET {url}"), request).await?;
            if status == reqwest::StatusCode::UNAUTHORIZED
                && !renewed
                && matches!(self.auth, RestAuth::Credential { .. })
            {
                renewed = true;
                continue;
            }
            if status == reqwest::StatusCode::NOT_FOUND {
                return Ok(None);
            }
            if !status.is_success() {
                return Err(self.failed(format!("GET {url}: {}", refusal(status, &body))));
            }
            return serde_json::from_slice(&body)
                .map(Some)
                .map_err(|e| self.failed(format!("GET {url}: unexpected answer: {e}")));
        }
    }

    /// The bearer token to send, if any: a credential's is fetched when there is none, it is
    /// about to expire, or `renew` (the catalog refused the last one).
    async fn bearer(&self, renew: bool) -> Result<Option<String>> {
        let (client_id, client_secret, scope) = match &self.auth {
            RestAuth::None => return Ok(None),
            RestAuth::Token(token) => return Ok(Some(token.clone())),
            RestAuth::Credential {
                client_id,
                client_secret,
                scope,
            } => (client_id, client_secret, scope),
        };
        let mut kept = self.token.lock().await;
        if let Some((token, expires)) = kept.as_ref()
            && !renew
            && expires.is_none_or(|at| Instant::now() + TOKEN_MARGIN < at)
        {
            return Ok(Some(token.clone()));
        }
        let mut url = self.v1(&self.uri)?;
        url.path_segments_mut()
            .map_err(|_| self.failed(format!("uri {} cannot be a base", self.uri)))?
            .extend(["oauth", "tokens"]);
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", client_secret.as_str()),
            ("scope", scope.as_str()),
        ];
        let request = self.client.post(url.clone()).form(&form);
        let (status, body) = self.exchange(&format!("POST {url}"), request).await?;
        if !status.is_success() {
            return Err(self.failed(format!(
                "the credential was refused: POST {url}: {}",
                refusal(status, &body)
            )));
        }
        let token: TokenResponse = serde_json::from_slice(&body)
            .map_err(|e| self.failed(format!("POST {url}: unexpected answer: {e}")))?;
        let expires = token
            .expires_in
            .map(|s| Instant::now() + Duration::from_secs(s));
        *kept = Some((token.access_token.clone(), expires));
        Ok(Some(token.access_token))
    }

    /// Sends `request` (`what` in errors: its method and URL); the status and body.
    async fn exchange(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<(reqwest::StatusCode, bytes::Bytes)> {
        let failed = |e: reqwest::Error| self.failed(format!("{what}: {}", describe(&e)));
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        Ok((status, response.bytes().await.map_err(failed)?))
    }

    fn failed(&self, why: String) -> IcebergError {
        IcebergError::Catalog {
            catalog: self.name.clone(),
            why,
        }
    }
}

/// A refusal as the catalog words it (the spec's error model), else its status and body.
fn refusal(status: reqwest::StatusCode, body: &[u8]) -> String {
    match serde_json::from_slice::<ErrorResponse>(body) {
        Ok(e) => format!("{status} {}: {}", e.error.kind, e.error.message),
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            match text.char_indices().nth(200) {
                Some((end, _)) => format!("{status}: {}…", &text[..end]),
                None if text.is_empty() => status.to_string(),
                None => format!("{status}: {text}"),
            }
        }
    }
}

/// reqwest's error with its causes: "error sending request" alone does not say why.
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
