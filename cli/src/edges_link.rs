//! The pricer's shared bucket on the bus: `ingest::edges` seen through the API's
//! `api::pricer::EdgeShare`, so neither crate depends on the other.

use api::pricer::{EdgeLink, EdgeShare};
use futures::future::BoxFuture;
use ingest::edges::EdgeBus;
use std::sync::Arc;

/// The bus's edges bucket and pricer lease, as the API's pricer calls them.
struct Link(EdgeBus);

impl EdgeShare for Link {
    fn holds(&self) -> BoxFuture<'_, bool> {
        Box::pin(self.0.holds())
    }

    fn put(&self, name: String, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move { self.0.put(&name, &bytes).await })
    }

    fn take(&self, name: String) -> BoxFuture<'_, Result<Option<Vec<u8>>, String>> {
        Box::pin(async move { self.0.take(&name).await })
    }

    fn release(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.release())
    }
}

/// Opens the edges bucket and the pricer lease of `node` (`ttl`, `replicas`).
pub async fn connect(
    url: &str,
    access: &bus::Access,
    node: &str,
    ttl: std::time::Duration,
    replicas: usize,
) -> anyhow::Result<EdgeLink> {
    let bus = EdgeBus::connect(url, access, node, ttl, replicas).await?;
    Ok(EdgeLink(Arc::new(Link(bus))))
}
