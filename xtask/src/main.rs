//! `cargo xtask <task>`: the project's entry points.
//!
//! - `setup`: install what a fresh machine lacks (Debian build tools, the pinned PyPI runtimes into
//!   a project-owned prefix). Idempotent and cached: a second run checks a stamp and returns.
//! - `test`: `setup`, build the virtual Level Zero platform (for the C++ tests; Rust tests get it
//!   through testkit), the gates, a dependent crate built on its own (`tests/consumer`, once), then
//!   per laptop profile the whole suite (`cargo test --workspace --features npu-sycl-bridge/sycl`)
//!   and the C++/CMake tests (ctest), then the Windows suite (`test-windows`).
//! - `test-windows`: the crate built for Windows and its Windows tests run under Wine with the real
//!   Windows OpenVINO NPU plugin on the virtual platform (`xtask/src/windows.rs`).
//! - `example`: `setup`, build the virtual platform, run `examples/forum_port.rs`.
//! - `bench`: `setup`, build the benches in release (`cargo bench --no-run`; the virtual platform
//!   comes with that build, through testkit), run `benches/pipeline.rs`, then `benches/report/`,
//!   which writes `<target>/bench/report.md` and its SVG plots (issue 13). Arguments after `--` go
//!   to the report (`--max-bytes N`, `--budget SECONDS`, `--profiles lnl,mtl`).
//! - `valgrind`: under valgrind's leak checker, child processes included: the virtual platform's own
//!   tests (its unit tests and `tests/virtual_platform.rs`), the NPU-path, pool and strategy tests,
//!   and both examples (run by `tests/examples.rs`); fails on any definite or indirect leak or memory
//!   error not suppressed with its reason in `xtask/valgrind.supp`. Not part of `test` (valgrind
//!   multiplies run time).
//! - `codegen`: regenerate `crates/level-zero-sys/src/generated.rs` (needs libclang; fetched by
//!   `setup --codegen`).

mod api;
mod codegen;
mod pins;
mod setup;
mod windows;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let rest = &args[args.len().min(1)..];
    let result = match task {
        "setup" => setup::run(rest.iter().any(|a| a == "--codegen")),
        "test" => test(rest),
        "test-windows" => windows::test(),
        "example" => example(rest),
        "bench" => bench(rest),
        "codegen" => setup::run(true).and_then(|_| codegen::run()),
        "api" => library_docs().and_then(|docs| api::check(&docs, rest.iter().any(|a| a == "--bless"))),
        "valgrind" => valgrind(rest),
        _ => {
            eprintln!(
                "usage: cargo xtask <setup [--codegen] | test [-- cargo-test-args] | test-windows | example | bench [-- report-args] | valgrind [rust | cpp] | codegen | api [--bless]>"
            );
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

pub(crate) fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Builds the virtual Level Zero platform (`libze_loader.so`, SONAME `libze_loader.so.1`) and the
/// directory `target/virtual-l0/` holding it under its SONAME, for C++ programs' LD_LIBRARY_PATH.
fn build_virtual_platform() -> Result<PathBuf, String> {
    run_cmd(cargo().args(["build", "--package", "virtual-l0"]))?;
    // Where cargo put it: `CARGO_TARGET_DIR` or `build.target-dir` may move it out of `target/`.
    let built = target_dir()?.join("debug/libze_loader.so");
    if !built.is_file() {
        return Err(format!("cargo build --package virtual-l0 did not produce {}", built.display()));
    }
    let dir = root().join("target/virtual-l0");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let link = dir.join("libze_loader.so.1");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&built, &link).map_err(|e| format!("symlink {}: {e}", link.display()))?;
    Ok(dir)
}

/// Cargo's target directory as `cargo metadata` reports it (honours `CARGO_TARGET_DIR` and
/// `build.target-dir`).
fn target_dir() -> Result<PathBuf, String> {
    let out = cargo()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(root())
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    json_string_field(&String::from_utf8_lossy(&out.stdout), "target_directory")
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata printed no target_directory".to_string())
}

/// The value of the top-level string field `key` of cargo's one-line JSON (no dependency on a JSON
/// crate, so that xtask builds fast on a fresh machine). Handles `\\`, `\"` and `\/` escapes.
pub(crate) fn json_string_field(json: &str, key: &str) -> Option<String> {
    let pattern = format!("\"{key}\":\"");
    let start = json.rfind(&pattern)? + pattern.len();
    let mut value = String::new();
    let mut chars = json[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => value.push(chars.next()?),
            c => value.push(c),
        }
    }
    None
}

/// The laptop profiles the whole suite runs under when `VL0_PROFILE` does not name one: every one
/// (tests that only make sense on some generations check the others' answer instead).
pub(crate) const TEST_PROFILES: [&str; 4] = ["lnl", "mtl", "arl", "ptl"];

