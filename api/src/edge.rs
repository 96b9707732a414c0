//! What every response passes through on its way out: errors as JSON `ApiError` bodies
//! (axum's extractor rejections included), the security headers, and the redaction of
//! secrets from a query before the audit log keeps it.
//!
//! Invariants: a `/v1/` error response always has a JSON `ApiError` body; a response never
//! leaves without the security headers; the audit log never holds a query value or path
//! segment that is or looks like a credential (`looks_like_token`), nor any value of a
//! parameter named like one: only its fingerprint. No header value is logged at all.

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

/// Fewest characters of a value that looks like a token by its shape alone: the tokens
/// `roundledger tokens` makes are 64 hex digits; 32 also covers shorter base64 secrets.
pub const TOKEN_SHAPE_LEN_MIN: usize = 32;

/// Whether `value` (decoded) looks like a credential. `known` says whether the server
/// accepts a token, whatever its shape. Otherwise by shape: an optional `Bearer ` prefix,
/// then at least `TOKEN_SHAPE_LEN_MIN` characters of a token alphabet (hex, base64,
/// base64url) with a letter and a digit. Table ids (at most 32 characters), dates, times
/// in ns and free text with spaces do not look like one.
pub fn looks_like_token(value: &str, known: &dyn Fn(&str) -> bool) -> bool {
    let value = value.trim();
    let bare = match value.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        _ => value,
    };
    if bare.is_empty() {
        return false;
    }
    if known(bare) || known(value) {
        return true;
    }
    let alphabet = |c: char| c.is_ascii_alphanumeric() || "-_.~+/=".contains(c);
    bare.len() >= TOKEN_SHAPE_LEN_MIN
        && bare.chars().all(alphabet)
        && bare.chars().any(|c| c.is_ascii_alphabetic())
        && bare.chars().any(|c| c.is_ascii_digit())
}

/// `blake3:` and the first 16 hex digits of `value`'s hash: recognisable, never readable.
fn fingerprint(value: &str) -> String {
    let digest = blake3::hash(value.as_bytes()).to_hex();
    format!("blake3:{}", &digest[..16])
}

/// `query` with every credential replaced by its fingerprint: the value of a parameter
/// named like one (`token`, `access_token`, `authorization`, any case, percent-encoded or
/// not), and any value or bare key that looks like a token (`looks_like_token`),
/// whatever the parameter's name.
pub fn redact_query(query: &str, known: &dyn Fn(&str) -> bool) -> String {
    query
        .split('&')
        .map(|pair| {
            let Some((key, value)) = form_urlencoded::parse(pair.as_bytes()).next() else {
                return pair.to_string();
            };
            let (raw_key, has_value) = match pair.split_once('=') {
                Some((k, _)) => (k, true),
                None => (pair, false),
            };
            let key_is_token = looks_like_token(&key, known);
            let named = SECRET_QUERY_KEYS
                .iter()
                .any(|k| key.trim().eq_ignore_ascii_case(k));
            let shown_key = match key_is_token {
                true => fingerprint(&key),
                false => raw_key.to_string(),
            };
            if has_value && (named || looks_like_token(&value, known)) {
                return format!("{shown_key}={}", fingerprint(&value));
            }
            match (key_is_token, has_value) {
                (false, _) => pair.to_string(),
                (true, true) => format!(
                    "{shown_key}={}",
                    pair.split_once('=').map_or("", |(_, v)| v)
                ),
                (true, false) => shown_key,
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `path` with every segment that looks like a token (`looks_like_token`, decoded)
/// replaced by its fingerprint.
pub fn redact_path(path: &str, known: &dyn Fn(&str) -> bool) -> String {
    path.split('/')
        .map(|segment| {
            let decoded = form_urlencoded::parse(segment.as_bytes())
                .next()
                .map(|(k, _)| k.into_owned())
                .unwrap_or_default();
            match looks_like_token(&decoded, known) {
                true => fingerprint(&decoded),
                false => segment.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_values_are_fingerprinted_and_the_rest_kept() {
        let secret = "admin-token-000000000000000001";
        let q = format!("table=T1&token={secret}&Access_Token={secret}&%74oken={secret}&limit=5");
        let r = redact_query(&q, &|_| false);
        assert!(!r.contains(secret), "{r}");
        assert!(!r.contains("000000000001"), "{r}");
        let fp = &blake3::hash(secret.as_bytes()).to_hex()[..16];
        assert_eq!(
            r,
            format!(
                "table=T1&token=blake3:{fp}&Access_Token=blake3:{fp}&%74oken=blake3:{fp}&limit=5"
            )
        );
        assert_eq!(redact_query("a=1&&b", &|_| false), "a=1&&b");
        assert_eq!(redact_query("", &|_| false), "");
    }

    #[test]
    fn token_shaped_values_are_fingerprinted_under_any_name() {
        let made = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let known = |t: &str| t == "desk-token-0001";
        let none = |_: &str| false;
        let fp = |v: &str| fingerprint(v);
        for name in ["bearer", "auth", "api_key", "key", "x", "Bearer"] {
            let q = format!("table=CSP6-01&{name}={made}");
            let want = format!("table=CSP6-01&{name}={}", fp(made));
            assert_eq!(redact_query(&q, &none), want);
            // A configured token of any shape, known to the server.
            let q = format!("{name}=desk-token-0001&limit=5");
            let want = format!("{name}={}&limit=5", fp("desk-token-0001"));
            assert_eq!(redact_query(&q, &known), want);
        }
        // `Bearer <token>`, encoded, with the scheme; and a token given as a bare key.
        let q = format!("h=Bearer%20{made}&{made}");
        let want = format!("h={}&{}", fp(&format!("Bearer {made}")), fp(made));
        assert_eq!(redact_query(&q, &none), want);
        // What is not a token is kept: ids, dates, ns times, free text, 31 characters.
        let kept = "table=MLP3-02&day=2026-11-25&from_ns=1767225600000000000&q=a%20b&x=abcdefghij0123456789abcdefghij0";
        assert_eq!(redact_query(kept, &none), kept);
        assert!(!looks_like_token(&"a".repeat(64), &none), "no digit");
        assert!(!looks_like_token(&"1".repeat(64), &none), "no letter");
    }

    #[test]
    fn token_shaped_path_segments_are_fingerprinted() {
        let made = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let none = |_: &str| false;
        let p = format!("/v1/tables/{made}/rounds");
        assert_eq!(
            redact_path(&p, &none),
            format!("/v1/tables/{}/rounds", fingerprint(made))
        );
        assert_eq!(
            redact_path("/v1/tables/CSP6-01/rounds/7", &none),
            "/v1/tables/CSP6-01/rounds/7"
        );
    }
}
