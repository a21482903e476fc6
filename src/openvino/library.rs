//! Loading OpenVINO's C library (`libopenvino_c.so` on Linux, `openvino_c.dll` on Windows) at run time.
//!
//! `openvino-sys` is built with `runtime-linking`: nothing links against OpenVINO, and every call
//! goes through function pointers filled in by [`load`]. Every constructor of this module's types
//! calls [`load`] first, so applications only call it themselves to report a missing runtime early.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// The environment variable that overrides where `libopenvino_c` is loaded from (a file path).
pub const OPENVINO_C_ENV: &str = "NPU_SYCL_BRIDGE_OPENVINO_C";

/// The path `build.rs` found at build time (empty if none was found).
const BAKED: &str = env!("NPU_SYCL_BRIDGE_OPENVINO_C");

static LOADED: AtomicBool = AtomicBool::new(false);
static STATE: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Loads OpenVINO's C library once per process; later calls return at once.
///
/// Candidates, in order:
/// 1. `$NPU_SYCL_BRIDGE_OPENVINO_C` at run time (a path to `libopenvino_c.so.*` or `openvino_c.dll`);
/// 2. the path `build.rs` found at build time;
/// 3. [`native_finder::find_openvino`] at run time (env vars, pip, APT, the provisioned prefix).
///
/// A candidate that does not exist is skipped. A candidate that exists but fails to load is an
/// error: a broken explicit choice is not silently replaced by another installation.
///
/// # Errors
/// [`ErrorKind::Library`](crate::ErrorKind::Library), with everything that was probed and how
/// to fix it.
pub fn load() -> Result<()> {
    if LOADED.load(Ordering::Acquire) {
        return Ok(());
    }
    let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
    if state.is_some() {
        return Ok(());
    }
    let mut probed = Vec::new();
    let mut candidates: Vec<(String, PathBuf)> = Vec::new();
    match std::env::var_os(OPENVINO_C_ENV).filter(|v| !v.is_empty()) {
        Some(p) => candidates.push((format!("${OPENVINO_C_ENV}"), PathBuf::from(p))),
        None => probed.push(format!("${OPENVINO_C_ENV}: not set")),
    }
    if BAKED.is_empty() {
        probed.push("the path found at build time: none (OpenVINO was not found when the crate was built)".into());
    } else {
        candidates.push(("the path found at build time".into(), PathBuf::from(BAKED)));
    }
    for (source, path) in candidates {
        if !path.exists() {
            probed.push(format!("{source}: {} does not exist", path.display()));
            continue;
        }
        try_load(&source, &path)?;
        *state = Some(path);
        LOADED.store(true, Ordering::Release);
        return Ok(());
    }
    match native_finder::find_openvino() {
        Ok(found) => {
            let source = format!("native_finder ({})", found.source);
            try_load(&source, &found.library)?;
            *state = Some(found.library);
            LOADED.store(true, Ordering::Release);
            Ok(())
        }
        Err(nf) => {
            let mut msg = format!("OpenVINO's C library ({LIBRARY_NAME}) could not be loaded. Probed:\n");
            for p in &probed {
                msg.push_str(&format!("  - {p}\n"));
            }
            msg.push_str(&format!("then searched at run time: {nf}"));
            Err(Error::library(msg))
        }
    }
}

/// Functions this crate calls that older OpenVINO releases lack. openvino-sys would panic when
/// one of them is called and missing, so their presence is checked once, at load time.
const REQUIRED: &[&str] = &[
    "ov_core_compile_model_props",
    "ov_remote_context_create_tensor_props",
    "ov_core_get_default_context",
    "ov_compiled_model_get_context",
    "ov_remote_tensor_get_params",
];

/// The file name of OpenVINO's C library on this OS.
const LIBRARY_NAME: &str = if cfg!(windows) { "openvino_c.dll" } else { "libopenvino_c.so" };

/// Opens the library with its dependencies resolved from its own directory. On Linux its RUNPATH
/// does that; on Windows a DLL's directory is searched only when asked (`LOAD_WITH_ALTERED_SEARCH_PATH`),
/// and openvino.dll and tbb12.dll sit beside openvino_c.dll in every layout OpenVINO ships.
fn open(path: &Path) -> std::result::Result<libloading::Library, libloading::Error> {
    #[cfg(windows)]
    {
        use libloading::os::windows::{Library, LOAD_WITH_ALTERED_SEARCH_PATH};
        // SAFETY: as for `Library::new` below; the flag changes only where dependencies are searched.
        unsafe { Library::load_with_flags(path, LOAD_WITH_ALTERED_SEARCH_PATH) }.map(Into::into)
    }
    #[cfg(not(windows))]
    // SAFETY: loading libopenvino_c runs its initialisers, which have no preconditions.
    unsafe {
        libloading::Library::new(path)
    }
}

fn try_load(source: &str, path: &Path) -> Result<()> {
    let fix = format!(
        "Fix the installation, point ${OPENVINO_C_ENV} at a working {LIBRARY_NAME} (OpenVINO 2026.4 or \
         newer), or run `cargo xtask setup`."
    );
    // Held until openvino-sys has opened the same file (which then finds it, dependencies and all,
    // already loaded); openvino-sys keeps its own handle, so the library stays loaded.
    let lib = open(path).map_err(|e| {
        Error::library(format!(
            "OpenVINO's C library from {source} ({}) could not be opened: {e}. {fix}",
            path.display()
        ))
    })?;
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        // SAFETY: the symbol is only looked up, never called through this pointer.
        .filter(|name| unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_err())
        .collect();
    if !missing.is_empty() {
        return Err(Error::library(format!(
            "OpenVINO's C library from {source} ({}) lacks {}: it is older than OpenVINO 2026.4 (the \
             non-variadic *_props C API). {fix}",
            path.display(),
            missing.join(", ")
        )));
    }
    let loaded = openvino_sys::library::load_from(path).map_err(|e| {
        Error::library(format!(
            "OpenVINO's C library from {source} ({}) could not be loaded: {e}. {fix}",
            path.display()
        ))
    });
    drop(lib);
    loaded
}

/// The path OpenVINO's C library was loaded from by [`load`], if it has been loaded.
pub fn library_path() -> Option<PathBuf> {
    STATE.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
