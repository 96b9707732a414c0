//! Which quarantine reason a decoding failure gets. Bad input is never an error: it is
//! quarantined verbatim, and the reason code says what kind of bad it was so operators can
//! tell an attack or a broken device (`undecodable`) from a newer device (`unknown_kind`)
//! or a misconfigured one (`oversized`).

use crate::append::reason;
use schemas::codec::DecodeError;

/// The reason code of a message that does not decode.
pub(crate) fn decode_reason(e: &DecodeError) -> &'static str {
    match e {
        DecodeError::TooLarge { .. } => reason::OVERSIZED,
        // bincode 2 prints its error's Debug form: `UnexpectedVariant { type_name:
        // "schemas::event::EventBody", .. }` for a variant index beyond the catalogue.
        DecodeError::Bincode(t) if t.contains("UnexpectedVariant") && t.contains("EventBody") => {
            reason::UNKNOWN_KIND
        }
        // serde_json, internally tagged `body`: "unknown variant `x`, expected one of
        // `table_opened`, ..." (only EventBody's variants include `table_opened`).
        DecodeError::Json(t) if t.contains("unknown variant") && t.contains("`table_opened`") => {
            reason::UNKNOWN_KIND
        }
        _ => reason::UNDECODABLE,
    }
}
