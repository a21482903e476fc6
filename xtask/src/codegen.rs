//! Regenerates what is derived from the pinned Level Zero headers (fetched by `setup --codegen`):
//! `crates/level-zero-sys/src/generated.rs` (bindgen) and the virtual platform's UNSUPPORTED stubs
//! `crates/virtual-l0/src/api/stubs.rs` (`crates/virtual-l0/tools/gen_stubs.py`). bindgen lives in its own package so that ordinary builds of
//! xtask (and so `cargo xtask test` on CI) never compile it.

use crate::{root, run_cmd};
use std::process::Command;

pub fn run() -> Result<(), String> {
    let out = root().join("crates/level-zero-sys/src/generated.rs");
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["run", "--quiet", "--package", "level-zero-codegen", "--"])
        .arg(native_finder::level_zero_headers())
        .arg(&out);
    run_cmd(&mut cmd)?;
    run_cmd(Command::new("rustfmt").args(["--edition", "2021"]).arg(&out))?;
    run_cmd(
        Command::new("python3")
            .arg(root().join("crates/virtual-l0/tools/gen_stubs.py"))
            .arg(native_finder::level_zero_headers().join("level_zero")),
    )
}
