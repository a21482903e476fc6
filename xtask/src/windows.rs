//! `cargo xtask test-windows` (also the last step of `cargo xtask test`): the crate built for
//! `x86_64-pc-windows-gnu` and its Windows tests run under Wine, with the real Windows OpenVINO
//! runtime and NPU plugin on the virtual platform built as `ze_loader.dll`.
//!
//! Provisioned once and cached, under `<project home>/windows`:
//! - the Debian packages of `[debian] windows` (mingw-w64, Wine) and the rustup target;
//! - `prefix/`: the `[windows] wheels` at their `[pypi]` versions, unpacked as pip lays out a
//!   Windows environment (`Lib\site-packages\openvino\libs\openvino_c.dll`, `Library\bin\*.dll`),
//!   so the bridge finds OpenVINO the way it does on Windows (native-finder's provisioned prefix);
//! - `wine/`: a Wine prefix, with `bcryptprimitives.dll` built from `xtask/windows/` where Wine lacks
//!   it (Rust's standard library imports `ProcessPrng` from it; Wine 8 has none).
//!
//! The tests: clippy for the Windows target, then the library's unit tests and `tests/windows.rs`
//! with Wine as cargo's runner, one test at a time (they read process-wide counters and handle
//! values), under each laptop profile.

use crate::pins::Pins;
use crate::{cargo, run_cmd, TEST_PROFILES};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "x86_64-pc-windows-gnu";
const WINE: &str = "/usr/lib/wine/wine64";

pub fn test() -> Result<(), String> {
    let env = provision()?;
    eprintln!("xtask test-windows: clippy for {TARGET}");
    let clippy =
        |args: &[&str]| run_cmd(cargo().args(["clippy", "--target", TARGET]).args(args).args(["--", "-D", "warnings"]));
    clippy(&["--package", "virtual-l0", "--package", "npu-sycl-bridge-testkit", "--lib"])?;
    clippy(&["--package", "npu-sycl-bridge", "--lib", "--test", "windows"])?;
    let profiles: Vec<String> = match std::env::var("VL0_PROFILE") {
        Ok(p) => vec![p],
        Err(_) => TEST_PROFILES.iter().map(|p| p.to_string()).collect(),
    };
    for profile in &profiles {
        eprintln!("xtask test-windows: the Windows suite under Wine, VL0_PROFILE={profile}");
        let mut cmd = cargo();
        env.apply(&mut cmd);
        cmd.env("VL0_PROFILE", profile);
        cmd.args(["test", "--target", TARGET, "--package", "npu-sycl-bridge", "--lib", "--test", "windows"]);
        cmd.args(["--", "--test-threads=1"]);
        run_cmd(&mut cmd).map_err(|e| format!("Windows suite, VL0_PROFILE={profile}: {e}"))?;
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
    rust_target()?;
    let home = native_finder::project_home().join("windows");
    wheels(&pins, &home)?;
    let wine_prefix = home.join("wine");
    wine_prefix_with_shims(&wine_prefix)?;
    Ok(WineEnv { wine_prefix, home })
}

fn rust_target() -> Result<(), String> {
    let installed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    if installed.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == TARGET)) {
        return Ok(());
    }
    run_cmd(Command::new("rustup").args(["target", "add", TARGET]))
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
    let download = home.join("wheels");
    let _ = std::fs::remove_dir_all(&download);
    let _ = std::fs::remove_dir_all(&prefix);
    std::fs::create_dir_all(&download).map_err(|e| format!("{}: {e}", download.display()))?;
    run_cmd(
        Command::new("python3")
            .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"])
            .args(["--only-binary=:all:", "--platform", "win_amd64", "--dest"])
            .arg(&download)
            .args(&wanted),
    )
    .map_err(|e| format!("{e}\n  pip could not download the Windows wheels (is PyPI reachable?): rerun to retry"))?;
    run_cmd(Command::new("python3").args(["-c", UNPACK]).arg(&download).arg(&prefix))?;
    if !prefix.join("Lib/site-packages/openvino/libs/openvino_c.dll").is_file() {
        return Err(format!(
            "the openvino wheel left no Lib/site-packages/openvino/libs/openvino_c.dll in {}",
            prefix.display()
        ));
    }
    std::fs::write(&stamp, want).map_err(|e| format!("{}: {e}", stamp.display()))?;
    std::fs::remove_dir_all(&download).map_err(|e| format!("{}: {e}", download.display()))
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
