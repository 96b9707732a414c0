//! The records stream on the bus (`schemas::records`): the API's case entries and counts,
//! one order for every ledger node. `serve` hands it to the API (`api::records`), which
//! decides what a record means; this module only stores and delivers bytes.
//!
//! It lives in ingest beside the events stream: the same connection rules (`bus`), the
//! same stream set-up (`pipeline::ensure_configured`, R<n> on a cluster), and the API
//! stays free of NATS.
//!
//! Invariants: the stream has no age, size or count limit (records are kept as long as
//! the ledger; a stream with one is refused) and discards nothing new past a limit an
//! operator adds; a publish is answered only once JetStream stored it; delivery is in
//! stream order from a stated seq, again after any failure, never skipping one.

use crate::{pipeline, Error};
use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use schemas::records::{RECORDS_STREAM, RECORDS_WILDCARD, RECORD_LEN_MAX};
use std::time::Duration;
use tokio::sync::mpsc::Sender;

/// Pause before the follower tries again after the bus failed it.
pub const FOLLOW_RETRY: Duration = Duration::from_secs(1);

/// The records stream's configuration: file storage, no limits, discard new.
pub fn stream_config() -> stream::Config {
    stream::Config {
        name: RECORDS_STREAM.to_string(),
        subjects: vec![RECORDS_WILDCARD.to_string()],
        storage: stream::StorageType::File,
        retention: stream::RetentionPolicy::Limits,
        discard: stream::DiscardPolicy::New,
        duplicate_window: crate::DUPLICATE_WINDOW,
        max_message_size: RECORD_LEN_MAX as i32,
        ..Default::default()
    }
}

/// The records stream of one bus connection.
#[derive(Clone)]
pub struct RecordsBus {
    js: jetstream::Context,
}

impl RecordsBus {
    /// Connects as `access` and creates or checks the stream with `replicas` replicas.
    pub async fn connect(url: &str, access: &bus::Access, replicas: usize) -> Result<Self, Error> {
        let js = jetstream::new(bus::connect(url, access).await?);
        // Tried again while a server is down or a leader is elected, as ingest's set-up.
        let have = pipeline::retrying("setting up the records stream", || async {
            let mut s = pipeline::ensure_configured(&js, stream_config(), replicas).await?;
            let info = s
                .info()
                .await
                .map_err(|e| Error::nats("records stream info", e))?;
            Ok(info.config.clone())
        })
        .await?;
        let limited = have.max_age != Duration::ZERO || have.max_bytes > 0 || have.max_messages > 0;
        if limited {
            return Err(Error::StreamMismatch {
                stream: RECORDS_STREAM.to_string(),
                why: format!(
                    "it has a limit (max_age {:?}, max_bytes {}, max_msgs {}): records are kept as long as the ledger",
                    have.max_age, have.max_bytes, have.max_messages
                ),
            });
        }
        Ok(RecordsBus { js })
    }

    /// Publishes `bytes` on `subject` under de-duplication id `id`; the stream seq once
    /// JetStream stored it (a repeat within the window answers the first's seq).
    pub async fn publish(&self, subject: String, id: &str, bytes: Vec<u8>) -> Result<u64, Error> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", id);
        let ack = self
            .js
            .publish_with_headers(subject, headers, bytes.into())
            .await
            .map_err(|e| Error::nats("publish a record", e))?
            .await
            .map_err(|e| Error::nats("store a record", e))?;
        Ok(ack.sequence)
    }

    /// The stream's last seq (0 when empty).
    pub async fn last_seq(&self) -> Result<u64, Error> {
        let mut s = self
            .js
            .get_stream(RECORDS_STREAM)
            .await
            .map_err(|e| Error::nats("records stream", e))?;
        let info = s
            .info()
            .await
            .map_err(|e| Error::nats("records stream info", e))?;
        Ok(info.state.last_sequence)
    }

    /// Sends every record from `from_seq` on to `to` as `make(stream seq, bytes)`, in
    /// stream order, until its receiver is dropped. A failure of the bus is logged and the
    /// reading starts again at the first seq not yet sent.
    pub async fn follow<T: Send>(&self, from_seq: u64, to: Sender<T>, make: fn(u64, Vec<u8>) -> T) {
        let mut next = from_seq.max(1);
        loop {
            match self.follow_once(&mut next, &to, make).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(
                        next_seq = next,
                        "following the records stream: {e}; again in {FOLLOW_RETRY:?}"
                    );
                    tokio::time::sleep(FOLLOW_RETRY).await;
                }
            }
        }
    }

    /// One ordered consumer from `*next`; `Ok` once the receiver is gone.
    async fn follow_once<T: Send>(
        &self,
        next: &mut u64,
        to: &Sender<T>,
        make: fn(u64, Vec<u8>) -> T,
    ) -> Result<(), Error> {
        let s = self
            .js
            .get_stream(RECORDS_STREAM)
            .await
            .map_err(|e| Error::nats("records stream", e))?;
        let reader = s
            .create_consumer(consumer::pull::OrderedConfig {
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: *next,
                },
                ..Default::default()
            })
            .await
            .map_err(|e| Error::nats("records consumer", e))?;
        let mut messages = reader
            .messages()
            .await
            .map_err(|e| Error::nats("records messages", e))?;
        while let Some(m) = messages.next().await {
            let m = m.map_err(|e| Error::nats("records message", e))?;
            let seq = m.info().map_err(|e| Error::Nats {
                op: "records message info",
                source: e,
            })?;
            let seq = seq.stream_sequence;
            if seq < *next {
                continue;
            }
            if to.send(make(seq, m.payload.to_vec())).await.is_err() {
                return Ok(());
            }
            *next = seq + 1;
        }
        Err(Error::Writer("the records consumer ended".into()))
    }
}
