//! Length-prefixed strings inside the read model's keys, shared by every space.

/// Appends `s` to key `k` as one length byte and its bytes, so keys sort by field.
pub(crate) fn push_str(k: &mut Vec<u8>, s: &str) {
    // Table ids and staff ids are at most 32 bytes; codes, kinds and subjects are ours.
    assert!(
        s.len() <= u8::MAX as usize,
        "key string of {} bytes",
        s.len()
    );
    k.push(s.len() as u8);
    k.extend_from_slice(s.as_bytes());
}

/// The first string of key `k`, after its space byte (a table key's table).
pub(crate) fn first_str(k: &[u8]) -> Option<&str> {
    let len = *k.get(1)? as usize;
    std::str::from_utf8(k.get(2..2 + len)?).ok()
}
