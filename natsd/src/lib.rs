//! natsd (being written)
