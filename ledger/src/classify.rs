//! Which quarantine reason a decoding failure gets. Bad input is never an error: it is
//! quarantined verbatim, and the reason code says what kind of bad it was so operators can
//! tell an attack or a broken device (`undecodable`) from a newer device (`unknown_kind`)
//! or a misconfigured one (`oversized`).

use crate::types::reason;
use schemas::codec::DecodeError;

/// The reason code of a message that does not decode.
pub(crate) fn decode_reason(e: &DecodeError) -> &'static str {
    match e {
        DecodeError::TooLarge { .. } => reason::OVERSIZED,
        // Our own decoder names an unknown kind; no other crate's message is read.
        DecodeError::UnknownKind { .. } => reason::UNKNOWN_KIND,
        _ => reason::UNDECODABLE,
    }
}
