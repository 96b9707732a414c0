//! The two wire forms of an `Event` and the one place that encodes and decodes them.
//!
//! - bincode 2.0.1 with `config::standard()` (little endian, variable-length integers):
//!   the compact form the simulator and table controllers publish. Its first byte is the
//!   wire version (1).
//! - JSON (`serde_json`), so a device written in any language can publish. Its first
//!   non-whitespace byte is `{`.
//!
//! A reader tells them apart by that first byte, so no header is needed and the hashed
//! bytes are exactly the message body. schemas/README.md specifies both forms completely
//! enough to read an archive without the bincode crate.

use crate::event::{Event, WIRE_VERSION};
use crate::ids::IdError;

/// Largest event accepted, in bytes, in either form. A 7-box round's largest event (the
/// table configuration with full pay tables) is well under 4 KiB.
pub const EVENT_LEN_MAX: usize = 64 * 1024;

/// Which wire form a message used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    Bincode,
    Json,
}

/// Why bytes are not an event. Every variant names what was wrong: it is stored beside
/// the quarantined bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty message")]
    Empty,
    #[error("message of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
    #[error("bincode: {0}")]
    Bincode(String),
    #[error("bincode: {extra} trailing bytes after the event")]
    TrailingBytes { extra: usize },
    #[error("json: {0}")]
    Json(String),
    #[error("unsupported wire version {0} (this build reads version {WIRE_VERSION})")]
    Version(u8),
    #[error("bad identifier in field {field}: {source}")]
    Id {
        field: &'static str,
        #[source]
        source: IdError,
    },
    #[error("sequence number 0 is not used; chains start at 1")]
    SeqZero,
}

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<EVENT_LEN_MAX>()
}

/// The wire form of `bytes`, judged by its first non-whitespace byte.
pub fn detect(bytes: &[u8]) -> WireFormat {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => WireFormat::Json,
        _ => WireFormat::Bincode,
    }
}

/// Encodes in the compact bincode form.
pub fn to_bincode(event: &Event) -> Vec<u8> {
    // Encoding into a Vec cannot fail for our types (no maps, no unsized limits hit:
    // events are built by our own code and stay far below EVENT_LEN_MAX).
    bincode::encode_to_vec(event, bincode::config::standard())
        .expect("bincode encoding of an Event into a Vec is infallible")
}

/// Encodes in the JSON form (one line, no trailing newline).
pub fn to_json(event: &Event) -> Vec<u8> {
    serde_json::to_vec(event).expect("JSON encoding of an Event is infallible")
}

/// Encodes in the chosen form.
pub fn encode(event: &Event, format: WireFormat) -> Vec<u8> {
    match format {
        WireFormat::Bincode => to_bincode(event),
        WireFormat::Json => to_json(event),
    }
}

/// Decodes one event from either form and checks what the decoders cannot: the wire
/// version, the id grammar, seq >= 1. Never panics, whatever the bytes.
pub fn decode(bytes: &[u8]) -> Result<(Event, WireFormat), DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    if bytes.len() > EVENT_LEN_MAX {
        return Err(DecodeError::TooLarge {
            len: bytes.len(),
            max: EVENT_LEN_MAX,
        });
    }
    let format = detect(bytes);
    let event = match format {
        WireFormat::Json => {
            serde_json::from_slice::<Event>(bytes).map_err(|e| DecodeError::Json(e.to_string()))?
        }
        WireFormat::Bincode => {
            if bytes[0] != WIRE_VERSION {
                return Err(DecodeError::Version(bytes[0]));
            }
            let (event, used): (Event, usize) = bincode::decode_from_slice(bytes, bincode_config())
                .map_err(|e| DecodeError::Bincode(e.to_string()))?;
            if used != bytes.len() {
                return Err(DecodeError::TrailingBytes {
                    extra: bytes.len() - used,
                });
            }
            event
        }
    };
    check(&event)?;
    Ok((event, format))
}

fn check(e: &Event) -> Result<(), DecodeError> {
    if e.v != WIRE_VERSION {
        return Err(DecodeError::Version(e.v));
    }
    e.table.check().map_err(|source| DecodeError::Id {
        field: "table",
        source,
    })?;
    e.device.check().map_err(|source| DecodeError::Id {
        field: "device",
        source,
    })?;
    if e.seq.0 == 0 {
        return Err(DecodeError::SeqZero);
    }
    Ok(())
}
