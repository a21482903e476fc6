//! `cargo xtask test-windows` (also the last step of `cargo xtask test`): the crate built for
//! `x86_64-pc-windows-gnu` and its Windows tests run under Wine, with the real Windows OpenVINO
//! runtime and NPU plugin on the virtual platform built as `ze_loader.dll`.
//!
//! Provisioned once and cached, under `<project home>/windows`:
//! - the Debian packages of `[debian] windows` (mingw-w64, Wine) and the rustup targets (`-gnu`, and
//!   `-msvc`, which is type-checked only: there is no MSVC linker here);
//! - `prefix/`: the `[windows] wheels` at their `[pypi]` versions, unpacked as pip lays out a
//!   Windows environment (`Lib\site-packages\openvino\libs\openvino_c.dll`, `Library\bin\*.dll`),
//!   so the bridge finds OpenVINO the way it does on Windows (native-finder's provisioned prefix);
//! - `wine/`: a Wine prefix, with `bcryptprimitives.dll` built from `xtask/windows/` where Wine lacks
//!   it (Rust's standard library imports `ProcessPrng` from it; Wine 8 has none).
//!
//! The tests: clippy for the Windows target (feature `sycl`, the C++ API's Rust half and the doctor
//! too), a type-check for `-msvc`, the C++ compiled against the Windows headers, then under each
//! laptop profile, with Wine as cargo's runner: the library's unit tests and [`WINDOWS_TESTS`], one
//! test at a time (they read process-wide counters and handle values), and the doctor's Windows
//! report (`crates/doctor/tests/windows.rs`).

use crate::pins::Pins;
use crate::{cargo, run_cmd, TEST_PROFILES};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "x86_64-pc-windows-gnu";
/// Checked (not linked: no MSVC here) so that nothing mingw-only creeps in.
const MSVC_TARGET: &str = "x86_64-pc-windows-msvc";
const WINE: &str = "/usr/lib/wine/wine64";
/// The library's test files that build for Windows: the Windows paths, and the ones about
/// OpenVINO and the NPU that use no fd, `/proc` or SYCL.
const WINDOWS_TESTS: [&str; 3] = ["windows", "openvino_cpu", "without_mutable_command_lists"];

pub fn test() -> Result<(), String> {
    let env = provision()?;
    eprintln!("xtask test-windows: clippy for {TARGET}");
    let clippy =
        |args: &[&str]| run_cmd(cargo().args(["clippy", "--target", TARGET]).args(args).args(["--", "-D", "warnings"]));
    clippy(&["--package", "virtual-l0", "--package", "npu-sycl-bridge-testkit", "--lib"])?;
    clippy(&["--package", "native-finder", "--all-targets"])?;
    let tests: Vec<&str> = WINDOWS_TESTS.iter().flat_map(|t| ["--test", t]).collect();
    clippy(&[&["--package", "npu-sycl-bridge", "--lib"][..], &tests].concat())?;
    // Feature `sycl` and the C++ API's Rust half: their C++ is not compiled across OSes (build.rs).
    clippy(&[
        "--package",
        "npu-sycl-bridge",
        "--package",
        "npu-sycl-bridge-cpp",
        "--features",
        "npu-sycl-bridge/sycl",
        "--lib",
    ])?;
    clippy(&[
        "--package",
        "npu-sycl-doctor",
        "--no-default-features",
        "--bin",
        "npu-sycl-doctor",
        "--test",
        "windows",
    ])?;
    cpp_compiles_for_windows(&env.home.join("prefix"))?;
    eprintln!("xtask test-windows: the library and the virtual platform type-check for {MSVC_TARGET}");
    run_cmd(cargo().args([
        "check",
        "--target",
        MSVC_TARGET,
        "--package",
        "npu-sycl-bridge",
        "--package",
        "virtual-l0",
    ]))?;
    let profiles: Vec<String> = match std::env::var("VL0_PROFILE") {
        Ok(p) => vec![p],
        Err(_) => TEST_PROFILES.iter().map(|p| p.to_string()).collect(),
    };
    // Where the bridge finds OpenVINO and SYCL on Windows (native-finder's Windows layouts).
    let mut cmd = cargo();
    env.apply(&mut cmd);
    run_cmd(cmd.args(["test", "--target", TARGET, "--package", "native-finder", "--lib"]))?;
    for profile in &profiles {
        eprintln!("xtask test-windows: the Windows suite under Wine, VL0_PROFILE={profile}");
        let mut cmd = cargo();
        env.apply(&mut cmd);
        cmd.env("VL0_PROFILE", profile);
        cmd.args(["test", "--target", TARGET, "--package", "npu-sycl-bridge", "--lib"]);
        cmd.args(WINDOWS_TESTS.iter().flat_map(|t| ["--test", t]));
        cmd.args(["--", "--test-threads=1"]);
        run_cmd(&mut cmd).map_err(|e| format!("Windows suite, VL0_PROFILE={profile}: {e}"))?;
        // The doctor's Windows report (built without SYCL), each run its own process under Wine.
        let mut cmd = cargo();
        env.apply(&mut cmd);
        cmd.env("VL0_PROFILE", profile);
        cmd.args(["test", "--target", TARGET, "--package", "npu-sycl-doctor", "--no-default-features"]);
        cmd.args(["--test", "windows"]);
        run_cmd(&mut cmd).map_err(|e| format!("the doctor under Wine, VL0_PROFILE={profile}: {e}"))?;
    }
    Ok(())
}

