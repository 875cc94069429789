//! Scale-out: a coordinator's workers, which worker owns which blocks, the node filters that
//! decide whom a lookup contacts, and how a scan travels to a worker.

pub(crate) mod channels;
pub(crate) mod coordinator;
pub(crate) mod node_filters;
pub(crate) mod placement;
pub(crate) mod scan_codec;
pub(crate) mod secret;
pub(crate) mod worker;
pub(crate) mod worker_tls;
