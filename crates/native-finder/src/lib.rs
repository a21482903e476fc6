//! Finds the native runtimes npu-sycl-bridge needs: OpenVINO's C library and the DPC++ (SYCL) runtime.
//!
//! Used by the main crate's `build.rs` (to bake in a default location and, with feature `sycl`, to
//! compile and link the C++ shim), at run time (to load OpenVINO), and by `cargo xtask`.
//!
//! **No search starts a process.** Step 3 below (a package of `python3`) is answered by this crate's
//! build script, which runs `python3` once per build and bakes the directories it reports in; at run
//! time the searches only read environment variables and look at files. A package pip-installed
//! after native-finder was built is seen once it is rebuilt (a change of `PATH`, `VIRTUAL_ENV`,
//! `CONDA_PREFIX` or `PYTHONPATH` rebuilds it; so does `cargo clean -p native-finder`).
//!
//! OpenVINO is probed in this order (the first hit wins):
//!
//! | # | where | Linux: what is looked for | Windows: what is looked for |
//! |---|-------|---------------------------|-----------------------------|
//! | 1 | `$OPENVINO_INSTALL_DIR`, `$INTEL_OPENVINO_DIR` (setupvars) | `runtime/lib/intel64/libopenvino_c.so*` | `runtime\bin\intel64\Release\openvino_c.dll` |
//! | 2 | `$OpenVINO_DIR` (a CMake config dir) | `../lib/intel64`, `../libs`, `../lib` | `..\bin\intel64\Release`, `..\libs`, `..\bin` |
//! | 3 | a pip-installed `openvino` of `python3` on `PATH` when native-finder was built | `<package>/libs/libopenvino_c.so.*` | `<package>\libs\openvino_c.dll` |
//! | 4 | APT and archive paths | `/usr/lib/x86_64-linux-gnu`, `/opt/intel/openvino*/runtime/lib/intel64` | (none) |
//! | 5 | the provisioned prefix (`cargo xtask setup`) | `<prefix>/lib/python3*/site-packages/openvino/libs` | `<prefix>\Lib\site-packages\openvino\libs` |
//!
//! SYCL (DPC++ runtime headers + `libsycl.so` / `sycl9.dll`; a Windows prefix keeps them under `Library\`):
//!
//! | # | where | what is looked for |
//! |---|-------|--------------------|
//! | 1 | `$SYCL_ROOT`, `$CMPLR_ROOT`, `$ONEAPI_ROOT/compiler/latest` (setvars) | `include/sycl/sycl.hpp`, `lib/libsycl.so*` (Windows: `bin\sycl9.dll`) |
//! | 2 | `icpx` on `PATH` | the same, relative to `<bin>/..` |
//! | 3 | a pip-installed `intel-sycl-rt` of `python3` on `PATH` when native-finder was built | the same, under `sys.prefix` |
//! | 4 | the provisioned prefix | the same, under `<prefix>` |
//!
//! The provisioned prefix is `$NPU_SYCL_BRIDGE_HOME/prefix`, where `NPU_SYCL_BRIDGE_HOME` defaults to
//! `$XDG_CACHE_HOME/npu-sycl-bridge` or `~/.cache/npu-sycl-bridge` (Windows: `%LOCALAPPDATA%\npu-sycl-bridge`).
//! It lies outside the source tree. A build for another OS than the build machine's bakes in no pip
//! answer (step 3): the build machine's `python3` knows nothing of the target's packages.

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where a runtime was found, and why that place was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The rule that matched, e.g. `"$INTEL_OPENVINO_DIR"` or `"provisioned prefix"`.
    pub source: String,
    /// The directory holding the shared libraries.
    pub lib_dir: PathBuf,
    /// The main library file (`libopenvino_c.so.*` or `libsycl.so.*`).
    pub library: PathBuf,
    /// The header directory (`include/`), when one ships next to the libraries.
    pub include_dir: Option<PathBuf>,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (via {})", self.library.display(), self.source)
    }
}

/// Nothing was found: the message lists every place that was probed and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    /// What was looked for ("OpenVINO" or "the DPC++ SYCL runtime").
    pub what: &'static str,
    /// Each probed location with the reason it did not match.
    pub probed: Vec<String>,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} was not found. Probed, in order:", self.what)?;
        for p in &self.probed {
            writeln!(f, "  - {p}")?;
        }
        write!(
            f,
            "Fix: run `cargo xtask setup` (installs the pinned runtimes into {}), or point one of the \
             environment variables above at an existing installation.",
            provisioned_prefix().display()
        )
    }
}

impl std::error::Error for NotFound {}

