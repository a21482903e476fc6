//! Virtual Level Zero platform (being written).