/// The gates every change passes before the suite: formatting, clippy with every lint an error,
/// the docs as docs.rs builds them (every feature, no SYCL runtime), and the crate built and
/// tested without feature `sycl` (under the default laptop profile).
fn gates() -> Result<(), String> {
    eprintln!("xtask test: gates (rustfmt, clippy, docs, the crate without feature sycl)");
    run_cmd(cargo().args(["fmt", "--all", "--check"]))?;
    // The bindgen package is left out: it needs libclang and is run only by `cargo xtask codegen`.
    run_cmd(
        cargo()
            .args(["clippy", "--workspace", "--exclude", "level-zero-codegen", "--all-targets", "--all-features"])
            .args(["--", "-D", "warnings"]),
    )?;
    // The library, as docs.rs builds it, and its public surface against the committed snapshot; then
    // the development crate a dependent reads (also published).
    api::check(&library_docs()?, false)?;
    docs_rs_doc("npu-sycl-bridge-testkit")?;
    run_cmd(cargo().args(["test", "--package", "npu-sycl-bridge"]).env_remove("VL0_PROFILE"))
}

/// `package`'s docs as docs.rs builds them: every feature, no SYCL runtime needed, warnings are errors.
fn docs_rs_doc(package: &str) -> Result<(), String> {
    run_cmd(
        cargo()
            .args(["doc", "--no-deps", "--all-features", "--package", package])
            .env("DOCS_RS", "1")
            .env("RUSTDOCFLAGS", "-D warnings"),
    )
}

/// The library's docs as docs.rs builds them, and their directory.
fn library_docs() -> Result<PathBuf, String> {
    docs_rs_doc("npu-sycl-bridge")?;
    Ok(target_dir()?.join("doc").join("npu_sycl_bridge"))
}

fn test(extra: &[String]) -> Result<(), String> {
    setup::run(false)?;
    build_virtual_platform()?;
    gates()?;
    consumer_test()?;
    let profiles: Vec<String> = match std::env::var("VL0_PROFILE") {
        Ok(p) => vec![p],
        Err(_) => TEST_PROFILES.iter().map(|p| p.to_string()).collect(),
    };
    for profile in &profiles {
        eprintln!("xtask test: the whole suite under VL0_PROFILE={profile}");
        let mut cmd = cargo();
        cmd.env("VL0_PROFILE", profile);
        cmd.args(["test", "--workspace", "--features", "npu-sycl-bridge/sycl"]);
        cmd.args(extra.iter().skip_while(|a| *a == "--"));
        run_cmd(&mut cmd).map_err(|e| format!("VL0_PROFILE={profile}: {e}"))?;
        cmake_tests(profile).map_err(|e| format!("VL0_PROFILE={profile}: {e}"))?;
    }
    sanitized_cpp_tests()?;
    windows::test()
}

/// The C++ code (the SYCL core, the cxx shim and the C++ API, which cargo compiles there with the
/// sanitizers in `CXXFLAGS`) and its tests built with AddressSanitizer and
/// UndefinedBehaviorSanitizer (`-DNPU_SYCL_BRIDGE_SANITIZE=ON`, in `target/cmake-asan`) and run once
/// on the virtual platform under both DPC++ adapters, leak checking on: the SYCL core's tests, the C++
/// API's suite and both C++ examples. `TBB_ENABLE_SANITIZERS=1` makes OpenVINO's oneTBB open
/// `libtbbbind` without `RTLD_DEEPBIND`, which AddressSanitizer refuses. Left out: the fault sweep
/// (hundreds of runs) and the package tests (they build an uninstrumented consumer).
fn sanitized_cpp_tests() -> Result<(), String> {
    if !root().join("CMakeLists.txt").is_file() {
        return Ok(());
    }
    eprintln!("xtask test: the C++ code under AddressSanitizer and UndefinedBehaviorSanitizer");
    let build = cmake_build("target/cmake-asan", &["-DNPU_SYCL_BRIDGE_SANITIZE=ON".into()])?;
    run_cmd(
        Command::new("ctest")
            .env("ASAN_OPTIONS", "detect_leaks=1")
            .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
            .env("TBB_ENABLE_SANITIZERS", "1")
            .arg("--test-dir")
            .arg(&build)
            .args(["--output-on-failure", "--no-tests=error", "-E", "^(package\\.|.*fault_sweep)"]),
    )
}

