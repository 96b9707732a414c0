//! The JSON body extractor of every `POST`: axum's `Json`, but a number with no fraction
//! (`7.0`, `1e3`) is taken where an integer is due. JSON Schema, and so the OpenAPI
//! document, counts such a number as an integer; serde would refuse it.
//!
//! Invariant: a body is refused exactly as `Json` refuses it (415 without the content
//! type, 400 for bad JSON, 422 for a value of the wrong shape), after that one
//! normalisation. A number with a fraction, or one outside `i64`/`u64`, stays a float.

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

/// Most levels of arrays and objects `integral` walks; serde_json refuses deeper bodies.
const DEPTH_MAX: usize = 128;

/// A JSON body of type `T`.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(mut v) = Json::<Value>::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        integral(&mut v, 0);
        serde_json::from_value(v).map(Body).map_err(|e| {
            let msg = format!("Failed to deserialize the JSON body into the target type: {e}");
            (StatusCode::UNPROCESSABLE_ENTITY, msg).into_response()
        })
    }
}

/// Replaces each float with no fraction that an integer type holds by that integer.
fn integral(v: &mut Value, depth: usize) {
    if depth > DEPTH_MAX {
        return;
    }
    match v {
        Value::Number(n) => {
            let Some(f) = n.as_f64().filter(|_| n.is_f64()) else {
                return;
            };
            if f.fract() != 0.0 || !f.is_finite() {
                return;
            }
            // Exact below 2^63 (and 2^64): an f64 there is an integer value.
            let int = if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
                Some(Number::from(f as i64))
            } else if (0.0..1.844_674_407_370_955_2e19).contains(&f) {
                Some(Number::from(f as u64))
            } else {
                None
            };
            if let Some(i) = int {
                *n = i;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| integral(x, depth + 1)),
        Value::Object(o) => o.values_mut().for_each(|x| integral(x, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_floats_become_integers_and_the_rest_stay() {
        let mut v: Value =
            serde_json::from_str(r#"{"a": 7.0, "b": [1e3, 2.5, -3.0], "c": 1e300, "d": "7.0"}"#)
                .unwrap();
        integral(&mut v, 0);
        assert_eq!(v["a"], Value::from(7));
        assert_eq!(v["b"], serde_json::json!([1000, 2.5, -3]));
        assert!(v["c"].is_f64(), "outside every integer type");
        assert_eq!(v["d"], "7.0");
    }
}
