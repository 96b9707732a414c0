//! The error responses of the OpenAPI document: every `/v1/` operation documents each
//! status it can answer with a JSON `ApiError`, with a description, from its access, its
//! parameters and its body, so a new operation cannot forget the common ones.
//!
//! Invariant: every response of the document has a non-empty description.

use crate::auth::{allowed, area_of};
use schemas::api::Role;
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr};

/// What an error status means, for every status the API answers with an `ApiError`.
fn meaning(status: &str) -> Option<&'static str> {
    Some(match status {
        "400" => "the request is malformed: an unknown parameter, a value outside its schema, a bad path segment or body, or two Authorization headers",
        "401" => "no bearer token, or one this server does not know",
        "403" => "the token's role may not use this operation, or a count's key is not trusted",
        "404" => "what the path names does not exist",
        "409" => "the case is closed, or has as many entries as it may",
        "410" => "the round's gaming day was removed by retention (`archive remove`); its seal still proves the day's heads",
        "413" => "the answer would exceed a server limit",
        "415" => "the body is not sent as `Content-Type: application/json`",
        "422" => "the JSON body lacks a field or has one of the wrong type",
        "429" => "this address failed too many requests this minute; wait the `Retry-After` seconds",
        "500" => "the ledger or a journal could not be read or written",
        "503" => "the audit log cannot be written; no data is served",
        _ => return None,
    })
}

fn api_error(status: &str) -> Response {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("ApiError")))
        .build();
    ResponseBuilder::new()
        .description(meaning(status).unwrap_or("an error"))
        .content("application/json", content)
        .build()
}

/// Adds the error responses every `/v1/` operation can give and fills the description of
/// error responses that have none.
pub fn document_errors(doc: &mut OpenApi) {
    for (path, item) in doc.paths.paths.iter_mut() {
        if !path.starts_with("/v1/") {
            continue;
        }
        let ops = [
            ("GET", item.get.as_mut()),
            ("POST", item.post.as_mut()),
            ("PUT", item.put.as_mut()),
            ("DELETE", item.delete.as_mut()),
        ];
        for (method, op) in ops {
            if let Some(op) = op {
                add_errors(method, path, op);
            }
        }
    }
}

fn add_errors(method: &str, path: &str, op: &mut Operation) {
    // Every request needs one token and an audit entry; any parameter can fail to parse;
    // an address failing too often is held off.
    let mut statuses = vec!["400", "401", "429", "503"];
    let area = area_of(method, path);
    if ![Role::Surveillance, Role::Finance, Role::Admin]
        .iter()
        .all(|r| allowed(*r, area))
    {
        statuses.push("403");
    }
    // A body can lack its content type or its fields.
    if op.request_body.is_some() {
        statuses.extend(["415", "422"]);
    }
    let responses = &mut op.responses.responses;
    for s in statuses {
        responses
            .entry(s.to_string())
            .or_insert_with(|| RefOr::T(api_error(s)));
    }
    for (status, response) in responses.iter_mut() {
        if let RefOr::T(r) = response {
            if r.description.is_empty() {
                if let Some(m) = meaning(status) {
                    r.description = m.to_string();
                }
            }
        }
    }
}
