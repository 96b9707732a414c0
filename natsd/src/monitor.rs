//! The client of a server's monitoring endpoint: one bounded HTTP/1.0 GET on loopback.
//!
//! Both a cluster's readiness checks and a reload's wait read it. It only ever connects to
//! 127.0.0.1, and every read and write is bounded in time and size.

use crate::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Bound on one request to a node's monitoring endpoint.
const MONITOR_IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Most bytes read from one monitoring answer.
const MONITOR_BODY_MAX: u64 = 4 << 20;

/// A bounded HTTP/1.0 GET of `path` on 127.0.0.1:`port`; the body of a 200 answer.
pub(crate) fn http_get(port: u16, path: &str) -> Result<Vec<u8>, Error> {
    let url = format!("http://127.0.0.1:{port}{path}");
    let fail = |why: String| Error::Monitor {
        url: url.clone(),
        why,
    };
    let mut s = TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        MONITOR_IO_TIMEOUT,
    )
    .map_err(|e| fail(format!("connect: {e}")))?;
    s.set_read_timeout(Some(MONITOR_IO_TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(MONITOR_IO_TIMEOUT)))
        .map_err(|e| fail(format!("socket: {e}")))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .map_err(|e| fail(format!("write: {e}")))?;
    let mut answer = Vec::new();
    s.take(MONITOR_BODY_MAX)
        .read_to_end(&mut answer)
        .map_err(|e| fail(format!("read: {e}")))?;
    let Some(split) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(fail("no header end in the answer".to_string()));
    };
    let head = String::from_utf8_lossy(&answer[..split]);
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(fail(format!("answered {status:?}")));
    }
    Ok(answer[split + 4..].to_vec())
}
