//! Opens the Level Zero loader at run time.
//!
//! The library is found by its SONAME, `libze_loader.so.1`, on Linux and by its module name,
//! `ze_loader.dll`, on Windows. If an instance is already loaded in the process (the user's loader,
//! or the virtual platform loaded by absolute path), `dlopen` / `LoadLibrary` return that one, so
//! every user in the process shares one loader. Nothing links against the
//! loader at build time: machines without Level Zero still build and run everything else.

use crate::ZeApi;
use std::sync::{Mutex, OnceLock};

/// The name every Level Zero user opens the loader by: its SONAME on Linux.
#[cfg(unix)]
pub const LOADER_NAME: &str = "libze_loader.so.1";
/// The name every Level Zero user opens the loader by: its module name on Windows (the OpenVINO
/// NPU plugin asks for `ze_loader` with no directory, so the DLL search order decides which).
#[cfg(windows)]
pub const LOADER_NAME: &str = "ze_loader.dll";

static API: OnceLock<ZeApi> = OnceLock::new();
static OPENING: Mutex<()> = Mutex::new(());

/// The loader's entry points, opening [`LOADER_NAME`] on first use.
///
/// A failure is not cached: a later call (e.g. after the virtual platform was activated) tries
/// again. A success is kept for the life of the process (the loader is never closed).
pub fn api() -> Result<&'static ZeApi, String> {
    if let Some(api) = API.get() {
        return Ok(api);
    }
    let _guard = OPENING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(api) = API.get() {
        return Ok(api);
    }
    // SAFETY: opening the loader runs its initialisers; a Level Zero loader's are safe to run
    // at any time, and symbol lookups are typed by the generated table.
    let api = unsafe { ZeApi::new(LOADER_NAME) }
        .map_err(|e| format!("cannot open the Level Zero loader {LOADER_NAME}: {e}"))?;
    Ok(API.get_or_init(|| api))
}

/// Whether some Level Zero loader is already loaded in this process (without loading one).
pub fn is_loaded() -> bool {
    #[cfg(unix)]
    // SAFETY: RTLD_NOLOAD never loads or initialises anything; it only returns an existing handle.
    let lib = unsafe { libloading::os::unix::Library::open(Some(LOADER_NAME), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    // GetModuleHandleEx never loads or initialises anything; it only returns an existing module.
    #[cfg(windows)]
    let lib = libloading::os::windows::Library::open_already_loaded(LOADER_NAME);
    lib.is_ok()
}
