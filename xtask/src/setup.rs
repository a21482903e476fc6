//! Provisioning: installs what a fresh machine lacks, from the registries only, and caches it.
//!
//! - Debian packages from `[debian] build` (and `codegen` with `--codegen`) when `dpkg` says they are
//!   missing. `apt-get update` runs only when something must be installed.
//! - The `[pypi]` pins into a Python virtual environment at the provisioned prefix (outside the
//!   source tree; never the system Python). A stamp holding the pins decides whether to skip.
//! - With `--codegen`: Debian trixie's `libze-dev` headers, fetched with a private apt state and
//!   unpacked (not installed) into the Level Zero headers directory.

use crate::pins::Pins;
use crate::run_cmd;
use std::path::Path;
use std::process::Command;

pub fn run(codegen: bool) -> Result<(), String> {
    let pins = Pins::load()?;
    let mut debs: Vec<String> = pins.section("debian")?.get("build").cloned().unwrap_or_default();
    if codegen {
        debs.extend(pins.section("debian")?.get("codegen").cloned().unwrap_or_default());
    }
    // python3-venv only serves `python3 -m venv` with Debian's own python3, and only until the prefix exists.
    // (A stamp is written only into a prefix whose pip worked: checking it first keeps the cached run fast.)
    let prefix = native_finder::provisioned_prefix();
    if !system_python() || prefix.join(STAMP).is_file() || has_pip(&prefix) {
        debs.retain(|p| p != "python3-venv");
    }
    debian_packages(&debs)?;
    pypi_runtimes(&pins)?;
    if codegen {
        level_zero_headers(&pins)?;
    }
    Ok(())
}

/// Whether `python3` on PATH is the distribution's (under /usr), rather than pyenv's, conda's or a
/// self-built one that brings its own venv support.
fn system_python() -> bool {
    std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|d| d.join("python3")).find(|p| p.is_file()))
        .and_then(|p| std::fs::canonicalize(p).ok())
        .is_some_and(|p| p.starts_with("/usr/"))
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

pub(crate) fn debian_packages(pkgs: &[String]) -> Result<(), String> {
    let missing: Vec<&str> = pkgs.iter().filter(|p| !installed(p)).map(String::as_str).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let by_hand = format!("apt-get install -y {}", missing.join(" "));
    eprintln!("xtask setup: installing Debian packages {missing:?}");
    let sudo = !is_root();
    if sudo && !on_path("sudo") {
        return Err(format!(
            "the Debian packages {missing:?} are missing, and this user is not root and has no `sudo`: as root, run \
             `{by_hand}`, then rerun"
        ));
    }
    let apt = |args: &[&str]| {
        let mut c = if sudo { Command::new("sudo") } else { Command::new("apt-get") };
        if sudo {
            c.arg("apt-get");
        }
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    let hint = |e: String| {
        format!(
            "{e}\n  could not install the Debian packages {missing:?} (is the network to your apt mirror up? does \
             `sudo` work for this user?): run `{}{by_hand}` yourself, then rerun",
            if sudo { "sudo " } else { "" }
        )
    };
    // Without network `apt-get update` only warns and exits 0; the install below then fails.
    run_cmd(&mut apt(&["update", "-qq"])).map_err(hint)?;
    let mut install = apt(&["install", "-y", "-qq", "--no-install-recommends"]);
    install.args(&missing);
    run_cmd(&mut install).map_err(hint)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc_geteuid() == 0 }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// Written into the prefix once pip has installed every pin; its content is the pins.
const STAMP: &str = ".npu-sycl-bridge-stamp";

fn pypi_runtimes(pins: &Pins) -> Result<(), String> {
    let prefix = native_finder::provisioned_prefix();
    let requirements: Vec<String> = pins
        .section("pypi")?
        .iter()
        .map(|(name, v)| format!("{name}=={}", v.first().map(String::as_str).unwrap_or("")))
        .collect();
    let stamp = prefix.join(STAMP);
    let want = requirements.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) && prefix.join("bin/python").exists() {
        return Ok(());
    }
    eprintln!("xtask setup: installing {} into {}", requirements.join(" "), prefix.display());
    ensure_venv(Path::new("python3"), &prefix)?;
    // From here until pip has finished the prefix holds no complete set of pins: without a stamp, an
    // interrupted or failed install is retried by the next run (even if the pins go back to what an
    // older stamp recorded).
    match std::fs::remove_file(&stamp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(format!("{}: {e}", stamp.display())),
        _ => {}
    }
    let mut pip = Command::new(prefix.join("bin/python"));
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).args(&requirements);
    run_cmd(&mut pip).map_err(|e| {
        format!("{e}\n  pip could not install the pinned runtimes (is PyPI reachable?); nothing was recorded as installed: rerun to retry")
    })?;
    let missing = missing_runtime_files(&prefix);
    if !missing.is_empty() {
        return Err(format!("pip succeeded, but {} lacks {}", prefix.display(), missing.join(", ")));
    }
    std::fs::write(&stamp, want).map_err(|e| format!("{}: {e}", stamp.display()))
}

