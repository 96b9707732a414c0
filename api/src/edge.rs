//! What every response passes through on its way out: errors as JSON `ApiError` bodies
//! (axum's extractor rejections included), the security headers, and the redaction of
//! secrets from a query before the audit log keeps it.
//!
//! Invariants: a `/v1/` error response always has a JSON `ApiError` body; a response never
//! leaves without the security headers; the audit log never holds a query value named like
//! a credential, only its fingerprint.

use axum::extract::Request;
use axum::http::{header, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use schemas::api::ApiError;

/// The page may load only its own scripts, styles and data (no inline code), `data:` images
/// (the empty favicon), and may not be framed.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Most bytes of a rejection's text that become its `ApiError` message.
const REJECTION_TEXT_MAX: usize = 4096;

/// Query parameters whose values are credentials: the audit log keeps a fingerprint.
const SECRET_QUERY_KEYS: [&str; 3] = ["token", "access_token", "authorization"];

/// Adds the security headers to every response; `/v1/` answers are also never cached.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/v1/");
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    let set = |h: &mut axum::http::HeaderMap, name: HeaderName, value: &'static str| {
        h.insert(name, HeaderValue::from_static(value));
    };
    set(h, header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY);
    set(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(h, header::REFERRER_POLICY, "no-referrer");
    if api {
        set(h, header::CACHE_CONTROL, "no-store");
    }
    res
}

/// An error response as a JSON `ApiError`: a rejection axum raised before the handler ran
/// (query, path, body) is plain text; its text becomes the message, its status is kept.
/// Success and JSON responses pass unchanged.
pub async fn json_error(res: Response) -> Response {
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return res;
    }
    let text = match axum::body::to_bytes(res.into_body(), REJECTION_TEXT_MAX).await {
        Ok(b) if !b.is_empty() => String::from_utf8_lossy(&b).into_owned(),
        _ => status
            .canonical_reason()
            .unwrap_or("request refused")
            .to_lowercase(),
    };
    (status, Json(ApiError { error: text })).into_response()
}

/// `query` with the value of every credential-named parameter (`token`, `access_token`,
/// `authorization`, any case, percent-encoded or not) replaced by `blake3:` and the first
/// 16 hex digits of its hash: the same secret is recognisable, never readable.
pub fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| {
            let Some((key, value)) = form_urlencoded::parse(pair.as_bytes()).next() else {
                return pair.to_string();
            };
            let secret = SECRET_QUERY_KEYS
                .iter()
                .any(|k| key.trim().eq_ignore_ascii_case(k));
            if !secret {
                return pair.to_string();
            }
            let raw_key = pair.split_once('=').map_or(pair, |(k, _)| k);
            let digest = blake3::hash(value.as_bytes()).to_hex();
            format!("{raw_key}=blake3:{}", &digest[..16])
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_values_are_fingerprinted_and_the_rest_kept() {
        let secret = "admin-token-000000000000000001";
        let q = format!("table=T1&token={secret}&Access_Token={secret}&%74oken={secret}&limit=5");
        let r = redact_query(&q);
        assert!(!r.contains(secret), "{r}");
        assert!(!r.contains("000000000001"), "{r}");
        let fp = &blake3::hash(secret.as_bytes()).to_hex()[..16];
        assert_eq!(
            r,
            format!(
                "table=T1&token=blake3:{fp}&Access_Token=blake3:{fp}&%74oken=blake3:{fp}&limit=5"
            )
        );
        assert_eq!(redact_query("a=1&&b"), "a=1&&b");
        assert_eq!(redact_query(""), "");
    }
}