/// `$NPU_SYCL_BRIDGE_HOME`, else `$XDG_CACHE_HOME/npu-sycl-bridge`, else `~/.cache/npu-sycl-bridge`
/// (Windows: `%LOCALAPPDATA%\npu-sycl-bridge`).
pub fn project_home() -> PathBuf {
    if let Some(h) = env::var_os("NPU_SYCL_BRIDGE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(h);
    }
    if cfg!(windows) {
        if let Some(local) = env_dir("LOCALAPPDATA") {
            return local.join("npu-sycl-bridge");
        }
    }
    if let Some(x) = env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(x).join("npu-sycl-bridge");
    }
    let home = env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"));
    home.join(".cache").join("npu-sycl-bridge")
}

/// The prefix `cargo xtask setup` installs the PyPI runtimes into (a Python virtual environment).
pub fn provisioned_prefix() -> PathBuf {
    project_home().join("prefix")
}

/// The directory of Level Zero headers `cargo xtask setup --codegen` unpacks (only codegen needs it).
pub fn level_zero_headers() -> PathBuf {
    project_home().join("level-zero-headers")
}

fn env_dir(name: &str) -> Option<PathBuf> {
    env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// OpenVINO's C library: the stem of its file name on Linux, the whole name on Windows.
const OPENVINO_C: &str = if cfg!(windows) { "openvino_c.dll" } else { "libopenvino_c.so" };
/// The SYCL runtime library, as [`OPENVINO_C`] (the Windows name carries the ABI major, 9 in 2026.2).
const SYCL_LIB: &str = if cfg!(windows) { "sycl9.dll" } else { "libsycl.so" };
/// Where a SYCL root keeps [`SYCL_LIB`]: Windows puts DLLs in `bin`.
const SYCL_LIB_DIR: &str = if cfg!(windows) { "bin" } else { "lib" };

/// The first file in `dir` whose name starts with `stem` (e.g. `libopenvino_c.so`), preferring the
/// shortest versioned name (`libopenvino_c.so.2641` over `libopenvino_c.so.2026.4.1`).
fn find_lib(dir: &Path, stem: &str) -> Option<PathBuf> {
    let mut hits: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n == stem || n.starts_with(&format!("{stem}.")))
        })
        .filter(|p| !p.to_string_lossy().ends_with(".py"))
        .collect();
    hits.sort_by_key(|p| (p.as_os_str().len(), p.clone()));
    // An unversioned dev symlink is fine to link against but prefer the soname file.
    hits.iter().find(|p| p.file_name().unwrap().to_string_lossy() != stem).or(hits.first()).cloned()
}

/// The directory of the `openvino` package of `python3` on `PATH`, as this crate's build script
/// found it (no process is started at run time).
fn pip_openvino() -> Option<&'static Path> {
    Some(env!("NATIVE_FINDER_PIP_OPENVINO")).filter(|d| !d.is_empty()).map(Path::new)
}

/// `sys.prefix` of the `python3` on `PATH` that has `intel-sycl-rt` installed, as this crate's build
/// script found it.
fn pip_sycl_prefix() -> Option<&'static Path> {
    Some(env!("NATIVE_FINDER_PIP_SYCL_PREFIX")).filter(|d| !d.is_empty()).map(Path::new)
}

/// The `site-packages` directories of a Python prefix: `lib/python3.X/site-packages` on Linux,
/// `Lib\site-packages` on Windows.
fn site_packages_dirs(prefix: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if cfg!(windows) {
        let p = prefix.join("Lib").join("site-packages");
        if p.is_dir() {
            dirs.push(p);
        }
        return dirs;
    }
    for lib in ["lib", "lib64"] {
        if let Ok(rd) = std::fs::read_dir(prefix.join(lib)) {
            for e in rd.flatten() {
                let p = e.path().join("site-packages");
                if e.file_name().to_string_lossy().starts_with("python") && p.is_dir() {
                    dirs.push(p);
                }
            }
        }
    }
    dirs.sort();
    dirs
}

struct Probe {
    what: &'static str,
    probed: Vec<String>,
}

impl Probe {
    fn miss(&mut self, place: impl Into<String>, why: impl fmt::Display) {
        self.probed.push(format!("{}: {why}", place.into()));
    }
    fn not_found(self) -> NotFound {
        NotFound { what: self.what, probed: self.probed }
    }
}

fn openvino_in(dir: &Path, source: &str, include: Option<PathBuf>, probe: &mut Probe) -> Option<Found> {
    match find_lib(dir, OPENVINO_C) {
        Some(library) => Some(Found {
            source: source.to_string(),
            lib_dir: dir.to_path_buf(),
            library,
            include_dir: include.filter(|i| i.join("openvino/c/openvino.h").is_file()),
        }),
        None => {
            probe.miss(format!("{source} → {}", dir.display()), format!("no {OPENVINO_C}*"));
            None
        }
    }
}

fn openvino_python_package(pkg: &Path, source: &str, probe: &mut Probe) -> Option<Found> {
    openvino_in(&pkg.join("libs"), source, Some(pkg.join("include")), probe)
}

