//! `cargo xtask <task>`: the project's entry points.
//!
//! - `setup`: install what a fresh machine lacks (Debian build tools, the pinned PyPI runtimes into
//!   a project-owned prefix). Idempotent and cached: a second run checks a stamp and returns.
//! - `test`: `setup`, build the virtual Level Zero platform, run the whole suite
//!   (`cargo test --workspace --features sycl`), then the C++/CMake tests (ctest).
//! - `example`: `setup`, build the virtual platform, run `examples/forum_port.rs`.
//! - `codegen`: regenerate `crates/level-zero-sys/src/generated.rs` (needs libclang; fetched by
//!   `setup --codegen`).

mod codegen;
mod pins;
mod setup;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let rest = &args[args.len().min(1)..];
    let result = match task {
        "setup" => setup::run(rest.iter().any(|a| a == "--codegen")),
        "test" => test(rest),
        "example" => example(rest),
        "codegen" => setup::run(true).and_then(|_| codegen::run()),
        _ => {
            eprintln!("usage: cargo xtask <setup [--codegen] | test [-- cargo-test-args] | example | codegen>");
            return if task == "help" { ExitCode::SUCCESS } else { ExitCode::from(2) };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (xtask's parent directory).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Runs a command in the workspace root, failing with its description when it fails.
pub fn run_cmd(cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: $ {}", describe(cmd));
    let status = cmd.current_dir(root()).status().map_err(|e| format!("{}: {e}", describe(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed with {status}", describe(cmd)))
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Builds the virtual Level Zero platform (`libze_loader.so`, SONAME `libze_loader.so.1`) and the
/// directory `target/virtual-l0/` holding it under its SONAME, for C++ programs' LD_LIBRARY_PATH.
fn build_virtual_platform() -> Result<PathBuf, String> {
    run_cmd(cargo().args(["build", "--package", "virtual-l0"]))?;
    let built = root().join("target/debug/libze_loader.so");
    let dir = root().join("target/virtual-l0");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let link = dir.join("libze_loader.so.1");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&built, &link).map_err(|e| format!("symlink {}: {e}", link.display()))?;
    Ok(dir)
}

fn test(extra: &[String]) -> Result<(), String> {
    setup::run(false)?;
    build_virtual_platform()?;
    let mut cmd = cargo();
    cmd.args(["test", "--workspace", "--features", "npu-sycl-bridge/sycl"]);
    cmd.args(extra.iter().skip_while(|a| *a == "--"));
    run_cmd(&mut cmd)?;
    cmake_tests()
}

/// The C++/CMake integration (CMakeLists.txt), built and run with ctest, when it exists.
fn cmake_tests() -> Result<(), String> {
    if !root().join("CMakeLists.txt").is_file() {
        return Ok(());
    }
    let prefix = native_finder::provisioned_prefix();
    let build = root().join("target/cmake");
    run_cmd(
        Command::new("cmake")
            .args(["-S", ".", "-B"])
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())),
    )?;
    run_cmd(Command::new("cmake").arg("--build").arg(&build).args(["--parallel", "2"]))?;
    run_cmd(Command::new("ctest").arg("--test-dir").arg(&build).arg("--output-on-failure"))
}

fn example(extra: &[String]) -> Result<(), String> {
    setup::run(false)?;
    build_virtual_platform()?;
    let mut cmd = cargo();
    cmd.args(["run", "--quiet", "--features", "sycl", "--example", "forum_port", "--"]);
    cmd.args(extra);
    run_cmd(&mut cmd)
}
