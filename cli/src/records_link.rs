//! The API's records stream on the bus: `ingest::records` seen through the API's
//! `api::records::RecordStream`, so neither crate depends on the other.

use api::record_keys::RecordKeys;
use api::records::{Delivery, RecordLink, RecordStream, StreamState, DELIVERIES_MAX};
use futures::future::BoxFuture;
use ingest::records::RecordsBus;
use std::sync::Arc;

/// The bus's records stream, as the API calls it.
struct Link(RecordsBus);

impl RecordStream for Link {
    fn publish(
        &self,
        subject: String,
        id: String,
        bytes: Vec<u8>,
        signature: Option<String>,
    ) -> BoxFuture<'_, Result<u64, String>> {
        Box::pin(async move {
            self.0
                .publish(subject, &id, bytes, signature)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn state(&self) -> BoxFuture<'_, Result<StreamState, String>> {
        Box::pin(async move {
            let (last_seq, created_ns) = self.0.state().await.map_err(|e| e.to_string())?;
            Ok(StreamState {
                last_seq,
                created_ns,
            })
        })
    }

    fn follow(&self, from_seq: u64, created_ns: i64) -> tokio::sync::mpsc::Receiver<Delivery> {
        let (tx, rx) = tokio::sync::mpsc::channel(DELIVERIES_MAX);
        let bus = self.0.clone();
        tokio::spawn(async move {
            let make = |stream_seq, bytes, signature| Delivery {
                stream_seq,
                bytes,
                signature,
            };
            bus.follow(from_seq, created_ns, tx, make).await;
        });
        rx
    }
}

/// Connects to the records stream (created or checked, `replicas` replicas) for node
/// `node`, signing and checking records with `keys`.
pub async fn connect(
    url: &str,
    access: &bus::Access,
    replicas: usize,
    node: Option<String>,
    keys: RecordKeys,
) -> anyhow::Result<RecordLink> {
    let bus = RecordsBus::connect(url, access, replicas).await?;
    Ok(RecordLink {
        stream: Arc::new(Link(bus)),
        node,
        keys,
    })
}