/// Finds OpenVINO's C library in the documented order (see the module docs).
pub fn find_openvino() -> Result<Found, NotFound> {
    let mut probe = Probe { what: "OpenVINO (libopenvino_c)", probed: Vec::new() };
    // The archive keeps the libraries in `runtime/lib/intel64` on Linux, the DLLs in
    // `runtime\bin\intel64\Release` on Windows.
    let archive_libs = if cfg!(windows) { "bin/intel64/Release" } else { "lib/intel64" };
    for var in ["OPENVINO_INSTALL_DIR", "INTEL_OPENVINO_DIR"] {
        match env_dir(var) {
            Some(root) => {
                let rt = root.join("runtime");
                if let Some(f) =
                    openvino_in(&rt.join(archive_libs), &format!("${var}"), Some(rt.join("include")), &mut probe)
                {
                    return Ok(f);
                }
            }
            None => probe.miss(format!("${var}"), "not set"),
        }
    }
    match env_dir("OpenVINO_DIR") {
        Some(cmake_dir) => {
            let rels: &[&str] = if cfg!(windows) {
                &["../bin/intel64/Release", "../libs", "../bin"]
            } else {
                &["../lib/intel64", "../libs", "../lib"]
            };
            for rel in rels {
                let dir = cmake_dir.join(rel);
                let include = cmake_dir.join("../include");
                if let Some(f) = openvino_in(&dir, "$OpenVINO_DIR", Some(include), &mut probe) {
                    return Ok(f);
                }
            }
        }
        None => probe.miss("$OpenVINO_DIR", "not set"),
    }
    match pip_openvino() {
        Some(pkg) => {
            if let Some(f) = openvino_python_package(pkg, "pip-installed openvino (python3 on PATH)", &mut probe) {
                return Ok(f);
            }
        }
        None => probe.miss("python3 on PATH when native-finder was built", "no importable `openvino` package"),
    }
    let mut system = Vec::new();
    if cfg!(unix) {
        system.extend(["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib"].map(PathBuf::from));
    }
    if let Some(rd) = std::fs::read_dir("/opt/intel").ok().filter(|_| cfg!(unix)) {
        let mut archives: Vec<PathBuf> =
            rd.flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().contains("openvino")).collect();
        archives.sort();
        archives.reverse();
        system.extend(archives.into_iter().map(|p| p.join("runtime/lib/intel64")));
    }
    for dir in system {
        let include = Some(PathBuf::from("/usr/include"));
        if let Some(f) = openvino_in(&dir, "system (APT/archive path)", include, &mut probe) {
            return Ok(f);
        }
    }
    let prefix = provisioned_prefix();
    let sites = site_packages_dirs(&prefix);
    if sites.is_empty() {
        probe.miss(format!("provisioned prefix {}", prefix.display()), "not provisioned");
    }
    for site in sites {
        if let Some(f) = openvino_python_package(&site.join("openvino"), "provisioned prefix", &mut probe) {
            return Ok(f);
        }
    }
    Err(probe.not_found())
}

fn sycl_in(root: &Path, source: &str, probe: &mut Probe) -> Option<Found> {
    // A Windows Python prefix (pip) keeps the wheel's data under `Library\`.
    let library_root = root.join("Library");
    let root = if cfg!(windows) && library_root.is_dir() { library_root.as_path() } else { root };
    let include = root.join("include");
    if !include.join("sycl/sycl.hpp").is_file() {
        probe.miss(format!("{source} → {}", root.display()), "no include/sycl/sycl.hpp");
        return None;
    }
    let lib_dir = root.join(SYCL_LIB_DIR);
    match find_lib(&lib_dir, SYCL_LIB) {
        Some(library) => Some(Found { source: source.to_string(), lib_dir, library, include_dir: Some(include) }),
        None => {
            probe.miss(format!("{source} → {}", root.display()), format!("no {SYCL_LIB_DIR}/{SYCL_LIB}*"));
            None
        }
    }
}

/// Finds the DPC++ SYCL runtime (headers and `libsycl`) in the documented order (see the module docs).
pub fn find_sycl() -> Result<Found, NotFound> {
    let mut probe = Probe { what: "the DPC++ SYCL runtime (sycl/sycl.hpp + libsycl)", probed: Vec::new() };
    for (var, rel) in [("SYCL_ROOT", ""), ("CMPLR_ROOT", ""), ("ONEAPI_ROOT", "compiler/latest")] {
        match env_dir(var) {
            Some(root) => {
                if let Some(f) = sycl_in(&root.join(rel), &format!("${var}"), &mut probe) {
                    return Ok(f);
                }
            }
            None => probe.miss(format!("${var}"), "not set"),
        }
    }
    match icpx() {
        Some(bin) => {
            if let Some(root) = bin.parent().and_then(Path::parent) {
                if let Some(f) = sycl_in(root, "icpx on PATH", &mut probe) {
                    return Ok(f);
                }
            }
        }
        None => probe.miss("icpx on PATH", "not found"),
    }
    match pip_sycl_prefix() {
        Some(prefix) => {
            if let Some(f) = sycl_in(prefix, "pip-installed intel-sycl-rt (python3 on PATH)", &mut probe) {
                return Ok(f);
            }
        }
        None => probe.miss("python3 on PATH when native-finder was built", "no installed `intel-sycl-rt` distribution"),
    }
    if let Some(f) = sycl_in(&provisioned_prefix(), "provisioned prefix", &mut probe) {
        return Ok(f);
    }
    Err(probe.not_found())
}

