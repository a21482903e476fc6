//! Raw Level Zero bindings (being written).
