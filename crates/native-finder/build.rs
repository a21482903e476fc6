//! Build script: the only place native-finder runs `python3`.
//!
//! Step 3 of both searches (a pip-installed `openvino` / `intel-sycl-rt`) needs to ask `python3` where
//! its packages are. A library must not start processes at run time, so the question is asked here,
//! once per build, and the answers are baked in (`NATIVE_FINDER_PIP_OPENVINO`,
//! `NATIVE_FINDER_PIP_SYCL_PREFIX`; empty when python3 or the package is missing). The searches then
//! only look at files.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Which python3 answers, and where it looks.
    for var in ["PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // The build machine's python3 knows only its own OS's packages: a cross build asks nothing.
    let native = std::env::var("CARGO_CFG_TARGET_OS").ok().as_deref() == Some(std::env::consts::OS);
    let ask = |code: &str| if native { python(code) } else { None };
    let openvino = ask("import openvino, os; print(os.path.dirname(openvino.__file__))");
    let sycl = ask("import importlib.metadata as m, sys; m.distribution('intel-sycl-rt'); print(sys.prefix)");
    println!("cargo:rustc-env=NATIVE_FINDER_PIP_OPENVINO={}", openvino.unwrap_or_default());
    println!("cargo:rustc-env=NATIVE_FINDER_PIP_SYCL_PREFIX={}", sycl.unwrap_or_default());
}

/// Runs `python3 -c <code>` and returns its trimmed stdout, if it succeeded.
fn python(code: &str) -> Option<String> {
    let out = Command::new("python3").args(["-c", code]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}
