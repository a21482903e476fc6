//! Small reference models (built in Rust as OpenVINO IR).