/// Makes `prefix` a Python virtual environment whose `bin/python -m pip` works, with `python` (the
/// `python3` on PATH). A prefix left without pip, by an interrupted run or by `python3 -m venv` without
/// Debian's `python3-venv` (it creates the tree, then fails at ensurepip), is removed and created again;
/// a failed creation removes what it made, so the next run starts clean.
pub(crate) fn ensure_venv(python: &Path, prefix: &Path) -> Result<(), String> {
    if has_pip(prefix) {
        return Ok(());
    }
    if prefix.exists() {
        let is_venv = prefix.join("pyvenv.cfg").is_file();
        let is_empty = std::fs::read_dir(prefix).map(|mut d| d.next().is_none()).unwrap_or(false);
        if !is_venv && !is_empty {
            return Err(format!(
                "{} exists but is not a Python virtual environment: remove it (or set NPU_SYCL_BRIDGE_HOME) and rerun",
                prefix.display()
            ));
        }
        eprintln!(
            "xtask setup: {} has no working pip (an interrupted first run?): creating it again",
            prefix.display()
        );
        std::fs::remove_dir_all(prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    }
    if let Some(parent) = prefix.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let created = run_cmd(Command::new(python).args(["-m", "venv"]).arg(prefix));
    if created.is_ok() && has_pip(prefix) {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(prefix);
    Err(format!(
        "{}\n  could not create a Python virtual environment with pip at {}: Python 3 with its venv module is \
         needed (on Debian/Ubuntu: `sudo apt-get install python3-venv`), then rerun",
        created.err().unwrap_or_else(|| format!("`{} -m venv` made no pip", python.display())),
        prefix.display()
    ))
}

fn has_pip(prefix: &Path) -> bool {
    Command::new(prefix.join("bin/python"))
        .args(["-m", "pip", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What the build and run time need from the prefix (crates/native-finder looks for the same files).
fn missing_runtime_files(prefix: &Path) -> Vec<String> {
    let has = |dir: &Path, stem: &str| {
        std::fs::read_dir(dir)
            .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with(stem)))
            .unwrap_or(false)
    };
    let mut missing = Vec::new();
    if !prefix.join("include/sycl/sycl.hpp").is_file() {
        missing.push("include/sycl/sycl.hpp (intel-sycl-rt)".to_string());
    }
    if !has(&prefix.join("lib"), "libsycl.so") {
        missing.push("lib/libsycl.so* (intel-sycl-rt)".to_string());
    }
    let openvino = std::fs::read_dir(prefix.join("lib"))
        .map(|d| d.flatten().any(|e| has(&e.path().join("site-packages/openvino/libs"), "libopenvino_c.so")))
        .unwrap_or(false);
    if !openvino {
        missing.push("lib/python3*/site-packages/openvino/libs/libopenvino_c.so* (openvino)".to_string());
    }
    missing
}

fn level_zero_headers(pins: &Pins) -> Result<(), String> {
    let dest = native_finder::level_zero_headers();
    let version = pins.value("level-zero-headers", "version")?;
    let stamp = dest.join(".version");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(version) {
        return Ok(());
    }
    let suite = pins.value("level-zero-headers", "suite")?;
    let package = pins.value("level-zero-headers", "package")?;
    let state = native_finder::project_home().join("apt-state");
    let lists = state.join("lists");
    std::fs::create_dir_all(lists.join("partial")).map_err(|e| e.to_string())?;
    let sources = state.join("sources.list");
    std::fs::write(&sources, format!("deb http://deb.debian.org/debian {suite} main\n")).map_err(|e| e.to_string())?;
    let private = |cmd: &mut Command| {
        cmd.arg(format!("-o=Dir::Etc::SourceList={}", sources.display()))
            .arg("-o=Dir::Etc::SourceParts=/dev/null")
            .arg("-o=APT::Sandbox::User=root")
            .arg(format!("-o=Dir::State::Lists={}", lists.display()))
            .arg(format!("-o=Dir::Cache={}", state.join("cache").display()));
    };
    let mut update = Command::new("apt-get");
    private(&mut update);
    run_cmd(update.args(["update", "-qq"]))?;
    let download_dir = state.join("debs");
    std::fs::create_dir_all(&download_dir).map_err(|e| e.to_string())?;
    let mut download = Command::new("apt-get");
    private(&mut download);
    download.args(["download", &format!("{package}={version}")]);
    download.current_dir(&download_dir);
    eprintln!("xtask setup: apt-get download {package}={version} ({suite})");
    let status = download.status().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("apt-get download {package}={version} from {suite} failed"));
    }
    let deb = std::fs::read_dir(&download_dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{package}_{}", version.split('-').next().unwrap_or(version)))
        })
        .ok_or("the downloaded .deb is missing")?;
    let unpack = state.join("unpacked");
    let _ = std::fs::remove_dir_all(&unpack);
    run_cmd(Command::new("dpkg").arg("-x").arg(&deb).arg(&unpack))?;
    let _ = std::fs::remove_dir_all(&dest);
    copy_dir(&unpack.join("usr/include"), &dest)?;
    std::fs::write(&stamp, version).map_err(|e| e.to_string())
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?.flatten() {
        let p = entry.path();
        let t = to.join(entry.file_name());
        if p.is_dir() {
            copy_dir(&p, &t)?;
        } else {
            std::fs::copy(&p, &t).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-setup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn script(path: &Path, body: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A `python3` whose `-m venv DIR` makes a venv whose `bin/python -m pip` exits with `pip_status`,
    /// then itself exits with `venv_status` (Debian without python3-venv: the tree, then failure).
    fn fake_python(dir: &Path, venv_status: i32, pip_status: i32) -> PathBuf {
        let python = dir.join("python3");
        script(
            &python,
            &format!(
                "mkdir -p \"$3/bin\" && touch \"$3/pyvenv.cfg\" && printf '#!/bin/sh\\nexit {pip_status}\\n' > \
                 \"$3/bin/python\" && chmod +x \"$3/bin/python\"\nexit {venv_status}"
            ),
        );
        python
    }

    #[test]
    fn a_venv_without_pip_is_removed_and_the_error_names_python3_venv() {
        let dir = scratch("no-ensurepip");
        let prefix = dir.join("home/prefix");
        let err = ensure_venv(&fake_python(&dir, 1, 1), &prefix).unwrap_err();
        assert!(err.contains("python3-venv"), "{err}");
        assert!(!prefix.exists(), "the half-made venv must not survive into the next run");
        // `-m venv` succeeding without a usable pip is the same failure.
        let err = ensure_venv(&fake_python(&dir, 0, 1), &prefix).unwrap_err();
        assert!(err.contains("python3-venv"), "{err}");
        assert!(!prefix.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_prefix_left_without_pip_by_an_earlier_run_is_created_again() {
        let dir = scratch("stale");
        let prefix = dir.join("prefix");
        script(&prefix.join("bin/python"), "exit 1");
        std::fs::write(prefix.join("pyvenv.cfg"), "").unwrap();
        ensure_venv(&fake_python(&dir, 0, 0), &prefix).unwrap();
        assert!(has_pip(&prefix));
        // A working venv is left alone (the fake python3 would fail now).
        ensure_venv(&fake_python(&dir, 1, 1), &prefix).unwrap();
        assert!(has_pip(&prefix));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_prefix_that_is_not_a_venv_is_never_removed() {
        let dir = scratch("foreign");
        let prefix = dir.join("prefix");
        std::fs::create_dir_all(&prefix).unwrap();
        std::fs::write(prefix.join("precious"), "x").unwrap();
        let err = ensure_venv(&fake_python(&dir, 0, 0), &prefix).unwrap_err();
        assert!(err.contains("not a Python virtual environment"), "{err}");
        assert!(prefix.join("precious").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_incomplete_prefix_is_reported() {
        let dir = scratch("incomplete");
        let missing = missing_runtime_files(&dir);
        assert_eq!(missing.len(), 3, "{missing:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
