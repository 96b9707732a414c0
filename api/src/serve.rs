//! The connection loop of `run`: a listener with a long backlog, HTTP/1.1 with a header read
//! timeout (which also closes a keep-alive connection idle between requests), a write stall
//! timeout (a client that stops reading its response), TLS when configured, the client's
//! address in each request, and graceful shutdown.
//!
//! Invariants: no connection waits forever on its client; shutdown stops accepting, lets
//! the responses in flight finish, then returns.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket};
use tokio::time::{Instant, Sleep};

/// Connections the kernel queues before `accept` (capped by `net.core.somaxconn`).
pub const LISTEN_BACKLOG: u32 = 4096;

/// How long a connection may take to send a request's head, and may stay idle between
/// requests, and how long writing a response may stall.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// How long a request's head or a TLS handshake may take, and a connection may stay idle.
    pub header_read: Duration,
    /// Longer than the live feed's keep-alive (15 s), which writes while events are few.
    pub write_stall: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            header_read: Duration::from_secs(30),
            write_stall: Duration::from_secs(60),
        }
    }
}

/// Binds `addr` with `LISTEN_BACKLOG`.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As tokio's `TcpListener::bind`: a restart may bind while old connections linger.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `app` on `listener` until `shutdown` completes, then waits for the connections.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    timeouts: Timeouts,
    shutdown: impl Future<Output = ()>,
) {
    serve_tls(listener, app, timeouts, None, shutdown).await
}

/// The client's address, in every request's extensions (the audit log names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub SocketAddr);

/// `serve`, over TLS when `tls` is given: the handshake must finish within the header
/// read timeout.
pub async fn serve_tls(
    listener: TcpListener,
    app: axum::Router,
    timeouts: Timeouts,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()>,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    tokio::pin!(shutdown);
    loop {
        let (stream, addr) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors, usually: wait rather than spin.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let conn = Connection {
            service: WithClient {
                inner: hyper_util::service::TowerToHyperService::new(app.clone()),
                addr: ClientAddr(addr),
            },
            timeouts,
            watcher: graceful.watcher(),
        };
        match tls.clone() {
            None => {
                tokio::spawn(conn.run(StallGuard::new(stream, timeouts.write_stall)));
            }
            Some(acceptor) => {
                tokio::spawn(async move {
                    let handshake = acceptor.accept(stream);
                    match tokio::time::timeout(timeouts.header_read, handshake).await {
                        Ok(Ok(s)) => conn.run(StallGuard::new(s, timeouts.write_stall)).await,
                        Ok(Err(e)) => tracing::debug!("TLS handshake with {addr}: {e}"),
                        Err(_) => tracing::debug!("TLS handshake with {addr}: timed out"),
                    }
                });
            }
        }
    }
    drop(listener);
    graceful.shutdown().await;
}

/// One accepted connection, before its (optional) TLS handshake.
struct Connection {
    service: WithClient,
    timeouts: Timeouts,
    watcher: hyper_util::server::graceful::Watcher,
}

impl Connection {
    async fn run<IO: AsyncRead + AsyncWrite + Unpin + Send + 'static>(self, io: IO) {
        use hyper_util::rt::{TokioIo, TokioTimer};
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(self.timeouts.header_read);
        let conn = http.serve_connection(TokioIo::new(io), self.service);
        if let Err(e) = self.watcher.watch(conn).await {
            tracing::debug!("connection: {e}");
        }
    }
}

type Incoming = hyper::Request<hyper::body::Incoming>;

/// The app, with the client's address put into each request.
#[derive(Clone)]
struct WithClient {
    inner: hyper_util::service::TowerToHyperService<axum::Router>,
    addr: ClientAddr,
}

impl hyper::service::Service<Incoming> for WithClient {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = hyper_util::service::TowerToHyperServiceFuture<axum::Router, Incoming>;

    fn call(&self, mut req: Incoming) -> Self::Future {
        req.extensions_mut().insert(self.addr);
        self.inner.call(req)
    }
}

/// An I/O stream whose writes fail with `TimedOut` once one has waited `limit` without
/// progress.
pub struct StallGuard<T> {
    io: T,
    limit: Duration,
    /// Set while a write waits.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<T> StallGuard<T> {
    /// Wraps `io` so a write that waits `limit` without progress fails with `TimedOut`.
    pub fn new(io: T, limit: Duration) -> StallGuard<T> {
        StallGuard {
            io,
            limit,
            deadline: None,
        }
    }

    fn on_write<R>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if r.is_ready() {
            self.deadline = None;
            return r;
        }
        let limit = self.limit;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for StallGuard<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for StallGuard<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.on_write(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.on_write(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.on_write(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_write_the_peer_never_reads_times_out_and_a_read_one_does_not() {
        let (near, mut far) = tokio::io::duplex(64);
        let mut guarded = StallGuard::new(near, Duration::from_millis(50));
        let err = guarded.write_all(&[7; 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);

        let (near, mut far2) = tokio::io::duplex(64);
        let mut guarded = StallGuard::new(near, Duration::from_millis(50));
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            far2.read_to_end(&mut got).await.map(|_| got.len())
        });
        guarded.write_all(&[7; 1024]).await.unwrap();
        guarded.shutdown().await.unwrap();
        drop(guarded);
        assert_eq!(reader.await.unwrap().unwrap(), 1024);
        far.shutdown().await.unwrap();
    }
}