/// The C++ code (the SYCL shim and the C++ API) checked by mingw-w64's g++ against the Windows
/// wheels' SYCL and OpenVINO headers, `_WIN32` paths included (`-fsyntax-only`: DPC++'s Windows
/// runtime is MSVC-built, so nothing is linked). cxx's generated headers are target-independent:
/// they come from this machine's build of the C++ API.
fn cpp_compiles_for_windows(prefix: &Path) -> Result<(), String> {
    eprintln!("xtask test-windows: the C++ code against the Windows SYCL and OpenVINO headers");
    let out = cargo()
        .args(["build", "--package", "npu-sycl-bridge-cpp", "--message-format=json"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cargo build: {e}"))?;
    if !out.status.success() {
        return Err("cargo build --package npu-sycl-bridge-cpp failed".into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let generated: Vec<PathBuf> = stdout
        .lines()
        .filter(|l| l.contains("\"reason\":\"build-script-executed\""))
        .filter(|l| crate::json_string_field(l, "package_id").is_some_and(|id| id.contains("npu-sycl-bridge")))
        .filter_map(|l| crate::json_string_field(l, "out_dir"))
        .map(|d| PathBuf::from(d).join("cxxbridge/include"))
        .filter(|d| d.is_dir())
        .collect();
    if generated.len() != 2 {
        return Err(format!("expected the cxx headers of the shim and of the C++ API, found {generated:?}"));
    }
    for source in ["cpp/sycl_core.cpp", "cpp/sycl_shim.cpp", "cpp/npu_api.cpp"] {
        let mut cmd = Command::new("x86_64-w64-mingw32-g++-posix");
        cmd.args(["-std=c++17", "-fsyntax-only", "-Werror=return-type", "-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING"])
            .arg(format!("-I{}", crate::root().join("include").display()))
            .arg(format!("-I{}", prefix.join("Library/include").display()))
            .arg(format!("-I{}", prefix.join("Lib/site-packages/openvino/include").display()));
        for g in &generated {
            cmd.arg(format!("-I{}", g.display()));
        }
        run_cmd(cmd.arg(crate::root().join(source)))?;
    }
    Ok(())
}

/// What a Windows test process under Wine needs in its environment.
struct WineEnv {
    wine_prefix: PathBuf,
    home: PathBuf,
}

impl WineEnv {
    fn apply(&self, cmd: &mut Command) {
        let runner = format!("CARGO_TARGET_{}_RUNNER", TARGET.to_uppercase().replace('-', "_"));
        cmd.env(runner, WINE)
            .env("WINEPREFIX", &self.wine_prefix)
            .env("WINEDEBUG", "-all")
            // Wine shows the Unix root as drive Z:; the bridge finds OpenVINO in this prefix as a
            // Windows program finds a provisioned one.
            .env("NPU_SYCL_BRIDGE_HOME", windows_path(&self.home))
            .env_remove("NPU_SYCL_BRIDGE_OPENVINO_C");
    }
}

/// `/a/b` as Wine's `Z:\a\b`.
fn windows_path(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

fn provision() -> Result<WineEnv, String> {
    let pins = Pins::load()?;
    let debs = pins.section("debian")?.get("windows").cloned().unwrap_or_default();
    crate::setup::debian_packages(&debs)?;
    rust_targets()?;
    let home = native_finder::project_home().join("windows");
    wheels(&pins, &home)?;
    let wine_prefix = home.join("wine");
    wine_prefix_with_shims(&wine_prefix)?;
    Ok(WineEnv { wine_prefix, home })
}

fn rust_targets() -> Result<(), String> {
    let installed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    let installed = installed.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let missing: Vec<&str> =
        [TARGET, MSVC_TARGET].into_iter().filter(|t| !installed.lines().any(|l| l.trim() == *t)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    run_cmd(Command::new("rustup").args(["target", "add"]).args(missing))
}

/// Downloads the Windows wheels and unpacks them into `<home>/prefix` (a stamp holding the wanted
/// wheels decides whether to skip).
fn wheels(pins: &Pins, home: &Path) -> Result<(), String> {
    let pypi = pins.section("pypi")?;
    let names = pins.section("windows")?.get("wheels").cloned().unwrap_or_default();
    let mut wanted = Vec::new();
    for name in &names {
        let version =
            pypi.get(name).and_then(|v| v.first()).ok_or_else(|| format!("[windows] {name} has no [pypi] pin"))?;
        wanted.push(format!("{name}=={version}"));
    }
    let prefix = home.join("prefix");
    let stamp = prefix.join(".npu-sycl-bridge-stamp");
    let want = wanted.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) {
        return Ok(());
    }
    eprintln!("xtask test-windows: the Windows wheels {} into {}", wanted.join(" "), prefix.display());
    // Downloaded and unpacked in directories of this run's own, then moved into place: a run that
    // stops half-way, or another checkout's run at the same time, never leaves a half prefix.
    let download = home.join(format!("wheels.{}", std::process::id()));
    let unpacked = home.join(format!("prefix.{}", std::process::id()));
    let result = (|| {
        std::fs::create_dir_all(&download).map_err(|e| format!("{}: {e}", download.display()))?;
        run_cmd(
            Command::new("python3")
                .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"])
                .args(["--only-binary=:all:", "--platform", "win_amd64", "--dest"])
                .arg(&download)
                .args(&wanted),
        )
        .map_err(|e| {
            format!("{e}\n  pip could not download the Windows wheels (is PyPI reachable?): rerun to retry")
        })?;
        run_cmd(Command::new("python3").args(["-c", UNPACK]).arg(&download).arg(&unpacked))?;
        if !unpacked.join("Lib/site-packages/openvino/libs/openvino_c.dll").is_file() {
            return Err("the openvino wheel left no Lib/site-packages/openvino/libs/openvino_c.dll".to_string());
        }
        std::fs::write(unpacked.join(".npu-sycl-bridge-stamp"), &want).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::rename(&unpacked, &prefix).map_err(|e| format!("{} -> {}: {e}", unpacked.display(), prefix.display()))
    })();
    let _ = std::fs::remove_dir_all(&download);
    let _ = std::fs::remove_dir_all(&unpacked);
    result
}

/// Unpacks every wheel of argv[1] into the Windows environment argv[2] as pip would: a wheel's
/// `<name>.data/data/...` at the environment's root, the rest in `Lib/site-packages`.
const UNPACK: &str = r#"
import pathlib, sys, zipfile
src, prefix = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for wheel in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            if info.is_dir():
                continue
            parts = info.filename.split("/")
            if parts[0].endswith(".data") and len(parts) > 2 and parts[1] == "data":
                dest = prefix.joinpath(*parts[2:])
            elif parts[0].endswith(".data") and len(parts) > 2:
                dest = prefix.joinpath("Lib", "site-packages", *parts[2:])
            else:
                dest = prefix.joinpath("Lib", "site-packages", *parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(info))
"#;

/// A Wine prefix (created once), with the shim DLLs Wine lacks.
fn wine_prefix_with_shims(wine_prefix: &Path) -> Result<(), String> {
    if !wine_prefix.join("system.reg").is_file() {
        eprintln!("xtask test-windows: creating the Wine prefix {}", wine_prefix.display());
        run_cmd(
            Command::new(WINE)
                .args(["wineboot", "--init"])
                .env("WINEPREFIX", wine_prefix)
                .env("WINEDEBUG", "-all")
                .env("DISPLAY", ""),
        )?;
    }
    let shim = wine_prefix.join("drive_c/windows/system32/bcryptprimitives.dll");
    if !shim.is_file() {
        let source = crate::root().join("xtask/windows/bcryptprimitives.c");
        run_cmd(
            Command::new("x86_64-w64-mingw32-gcc")
                .args(["-shared", "-O2", "-o"])
                .arg(&shim)
                .arg(&source)
                .arg("-ladvapi32"),
        )?;
    }
    Ok(())
}
