//! The MySQL port for Prometheus (`sieve serve --metrics-port`): logins by outcome, counted as
//! they end, and the connections open and still logging in, read when scraped.

use std::sync::{Arc, LazyLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::connection::Shared;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByOutcome {
    outcome: &'static str,
}

static LOGINS: LazyLock<Family<ByOutcome, Counter>> = LazyLock::new(Family::default);

/// Counts a login that ended: "ok", or "denied" (a wrong password or user).
pub(crate) fn login(ok: bool) {
    let outcome = if ok { "ok" } else { "denied" };
    LOGINS.get_or_create(&ByOutcome { outcome }).inc();
}

pub fn register(registry: &mut Registry, shared: Arc<Shared>) {
    registry.register(
        "mysql_logins",
        "Logins on the MySQL port, by outcome (ok, denied)",
        LOGINS.clone(),
    );
    registry.register_collector(Box::new(ConnectionCollector(shared)));
}

struct ConnectionCollector(Arc<Shared>);

impl std::fmt::Debug for ConnectionCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectionCollector")
    }
}

impl Collector for ConnectionCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, help, count) in [
            (
                "mysql_connections",
                "Connections open on the MySQL port, logging in or logged in",
                self.0.connections.count(),
            ),
            (
                "mysql_pending_logins",
                "Connections still logging in (max_pending_logins bounds them)",
                self.0.pending.count(),
            ),
        ] {
            let gauge = ConstGauge::new(count as i64);
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}
