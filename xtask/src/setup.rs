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
    debian_packages(&debs)?;
    pypi_runtimes(&pins)?;
    if codegen {
        level_zero_headers(&pins)?;
    }
    Ok(())
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

fn debian_packages(pkgs: &[String]) -> Result<(), String> {
    let missing: Vec<&String> = pkgs.iter().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask setup: installing Debian packages {missing:?}");
    let sudo = !is_root();
    let apt = |args: &[&str]| {
        let mut c = if sudo { Command::new("sudo") } else { Command::new("apt-get") };
        if sudo {
            c.arg("apt-get");
        }
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run_cmd(&mut apt(&["update", "-qq"]))?;
    let mut install = apt(&["install", "-y", "-qq", "--no-install-recommends"]);
    install.args(missing.iter().map(|s| s.as_str()));
    run_cmd(&mut install)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc_geteuid() == 0 }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

fn pypi_runtimes(pins: &Pins) -> Result<(), String> {
    let prefix = native_finder::provisioned_prefix();
    let requirements: Vec<String> = pins
        .section("pypi")?
        .iter()
        .map(|(name, v)| format!("{name}=={}", v.first().map(String::as_str).unwrap_or("")))
        .collect();
    let stamp = prefix.join(".npu-sycl-bridge-stamp");
    let want = requirements.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) && prefix.join("bin/python").exists() {
        return Ok(());
    }
    eprintln!("xtask setup: installing {} into {}", requirements.join(" "), prefix.display());
    if !prefix.join("bin/python").exists() {
        std::fs::create_dir_all(prefix.parent().unwrap()).map_err(|e| e.to_string())?;
        run_cmd(Command::new("python3").args(["-m", "venv"]).arg(&prefix))?;
    }
    let mut pip = Command::new(prefix.join("bin/python"));
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).args(&requirements);
    run_cmd(&mut pip)?;
    std::fs::write(&stamp, want).map_err(|e| e.to_string())
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
