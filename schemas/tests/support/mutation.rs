//! Byte mutations for the fuzz properties of `schemas` and `proofs`: flip, insert, delete,
//! truncate, each at a position taken modulo the length.

use proptest::prelude::*;

/// One edit of a byte string.
#[derive(Debug, Clone)]
pub enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

/// Any one mutation.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// Applies `m` to a non-empty `b`.
pub fn apply(b: &mut Vec<u8>, m: &Mutation) {
    let n = b.len();
    match *m {
        Mutation::Flip(i, x) => b[i % n] ^= x,
        Mutation::Insert(i, x) => b.insert(i % (n + 1), x),
        Mutation::Delete(i) => {
            b.remove(i % n);
        }
        Mutation::Truncate(i) => b.truncate(i % n),
    }
}
