//! replayer (being written)
