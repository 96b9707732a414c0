//! The ledger's faces: narrow views of an open `Ledger`, one per kind of caller.
//!
//! - `Writer`: appends and the admin acts that change what the ledger holds.
//! - `Reader`: events, rounds, heads, quarantine, and the logs of the acts.
//! - `Verifier`: what an auditor runs: `verify`, the digest, the logs' checks.
//! - `Tier`: the archive tier's moves, retention and compaction.
//!
//! A face borrows the ledger; `Ledger::reader()` and its siblings hand one out. Each
//! face dereferences to the `Ledger` it borrows, so its methods share the owner's state.

use crate::owner::Ledger;

macro_rules! face {
    ($(#[$doc:meta])* $name:ident, $getter:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name<'a> {
            ledger: &'a Ledger,
        }

        impl std::ops::Deref for $name<'_> {
            type Target = Ledger;
            fn deref(&self) -> &Ledger {
                self.ledger
            }
        }

        impl Ledger {
            #[doc = concat!("The `", stringify!($name), "` face of this ledger.")]
            pub fn $getter(&self) -> $name<'_> {
                $name { ledger: self }
            }
        }
    };
}

face!(
    /// Appends and the admin acts: the one face that changes what the ledger holds.
    Writer,
    writer
);
face!(
    /// Reads: events, rounds, heads, quarantine, settings and the logs of the acts.
    Reader,
    reader
);
face!(
    /// What an auditor runs: `verify`, the digest, and the checks of the acts' logs.
    Verifier,
    verifier
);
face!(
    /// The archive tier: moves to day files, retention, and value-log compaction.
    Tier,
    tier
);

impl<'a> Reader<'a> {
    /// The ledger this face borrows, for the whole of its borrow: what the reads that
    /// return an iterator over the store hold on to.
    pub(crate) fn ledger(self) -> &'a Ledger {
        self.ledger
    }
}
