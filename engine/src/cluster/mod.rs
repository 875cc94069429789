//! Scale-out: a coordinator's workers, which worker owns which blocks, the node filters that
//! decide whom a lookup contacts, how a scan travels to a worker, and how a point lookup
//! reaches its key's owner in one call.

pub(crate) mod attached_codec;
pub(crate) mod attached_scan;
pub(crate) mod bounded_analyze;
pub(crate) mod channels;
pub(crate) mod coordinator;
pub(crate) mod lookup_service;
pub(crate) mod lookup_stream;
pub(crate) mod lookup_wire;
pub(crate) mod node_filters;
pub(crate) mod placement;
pub(crate) mod remote_lookup;
pub(crate) mod scan_codec;
pub(crate) mod secret;
pub(crate) mod worker;
pub(crate) mod worker_tls;