/// A crate outside the workspace that depends on npu-sycl-bridge and testkit by path
/// (`tests/consumer`), built the way a user builds theirs: offline with this workspace's Cargo.lock,
/// in a target directory of its own (`<target>/consumer`, where nothing of this workspace's build
/// is), and with no `NPU_SYCL_BRIDGE_VIRTUAL_L0`. Its test activates the virtual platform that cargo
/// built for it, runs one inference of a reference model on the virtual NPU and compares it with
/// the reference. Its own target directory because cargo names a path dependency's cdylib without a
/// hash (`deps/libze_loader.so`): in a shared one, two builds whose dependency graphs differ (this
/// one and the workspace's) would write the same file.
fn consumer_test() -> Result<(), String> {
    eprintln!("xtask test: a dependent crate (tests/consumer) gets the virtual platform with its build");
    let dir = root().join("tests/consumer");
    let lock = dir.join("Cargo.lock");
    std::fs::copy(root().join("Cargo.lock"), &lock)
        .map_err(|e| format!("copy Cargo.lock to {}: {e}", lock.display()))?;
    run_cmd(
        cargo()
            .args(["test", "--offline", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", target_dir()?.join("consumer"))
            .env_remove("NPU_SYCL_BRIDGE_VIRTUAL_L0")
            .env_remove("VL0_PROFILE"),
    )
}

/// Configures the CMake project in `dir` (relative to the workspace) against the provisioned
/// runtimes, with `options`, and builds it; returns the build directory.
fn cmake_build(dir: &str, options: &[String]) -> Result<PathBuf, String> {
    let build = root().join(dir);
    run_cmd(
        Command::new("cmake")
            .args(["-S", ".", "-B"])
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", native_finder::provisioned_prefix().display()))
            .arg("-DCMAKE_BUILD_TYPE=Debug")
            .args(options),
    )?;
    run_cmd(Command::new("cmake").arg("--build").arg(&build).args(["--parallel", "2"]))?;
    Ok(build)
}

/// The C++/CMake integration (CMakeLists.txt), built and run with ctest, when it exists.
fn cmake_tests(profile: &str) -> Result<(), String> {
    if !root().join("CMakeLists.txt").is_file() {
        return Ok(());
    }
    let build = cmake_build("target/cmake", &[])?;
    run_cmd(Command::new("ctest").env("VL0_PROFILE", profile).arg("--test-dir").arg(&build).arg("--output-on-failure"))
}

fn example(extra: &[String]) -> Result<(), String> {
    setup::run(false)?;
    build_virtual_platform()?;
    let mut cmd = cargo();
    cmd.args(["run", "--quiet", "--features", "sycl", "--example", "forum_port", "--"]);
    cmd.args(extra);
    run_cmd(&mut cmd)
}

/// The benchmark report (issue 13): everything built in release with feature `sycl` (the pipeline
/// bench needs it; one feature set, so one build), the pipeline's overlap ratio measured first and
/// handed to the report, which runs every other measurement and writes the Markdown and the plots.
fn bench(extra: &[String]) -> Result<(), String> {
    setup::run(false)?;
    let out = target_dir()?.join("bench");
    std::fs::create_dir_all(&out).map_err(|e| format!("create {}: {e}", out.display()))?;
    let features = ["--features", "sycl"];
    run_cmd(cargo().args(["bench", "--no-run"]).args(features).args(["--bench", "report", "--bench", "pipeline"]))?;
    // A stale pipeline result must not reach a new report.
    let pipeline = out.join("pipeline.txt");
    let _ = std::fs::remove_file(&pipeline);
    let mut cmd = cargo();
    cmd.args(["bench", "--quiet"]).args(features).args(["--bench", "pipeline"]).env_remove("VL0_PROFILE");
    eprintln!("xtask: $ {}", describe(&cmd));
    let result = cmd.current_dir(root()).output().map_err(|e| format!("{}: {e}", describe(&cmd)))?;
    let text = String::from_utf8_lossy(&result.stdout);
    print!("{text}");
    if !result.status.success() {
        return Err(format!("`{}` failed with {}", describe(&cmd), result.status));
    }
    let line = text.lines().filter(|l| l.starts_with("pipeline")).collect::<Vec<_>>().join("\n");
    std::fs::write(&pipeline, line).map_err(|e| format!("write {}: {e}", pipeline.display()))?;
    run_cmd(
        cargo()
            .args(["bench"])
            .args(features)
            .args(["--bench", "report", "--", "--out"])
            .arg(&out)
            .arg("--pipeline")
            .arg(&pipeline)
            .args(extra.iter().skip_while(|a| *a == "--")),
    )?;
    eprintln!("xtask bench: report in {}", out.join("report.md").display());
    Ok(())
}

/// The leak checker over the Rust tests (`rust`), the C++ API's tests and examples (`cpp`), or both
/// (no argument).
fn valgrind(rest: &[String]) -> Result<(), String> {
    let (rust, cpp) = match rest.first().map(String::as_str) {
        None => (true, true),
        Some("rust") => (true, false),
        Some("cpp") => (false, true),
        Some(other) => return Err(format!("valgrind: unknown part {other:?} (rust or cpp)")),
    };
    setup::run(false)?;
    let virtual_l0 = build_virtual_platform()?;
    if Command::new("valgrind").arg("--version").output().is_err() {
        return Err("valgrind is not installed (apt-get install valgrind)".into());
    }
    if rust {
        valgrind_rust()?;
    }
    if cpp {
        valgrind_cpp(&virtual_l0)?;
    }
    Ok(())
}

/// valgrind's leak checker as every run of `cargo xtask valgrind` uses it: definite and indirect
/// leaks and memory errors fail the run (exit code 9), with this project's suppressions.
fn memcheck() -> Command {
    let mut cmd = Command::new("valgrind");
    cmd.args(["--quiet", "--leak-check=full", "--show-leak-kinds=definite,indirect"])
        .arg(format!("--suppressions={}", root().join("xtask/valgrind.supp").display()))
        .args(["--errors-for-leak-kinds=definite,indirect", "--error-exitcode=9"]);
    cmd
}

fn valgrind_rust() -> Result<(), String> {
    let mut exes = test_executables(&["--package", "virtual-l0", "--lib"])?;
    exes.extend(test_executables(&["--package", "npu-sycl-bridge", "--test", "virtual_platform"])?);
    // The NPU paths, the pool and the strategies (their child processes too), and the examples
    // (run as children by tests/examples.rs).
    let sycl = ["--package", "npu-sycl-bridge", "--features", "sycl"];
    for test in ["npu_memory_paths", "npu_import_and_pool", "strategies", "examples"] {
        exes.extend(test_executables(&[&sycl[..], &["--test", test]].concat())?);
    }
    for exe in exes {
        run_cmd(
            memcheck()
                .arg("--trace-children=yes")
                // Children are the test binary itself (child-process tests); compilers a test runs are not ours.
                .arg("--trace-children-skip=/usr/bin/*,/bin/*")
                .arg(&exe)
                .arg("--test-threads=2"),
        )?;
    }
    Ok(())
}

/// The C++ API under the leak checker: the CMake project configured and built as for ctest, in
/// `target/cmake-valgrind` (an ordinary build: valgrind needs no instrumentation, and unlike
/// AddressSanitizer it runs the programs that load OpenVINO), then each group of
/// `tests/cpp/npu_api_test` and both C++ examples in a process of its own on the virtual platform
/// (`virtual_l0` holds it as `libze_loader.so.1`), under DPC++'s default adapter.
fn valgrind_cpp(virtual_l0: &Path) -> Result<(), String> {
    if !root().join("CMakeLists.txt").is_file() {
        return Ok(());
    }
    eprintln!("xtask valgrind: the C++ API's tests and examples");
    let build =
        cmake_build("target/cmake-valgrind", &[format!("-DNPU_SYCL_BRIDGE_VIRTUAL_L0_DIR={}", virtual_l0.display())])?;
    let api_test = build.join("tests/cpp/npu_api_test");
    let mut runs: Vec<(PathBuf, Option<&str>)> = ["strategies", "imports", "errors", "destruction", "pool"]
        .into_iter()
        .map(|group| (api_test.clone(), Some(group)))
        .collect();
    runs.extend(["forum_snippet", "memory_pool"].map(|example| (build.join(example), None)));
    for (exe, group) in runs {
        let started = std::time::Instant::now();
        run_cmd(memcheck().env("LD_LIBRARY_PATH", virtual_l0).arg(&exe).args(group))?;
        let name = exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        eprintln!("xtask valgrind: {name} {} clean in {:.0?}", group.unwrap_or(""), started.elapsed());
    }
    Ok(())
}

/// The test executables `cargo test --no-run <args>` builds (from cargo's JSON messages).
fn test_executables(args: &[&str]) -> Result<Vec<PathBuf>, String> {
    let out = cargo()
        .args(["test", "--no-run", "--message-format=json"])
        .args(args)
        .current_dir(root())
        .output()
        .map_err(|e| format!("cargo test --no-run: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo test --no-run {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    let exes: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| json_string_field(line, "executable"))
        .map(PathBuf::from)
        .collect();
    if exes.is_empty() {
        return Err(format!("cargo test --no-run {} built no test executable", args.join(" ")));
    }
    Ok(exes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_directory_is_read_from_cargo_metadata() {
        let json =
            r#"{"packages":[{"name":"x","target_directory":"no"}],"target_directory":"/tmp/a \"b\"\\c","version":1}"#;
        assert_eq!(json_string_field(json, "target_directory").as_deref(), Some(r#"/tmp/a "b"\c"#));
        assert_eq!(json_string_field(json, "workspace_root"), None);
        // The real thing: an absolute directory, wherever CARGO_TARGET_DIR points.
        assert!(target_dir().unwrap().is_absolute());
    }
}