/// The `icpx` compiler on `PATH`, if any (used to compile the shim instead of g++).
pub fn icpx() -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    let exe = if cfg!(windows) { "icpx.exe" } else { "icpx" };
    env::split_paths(&path).map(|d| d.join(exe)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_lib_prefers_soname_file_over_dev_symlink() {
        let dir = std::env::temp_dir().join(format!("nf-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for n in ["libsycl.so", "libsycl.so.9", "libsycl.so.9.0.0", "libsycl.so.9.0.0-gdb.py", "libsycl-jit.so"] {
            std::fs::write(dir.join(n), b"").unwrap();
        }
        assert_eq!(find_lib(&dir, "libsycl.so").unwrap(), dir.join("libsycl.so.9"));
        assert!(find_lib(&dir, "libopenvino_c.so").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The Windows layouts, each found the way a Windows user's install is: the archive through
    /// `INTEL_OPENVINO_DIR` (setupvars.bat), the CMake package through `OpenVINO_DIR`, a pip
    /// environment as the provisioned prefix, and SYCL through `SYCL_ROOT` and in a pip prefix's
    /// `Library\`. One test: it sets process environment variables in turn.
    #[cfg(windows)]
    #[test]
    fn windows_layouts_are_found() {
        let dir = std::env::temp_dir().join(format!("nf-windows-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let touch = |p: &Path| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        };
        let clear = || {
            for v in
                ["OPENVINO_INSTALL_DIR", "INTEL_OPENVINO_DIR", "OpenVINO_DIR", "SYCL_ROOT", "CMPLR_ROOT", "ONEAPI_ROOT"]
            {
                env::remove_var(v);
            }
        };
        clear();
        env::set_var("NPU_SYCL_BRIDGE_HOME", dir.join("home"));

        let archive = dir.join("openvino_2026");
        let dll = archive.join("runtime/bin/intel64/Release/openvino_c.dll");
        touch(&dll);
        env::set_var("INTEL_OPENVINO_DIR", &archive);
        let f = find_openvino().unwrap();
        assert_eq!((f.source.as_str(), f.library.as_path()), ("$INTEL_OPENVINO_DIR", dll.as_path()));
        clear();

        env::set_var("OpenVINO_DIR", archive.join("runtime/cmake"));
        let f = find_openvino().unwrap();
        assert_eq!(f.source, "$OpenVINO_DIR");
        assert!(f.library.ends_with("openvino_c.dll"), "{f}");
        clear();

        let pip = dir.join("home/prefix/Lib/site-packages/openvino/libs/openvino_c.dll");
        touch(&pip);
        let f = find_openvino().unwrap();
        assert_eq!((f.source.as_str(), f.library.as_path()), ("provisioned prefix", pip.as_path()));

        let oneapi = dir.join("oneAPI/compiler/latest");
        touch(&oneapi.join("include/sycl/sycl.hpp"));
        touch(&oneapi.join("bin/sycl9.dll"));
        touch(&oneapi.join("bin/sycl9d.dll"));
        env::set_var("SYCL_ROOT", &oneapi);
        let f = find_sycl().unwrap();
        assert_eq!(f.library, oneapi.join("bin/sycl9.dll"), "the release DLL, not sycl9d.dll");
        clear();

        let prefix = dir.join("home/prefix");
        touch(&prefix.join("Library/include/sycl/sycl.hpp"));
        touch(&prefix.join("Library/bin/sycl9.dll"));
        let f = find_sycl().unwrap();
        assert_eq!((f.source.as_str(), f.library), ("provisioned prefix", prefix.join("Library/bin/sycl9.dll")));

        env::remove_var("NPU_SYCL_BRIDGE_HOME");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn not_found_message_lists_probes_and_fix() {
        let nf = NotFound { what: "OpenVINO", probed: vec!["$OPENVINO_INSTALL_DIR: not set".into()] };
        let msg = nf.to_string();
        assert!(msg.contains("$OPENVINO_INSTALL_DIR: not set"));
        assert!(msg.contains("cargo xtask setup"));
    }
}
