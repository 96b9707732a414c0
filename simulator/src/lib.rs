//! simulator (being written)
