//! What this process asks of object storage and finds in its caches, for Prometheus
//! (`sieve serve --metrics-port`): requests, errors and bytes by operation, counted where every
//! store's requests pass ([`crate::read::request_trace::TracedStore`]), process-wide as the
//! storage they reach is; and each cache's hits, misses and bytes, and the bytes background
//! merges spent, read from the storage when scraped.

use std::sync::LazyLock;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use crate::Storage;

/// An object-store operation, as its label: get, head, put, multipart, list, copy, delete.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByOperation {
    operation: &'static str,
}

#[derive(Default)]
struct StoreCounters {
    requests: Family<ByOperation, Counter>,
    errors: Family<ByOperation, Counter>,
    bytes: Family<ByOperation, Counter>,
}

static STORE: LazyLock<StoreCounters> = LazyLock::new(StoreCounters::default);

pub(crate) fn sent(operation: &'static str, requests: u64) {
    let label = ByOperation { operation };
    STORE.requests.get_or_create(&label).inc_by(requests);
}

pub(crate) fn failed(operation: &'static str) {
    STORE.errors.get_or_create(&ByOperation { operation }).inc();
}

/// Counts `requests` of `operation` sent, and one error if `result` failed.
pub(crate) fn answered<T, E>(
    operation: &'static str,
    requests: u64,
    result: Result<T, E>,
) -> Result<T, E> {
    sent(operation, requests);
    if result.is_err() {
        failed(operation);
    }
    result
}

/// Counts bytes read or written by `operation`.
pub(crate) fn transferred(operation: &'static str, bytes: u64) {
    STORE
        .bytes
        .get_or_create(&ByOperation { operation })
        .inc_by(bytes);
}

/// Registers the object-store counters and `storage`'s caches.
pub fn register(registry: &mut Registry, storage: &Storage) {
    let store = registry.sub_registry_with_prefix("object_store");
    store.register(
        "requests",
        "Object-store requests sent, by operation",
        STORE.requests.clone(),
    );
    store.register(
        "errors",
        "Object-store requests that failed, by operation",
        STORE.errors.clone(),
    );
    store.register_with_unit(
        "transferred",
        "Bytes read (get) and written (put, multipart) by object-store requests",
        Unit::Bytes,
        STORE.bytes.clone(),
    );
    registry.register_collector(Box::new(CacheCollector(storage.clone())));
}

#[derive(Debug)]
struct CacheCollector(Storage);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByCache {
    cache: &'static str,
}

/// A cache's figures at scrape time; bytes for the caches bounded in bytes.
struct CacheFigures {
    cache: &'static str,
    hits: u64,
    misses: u64,
    bytes: Option<u64>,
}

impl Collector for CacheCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let caches = self.0.caches();
        let figures = |cache, hits, misses, bytes| CacheFigures {
            cache,
            hits,
            misses,
            bytes,
        };
        let mut all = vec![
            figures(
                "sidecar",
                caches.sidecars.hits(),
                caches.sidecars.misses(),
                Some(caches.sidecars.weight()),
            ),
            figures(
                "locator_page",
                caches.locator_pages.hits(),
                caches.locator_pages.misses(),
                Some(caches.locator_pages.weight()),
            ),
            figures(
                "segment",
                caches.segments.hits(),
                caches.segments.misses(),
                None,
            ),
            figures(
                "block_list",
                caches.block_lists.hits(),
                caches.block_lists.misses(),
                None,
            ),
        ];
        if let Some(data) = &caches.data {
            all.push(figures(
                "data",
                data.hits(),
                data.misses(),
                Some(data.weight()),
            ));
        }
        if let Some(disk) = caches.disk.get() {
            let (hits, misses) = disk.hits_and_misses();
            all.push(figures("disk", hits, misses, Some(disk.bytes())));
        }
        for (name, help, count) in [
            (
                "cache_hits",
                "Cache lookups that found their entry",
                (|f| f.hits) as fn(&CacheFigures) -> u64,
            ),
            ("cache_misses", "Cache lookups that did not", |f| f.misses),
        ] {
            let kind = ConstCounter::new(0u64).metric_type();
            let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
            for f in &all {
                let label = ByCache { cache: f.cache };
                ConstCounter::new(count(f)).encode(metric.encode_family(&label)?)?;
            }
        }
        let kind = ConstGauge::new(0i64).metric_type();
        let help = "Bytes held by each cache bounded in bytes";
        let mut metric = encoder.encode_descriptor("cache", help, Some(&Unit::Bytes), kind)?;
        for f in &all {
            if let Some(bytes) = f.bytes {
                let label = ByCache { cache: f.cache };
                ConstGauge::new(bytes as i64).encode(metric.encode_family(&label)?)?;
            }
        }
        let spent = ConstCounter::new(self.0.merge_io_bytes());
        let help = "Bytes background locator merges and compactions read and wrote \
                    (merge_io_mib_per_s paces them)";
        let metric =
            encoder.encode_descriptor("merge_io", help, Some(&Unit::Bytes), spent.metric_type())?;
        spent.encode(metric)?;
        Ok(())
    }
}
