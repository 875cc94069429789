//! `GET /metrics` for Prometheus, on its own port (`--metrics-port`, `metrics_port`): the
//! engine's statements, object-store requests and caches, and the MySQL port's connections and
//! logins, in the OpenMetrics text format (`sieve_…_total`, `_seconds`, `_bytes`).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Listens on `address` and serves `registry` until the task is aborted.
pub async fn serve(
    address: SocketAddr,
    registry: Registry,
) -> Result<tokio::task::JoinHandle<()>, String> {
    let registry = Arc::new(registry);
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let registry = registry.clone();
            async move {
                let mut text = String::new();
                match encode(&mut text, &registry) {
                    Ok(()) => ([(CONTENT_TYPE, OPENMETRICS)], text).into_response(),
                    Err(e) => (
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        format!("encoding the metrics failed: {e}"),
                    )
                        .into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot serve metrics on {address}: {e}"))?;
    log::info!("serving Prometheus metrics on http://{address}/metrics");
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            log::error!("the metrics endpoint stopped: {e}");
        }
    }))
}
