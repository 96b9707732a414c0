//! Streams what a blocking writer produces as a response body, in bounded memory.
//!
//! The writer runs on the blocking pool and hands chunks of at most `CHUNK_BYTES_MAX` to
//! the body through a channel of `CHUNKS_IN_FLIGHT_MAX`. So a response holds at most
//! their product in memory, whatever its length: an export of a whole table included.
//!
//! Invariant: a refusal decided before the first byte leaves as its own status and
//! `ApiError`. A failure after it ends the body with an error, so the client sees a
//! broken transfer, never a complete-looking file with events missing.

use crate::read::Refusal;
use crate::ReadError;
use axum::body::{Body, Bytes};
use std::io::{self, Write};
use tokio::sync::{mpsc, oneshot};

/// Largest chunk handed to the body.
pub const CHUNK_BYTES_MAX: usize = 64 * 1024;
/// Chunks waiting for the client at most; the writer blocks beyond them.
pub const CHUNKS_IN_FLIGHT_MAX: usize = 8;

type Chunk = Result<Bytes, io::Error>;

/// A `Write` that sends full chunks to the body and says when the first byte is out.
struct ChunkWriter {
    buf: Vec<u8>,
    tx: mpsc::Sender<Chunk>,
    started: Option<oneshot::Sender<Result<(), ReadError>>>,
}

impl ChunkWriter {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(s) = self.started.take() {
            let _ = s.send(Ok(()));
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = CHUNK_BYTES_MAX - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == CHUNK_BYTES_MAX {
            self.send()?;
        }
        debug_assert!(
            self.buf.len() < CHUNK_BYTES_MAX,
            "a full chunk is sent at once"
        );
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// Runs `produce` on the blocking pool, writing into the returned body. Refused with
/// `produce`'s error when it fails before writing a byte.
pub async fn body_from_writer(
    produce: impl FnOnce(&mut dyn Write) -> Result<(), ReadError> + Send + 'static,
) -> Result<Body, Refusal> {
    let (tx, mut rx) = mpsc::channel::<Chunk>(CHUNKS_IN_FLIGHT_MAX);
    let (started_tx, started_rx) = oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let mut w = ChunkWriter {
            buf: Vec::with_capacity(CHUNK_BYTES_MAX),
            tx: tx.clone(),
            started: Some(started_tx),
        };
        let outcome = produce(&mut w).and_then(|()| {
            w.flush()
                .map_err(|e| ReadError::Internal(format!("writing the body: {e}")))
        });
        match (outcome, w.started.take()) {
            // Nothing written: the whole answer is this outcome (an empty body on success).
            (outcome, Some(s)) => {
                let _ = s.send(outcome);
            }
            (Ok(()), None) => {}
            // Bytes are out: end the body with an error, so the transfer is broken.
            (Err(e), None) => {
                let _ = tx.blocking_send(Err(io::Error::other(e.to_string())));
            }
        }
    });
    match started_rx.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e.into()),
        Err(_) => return Err(ReadError::Internal("the export task ended".into()).into()),
    }
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Ok(Body::from_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn refusal_status(r: Refusal) -> axum::http::StatusCode {
        axum::response::IntoResponse::into_response(r).status()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_body_arrives_whole_in_uneven_writes() {
        let body = body_from_writer(|w| {
            for i in 0..50_000u32 {
                writeln!(w, "line {i} {}", "x".repeat((i % 97) as usize))
                    .map_err(|e| ReadError::Internal(e.to_string()))?;
            }
            Ok(())
        })
        .await
        .unwrap();
        let got = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        let mut want = Vec::new();
        for i in 0..50_000u32 {
            writeln!(want, "line {i} {}", "x".repeat((i % 97) as usize)).unwrap();
        }
        assert!(
            want.len() > 10 * CHUNK_BYTES_MAX,
            "the body spans many chunks"
        );
        assert_eq!(got.as_ref(), want.as_slice());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refusal_before_the_first_byte_keeps_its_status() {
        let r = body_from_writer(|_| Err(ReadError::TooLarge("too many events".into()))).await;
        assert_eq!(
            refusal_status(r.unwrap_err()),
            axum::http::StatusCode::PAYLOAD_TOO_LARGE
        );
        let r = body_from_writer(|w| {
            w.write_all(b"").unwrap();
            Err(ReadError::NotFound("no such table".into()))
        })
        .await;
        assert_eq!(
            refusal_status(r.unwrap_err()),
            axum::http::StatusCode::NOT_FOUND
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failure_after_bytes_breaks_the_transfer() {
        let body = body_from_writer(|w| {
            w.write_all(&vec![b'a'; 3 * CHUNK_BYTES_MAX + 5]).unwrap();
            Err(ReadError::Integrity(
                "stored seq 7 where 6 was expected".into(),
            ))
        })
        .await
        .unwrap();
        assert!(axum::body::to_bytes(body, usize::MAX).await.is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_that_does_not_read_holds_the_writer_within_the_bound() {
        let written = Arc::new(AtomicUsize::new(0));
        let seen = written.clone();
        let body = body_from_writer(move |w| {
            for _ in 0..1_000 {
                w.write_all(&[b'z'; 16 * 1024])
                    .map_err(|e| ReadError::Internal(e.to_string()))?;
                seen.fetch_add(16 * 1024, Ordering::SeqCst);
            }
            Ok(())
        })
        .await
        .unwrap();
        // Wait until the writer stops advancing, then check how far it got.
        let mut last = usize::MAX;
        for _ in 0..100 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let now = written.load(Ordering::SeqCst);
            if now == last {
                break;
            }
            last = now;
        }
        let bound = (CHUNKS_IN_FLIGHT_MAX + 2) * CHUNK_BYTES_MAX;
        assert!(
            last <= bound,
            "{last} bytes written before any read, bound {bound}"
        );
        assert!(last >= CHUNK_BYTES_MAX, "the writer started");
        let got = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert_eq!(got.len(), 1_000 * 16 * 1024);
    }
}
