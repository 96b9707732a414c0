//! api (being written)
