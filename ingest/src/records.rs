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
use schemas::records::{RECORDS_STREAM, RECORDS_WILDCARD, RECORD_LEN_MAX, RECORD_SIGNATURE_HEADER};
use std::time::Duration;
use tokio::sync::mpsc::Sender;

/// How long the server keeps a follower's consumer that nobody pulls from.
pub const CONSUMER_IDLE_MAX: Duration = Duration::from_secs(30);
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

/// Makes a delivery of (stream seq, bytes, the signature header if any).
pub type Make<T> = fn(u64, Vec<u8>, Option<String>) -> T;

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

    /// Publishes `bytes` on `subject` under de-duplication id `id`, with the node's
    /// `signature` header when given; the stream seq once JetStream stored it (a repeat
    /// within the window answers the first's seq).
    pub async fn publish(
        &self,
        subject: String,
        id: &str,
        bytes: Vec<u8>,
        signature: Option<String>,
    ) -> Result<u64, Error> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", id);
        if let Some(sig) = signature {
            headers.insert(RECORD_SIGNATURE_HEADER, sig.as_str());
        }
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
        Ok(self.info().await?.state.last_sequence)
    }

    /// When the stream was made, UTC ns (stream info `created`): a stream deleted and
    /// made again has another, whatever its seqs.
    pub async fn created_ns(&self) -> Result<i64, Error> {
        Ok(self.state().await?.1)
    }

    /// The stream's last seq and creation time (UTC ns), from one stream info.
    pub async fn state(&self) -> Result<(u64, i64), Error> {
        let info = self.info().await?;
        let created = info.created;
        let created_ns = i64::try_from(created.unix_timestamp_nanos())
            .map_err(|_| Error::Writer(format!("the records stream's creation time {created}")))?;
        Ok((info.state.last_sequence, created_ns))
    }

    async fn info(&self) -> Result<stream::Info, Error> {
        let mut s = self
            .js
            .get_stream(RECORDS_STREAM)
            .await
            .map_err(|e| Error::nats("records stream", e))?;
        let info = s
            .info()
            .await
            .map_err(|e| Error::nats("records stream info", e))?;
        Ok(info.clone())
    }

    /// Sends every record from `from_seq` on to `to` as `make(stream seq, bytes,
    /// signature)`, in stream order, until its receiver is dropped. A failure of the bus
    /// is logged and the reading starts again at the first seq not yet sent. Before each
    /// consumer it checks the stream was created at `created_ns`; if not, it ends.
    pub async fn follow<T: Send>(
        &self,
        from_seq: u64,
        created_ns: i64,
        to: Sender<T>,
        make: Make<T>,
    ) {
        let mut next = from_seq.max(1);
        loop {
            match self.created_ns().await {
                Ok(c) if c != created_ns => {
                    tracing::error!(
                        created_ns = c,
                        expected_ns = created_ns,
                        "the records stream was made again: not followed"
                    );
                    return;
                }
                _ => {}
            }
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

    /// One ephemeral pull consumer from `*next`, acking nothing; `Ok` once the receiver
    /// is gone. Not an ordered consumer: that one makes itself again after a failure,
    /// past `follow`'s check of the stream's creation time, on a stream made again.
    async fn follow_once<T: Send>(
        &self,
        next: &mut u64,
        to: &Sender<T>,
        make: Make<T>,
    ) -> Result<(), Error> {
        let s = self
            .js
            .get_stream(RECORDS_STREAM)
            .await
            .map_err(|e| Error::nats("records stream", e))?;
        let reader = s
            .create_consumer(consumer::pull::Config {
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: *next,
                },
                ack_policy: consumer::AckPolicy::None,
                inactive_threshold: CONSUMER_IDLE_MAX,
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
            let sig = m
                .headers
                .as_ref()
                .and_then(|h| h.get(RECORD_SIGNATURE_HEADER))
                .map(|v| v.as_str().to_string());
            if to.send(make(seq, m.payload.to_vec(), sig)).await.is_err() {
                return Ok(());
            }
            *next = seq + 1;
        }
        Err(Error::Writer("the records consumer ended".into()))
    }
}
