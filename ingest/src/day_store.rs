//! Sealed days' files in the JetStream object store bucket `subjects::DAY_BUCKET`, one
//! object per day named by it (`YYYY-MM-DD`). The sealer's publisher puts them; a lost
//! node rebuilds from them (`roundledger node rebuild`, `ledger::rebuild`).
//!
//! Invariants:
//! - A put is idempotent: an object of the day with the same BLAKE3 is left alone. One
//!   with another BLAKE3 is never replaced: the put is refused, naming the day.
//! - Days are put oldest first, so the bucket holds every sealed day up to its newest.
//! - A read is bounded by `DAY_OBJECT_LEN_MAX`; the object store checks its SHA-256.

use crate::blocking;
use crate::Error;
use async_nats::jetstream::{self, object_store};
use ledger::Ledger;
use schemas::subjects;
use std::sync::Arc;
use tokio::io::AsyncReadExt;

/// Largest day object read back (`roundledger day check-archive`'s bound too).
pub const DAY_OBJECT_LEN_MAX: u64 = 64 << 30;
/// The object metadata key holding the day file's BLAKE3, lowercase hex.
pub const BLAKE3_KEY: &str = "blake3";
/// Most seals walked back when looking for days the bucket lacks.
pub const DAYS_WALKED_MAX: usize = 100_000;

/// What a put of one day did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutDay {
    /// The object is new.
    Stored,
    /// An object with the same BLAKE3 was there already.
    Existing,
}

fn day_error(day: &str, why: impl std::fmt::Display) -> Error {
    Error::Config(format!(
        "day object {day} in bucket {}: {why}",
        subjects::DAY_BUCKET
    ))
}

/// The bucket, created with `replicas` replicas (file storage) if it does not exist.
pub async fn bucket(
    js: &jetstream::Context,
    replicas: usize,
) -> Result<object_store::ObjectStore, Error> {
    if let Ok(b) = js.get_object_store(subjects::DAY_BUCKET).await {
        return Ok(b);
    }
    js.create_object_store(object_store::Config {
        bucket: subjects::DAY_BUCKET.to_string(),
        description: Some("roundledger sealed days' files, one object per day".into()),
        storage: jetstream::stream::StorageType::File,
        num_replicas: replicas.max(1),
        ..Default::default()
    })
    .await
    .map_err(|e| Error::nats("create the day bucket", e))
}

/// The bucket, which must exist (a rebuild never creates it).
pub async fn existing_bucket(js: &jetstream::Context) -> Result<object_store::ObjectStore, Error> {
    js.get_object_store(subjects::DAY_BUCKET)
        .await
        .map_err(|e| Error::nats("open the day bucket", e))
}

/// Puts `file` as day `day`'s object, unless an equal one is there (see the module doc).
pub async fn put_day(
    bucket: &object_store::ObjectStore,
    day: &str,
    file: &[u8],
) -> Result<PutDay, Error> {
    let ours = blake3::hash(file).to_hex().to_string();
    match bucket.info(day).await {
        Ok(info) if !info.deleted => {
            return match info.metadata.get(BLAKE3_KEY) {
                Some(theirs) if *theirs == ours => Ok(PutDay::Existing),
                other => Err(day_error(
                    day,
                    format!("holds BLAKE3 {other:?}, this node's file has {ours}; left as it is"),
                )),
            };
        }
        Ok(_) => {}
        Err(e) if e.kind() == object_store::InfoErrorKind::NotFound => {}
        Err(e) => return Err(Error::nats("day object info", e)),
    }
    let meta = object_store::ObjectMetadata {
        name: day.to_string(),
        description: Some("a sealed day's file (schemas/ARCHIVE.md)".into()),
        metadata: [(BLAKE3_KEY.to_string(), ours)].into(),
        ..Default::default()
    };
    let mut reader = file;
    bucket
        .put(meta, &mut reader)
        .await
        .map_err(|e| Error::nats("put a day object", e))?;
    Ok(PutDay::Stored)
}

/// The days the bucket holds, in day order.
pub async fn days(bucket: &object_store::ObjectStore) -> Result<Vec<String>, Error> {
    use futures::StreamExt;
    let mut list = bucket
        .list()
        .await
        .map_err(|e| Error::nats("list day objects", e))?;
    let mut out = Vec::new();
    while let Some(info) = list.next().await {
        let info = info.map_err(|e| Error::nats("list day objects", e))?;
        if !info.deleted {
            out.push(info.name);
        }
    }
    out.sort();
    Ok(out)
}

/// Day `day`'s file, read whole (at most `DAY_OBJECT_LEN_MAX` bytes).
pub async fn get_day(bucket: &object_store::ObjectStore, day: &str) -> Result<Vec<u8>, Error> {
    let mut object = bucket
        .get(day)
        .await
        .map_err(|e| Error::nats("get a day object", e))?;
    let len = object.info.size as u64;
    if len > DAY_OBJECT_LEN_MAX {
        return Err(day_error(
            day,
            format!("{len} bytes, over {DAY_OBJECT_LEN_MAX}"),
        ));
    }
    let mut file = Vec::with_capacity(len as usize);
    object
        .read_to_end(&mut file)
        .await
        .map_err(|e| day_error(day, format!("reading it: {e}")))?;
    Ok(file)
}

/// Puts every sealed day of `ledger` the bucket lacks, oldest first: the seals walked back
/// from the newest until a day the bucket holds. Returns the days stored.
pub async fn put_sealed_days(
    js: &jetstream::Context,
    ledger: &Arc<Ledger>,
    replicas: usize,
) -> Result<Vec<String>, Error> {
    let bucket = bucket(js, replicas).await?;
    let held = days(&bucket).await?;
    let l = ledger.clone();
    let missing = blocking(move || {
        let mut out = Vec::new();
        let mut before: Option<String> = None;
        while out.len() < DAYS_WALKED_MAX {
            let page = l.reader().day_seals(before.as_deref(), 64)?;
            let Some(last) = page.last() else { break };
            before = Some(last.day.clone());
            for s in page {
                if held.binary_search(&s.day).is_ok() {
                    return Ok(out);
                }
                out.push(s.day);
            }
        }
        Ok(out)
    })
    .await?;
    let mut stored = Vec::new();
    for day in missing.into_iter().rev() {
        let (l, d) = (ledger.clone(), day.clone());
        let file = blocking(move || l.reader().day_file(&d)).await?;
        if put_day(&bucket, &day, &file).await? == PutDay::Stored {
            tracing::info!(day = %day, bytes = file.len(), "day file stored in the day bucket");
            stored.push(day);
        }
    }
    Ok(stored)
}
