//! The virtual Level Zero platform (`crates/virtual-l0`): a stand-in for the whole Level Zero stack
//! (loader + a virtual Intel GPU driver + a virtual Intel NPU driver) that the unmodified DPC++
//! runtime and OpenVINO's NPU plugin load as `libze_loader.so.1`. Tests and examples use it on
//! machines without Intel hardware; it is never used implicitly.
//!
//! # Rust programs: [`activate`]
//! [`activate`] loads the library by **absolute path** with `dlopen(RTLD_NOW | RTLD_GLOBAL)`. Its
//! SONAME is `libze_loader.so.1`, so every later `dlopen("libze_loader.so.1")` in the process (the
//! SYCL adapters, UMF, OpenVINO's NPU plugin, [`npu_sycl_bridge::level_zero`]) gets this instance. Call it
//! **before** anything opens a Level Zero loader; if a different `libze_loader.so.1` is already
//! loaded it refuses with [`ErrorKind::Library`](npu_sycl_bridge::ErrorKind::Library).
//!
//! The path is `$NPU_SYCL_BRIDGE_VIRTUAL_L0` if set, else the `libze_loader.so` that cargo built with
//! this build ([`default_path`]): testkit depends on `virtual-l0`, so every build that uses testkit
//! (a test, an example, a dependent crate's tests) builds the virtual platform into its own target
//! directory first. Nothing has to be built or set by hand.
//!
//! ```no_run
//! let vp = testkit::virtual_platform::activate()?;
//! // ... use SYCL / OpenVINO's NPU ...
//! println!("GPU bytes copied: {}", vp.counter("gpu.bytes_copied"));
//! # Ok::<(), npu_sycl_bridge::Error>(())
//! ```
//!
//! # C and C++ programs: `LD_LIBRARY_PATH`
//! `cargo xtask test` and `cargo xtask example` create `target/virtual-l0/libze_loader.so.1` (a
//! link to the built library). Put that directory first in `LD_LIBRARY_PATH`:
//!
//! ```text
//! LD_LIBRARY_PATH=$PWD/target/virtual-l0 ./my_sycl_program
//! ```
//!
//! That is the only route that reaches every consumer without code changes (the UR adapters open
//! the loader by SONAME, UMF only finds an already-loaded instance, the NPU plugin opens it by
//! SONAME). [`activate`] in such a process finds the instance already loaded and accepts it.
//!
//! # Controls
//! - [`VirtualPlatform::counter`]: `gpu.bytes_copied`, `npu.bytes_copied`, `gpu.live_allocations`,
//!   `npu.live_allocations`, `gpu.exports.dma_buf`, `npu.exports.dma_buf`, `gpu.imports.dma_buf`,
//!   `gpu.imports.sysmem`, `npu.imports.dma_buf`, `npu.imports.sysmem`, `npu.imports.sysmem_refused`,
//!   `npu.graph_args.dma_buf` and `npu.graph_args.sysmem` (graph arguments an inference read in
//!   place: the zero-copy proof), `npu.graphs`, `npu.graph_initializations`, `npu.inferences`,
//!   `npu.graph_arg_updates` (graph arguments patched in a recorded command list: what binding
//!   another tensor costs),
//!   `gpu.immediate_appends`, `gpu.export_fd_misuse`.
//! - [`VirtualPlatform::inject_fault`]: the `nth` next call of a Level Zero function returns a
//!   given `ze_result_t` (also `VL0_FAULTS=zeMemAllocHost:3:0x70000002,…` in the environment);
//!   [`driver_error_for`]: the error the real drivers return for a failed call of a function.
//! - `VL0_TRACE=1` logs every call to stderr; `VL0_GPU_IP_VERSION=0x05004000` makes DPC++ choose
//!   its Level Zero adapter v2 (the default virtual GPU selects v1).
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use npu_sycl_bridge::{Error, Result};

/// Environment variable naming the virtual platform library to load.
pub const PATH_ENV: &str = "NPU_SYCL_BRIDGE_VIRTUAL_L0";
/// The name every Level Zero user opens the loader by: its SONAME on Linux, its module name on
/// Windows (a DLL loaded by path answers to its base name there).
pub const LOADER_NAME: &str = os::LOADER_NAME;

type CounterFn = unsafe extern "C" fn(*const c_char, *mut u64) -> c_int;
type InjectFn = unsafe extern "C" fn(*const c_char, u64, u32) -> c_int;
type ClearFn = unsafe extern "C" fn();

/// The loaded virtual platform (one per process, never unloaded).
#[derive(Debug)]
pub struct VirtualPlatform {
    path: PathBuf,
    counter: CounterFn,
    inject: InjectFn,
    clear: ClearFn,
}

static ACTIVE: OnceLock<VirtualPlatform> = OnceLock::new();
static ACTIVATING: Mutex<()> = Mutex::new(());

/// The directory cargo wrote this build's virtual platform to (`<target>/<profile>/deps`), as
/// virtual-l0's build script told testkit's.
const BUILT_DIR: &str = env!("TESTKIT_VIRTUAL_L0_DIR");

/// The library [`activate`] loads: `$NPU_SYCL_BRIDGE_VIRTUAL_L0` if set, else the virtual platform
/// built with this build ([`built_path`]).
pub fn default_path() -> PathBuf {
    match std::env::var_os(PATH_ENV).filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => built_path(),
    }
}

/// The virtual platform cargo built along with this build: `libze_loader.so` in the directory
/// cargo writes dependencies' artifacts to. A `virtual-l0` from a path dependency (this workspace,
/// a dependent's path dependency) is written under that exact name; one from a registry or git
/// source carries cargo's hash (`libze_loader-<hash>.so`), and then the newest such file is taken.
pub fn built_path() -> PathBuf {
    let dir = Path::new(BUILT_DIR);
    let (stem, ext) = os::CDYLIB;
    let exact = dir.join(format!("{stem}{ext}"));
    if exact.is_file() {
        return exact;
    }
    let hashed = std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with(&format!("{stem}-")) && name.ends_with(ext)
    });
    hashed.max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok()).map(|e| e.path()).unwrap_or(exact)
}

/// Loads the virtual Level Zero platform into this process (idempotent). See the module docs.
///
/// # Errors
/// [`ErrorKind::Library`](npu_sycl_bridge::ErrorKind::Library) when the library is missing or cannot be
/// loaded, or when a different `libze_loader.so.1` is already loaded in the process.
pub fn activate() -> Result<&'static VirtualPlatform> {
    if let Some(vp) = ACTIVE.get() {
        return Ok(vp);
    }
    let _g = ACTIVATING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(vp) = ACTIVE.get() {
        return Ok(vp);
    }
    let vp = load()?;
    Ok(ACTIVE.get_or_init(|| vp))
}

/// The platform if [`activate`] succeeded in this process.
pub fn active() -> Option<&'static VirtualPlatform> {
    ACTIVE.get()
}

use os::{file_of, loaded_loader, sym};

fn bind(h: *mut c_void, path: PathBuf) -> Result<VirtualPlatform> {
    let missing = |n: &str| {
        Error::library(format!("{} is not the virtual Level Zero platform: it does not export {n}", path.display()))
    };
    let counter = sym(h, "vl0_counter").ok_or_else(|| missing("vl0_counter"))?;
    let inject = sym(h, "vl0_fault_inject").ok_or_else(|| missing("vl0_fault_inject"))?;
    let clear = sym(h, "vl0_fault_clear").ok_or_else(|| missing("vl0_fault_clear"))?;
    // SAFETY: the control ABI's C signatures (DEVELOPERS.md), exported by the virtual platform.
    unsafe {
        Ok(VirtualPlatform {
            path,
            counter: std::mem::transmute::<*mut c_void, CounterFn>(counter),
            inject: std::mem::transmute::<*mut c_void, InjectFn>(inject),
            clear: std::mem::transmute::<*mut c_void, ClearFn>(clear),
        })
    }
}

fn load() -> Result<VirtualPlatform> {
    // Already in the process (LD_LIBRARY_PATH, or an earlier load by path)?
    if let Some(h) = loaded_loader() {
        return match sym(h, "vl0_counter") {
            Some(c) => {
                let path = file_of(c).unwrap_or_else(|| PathBuf::from(LOADER_NAME));
                bind(h, path)
            }
            None => {
                let which = sym(h, "zeInit").and_then(file_of).map(|p| p.display().to_string());
                Err(Error::library(format!(
                    "a different {LOADER_NAME} ({}) is already loaded in this process; the virtual Level Zero \
                     platform must be activated before OpenVINO's NPU plugin or SYCL open a Level Zero loader",
                    which.unwrap_or_else(|| "unknown path".into())
                )))
            }
        };
    }
    let path = default_path();
    if !path.is_file() {
        let why = if std::env::var_os(PATH_ENV).is_some_and(|p| !p.is_empty()) {
            format!("${PATH_ENV} names it")
        } else {
            format!(
                "cargo builds it with every build that uses testkit, since virtual-l0 is a dependency; it \
                 is missing when the target directory was cleaned or moved after the build, or for a binary \
                 installed elsewhere: rebuild, or point {PATH_ENV} at a libze_loader.so"
            )
        };
        return Err(Error::library(format!(
            "the virtual Level Zero platform {} does not exist ({why})",
            path.display()
        )));
    }
    let path = path.canonicalize().unwrap_or(path);
    let h = os::open_path(&path).map_err(|e| Error::library(format!("loading {}: {e}", path.display())))?;
    // Later opens of the loader by name must resolve to it (by SONAME on Linux, by module name on
    // Windows).
    match loaded_loader() {
        Some(h2) if sym(h2, "vl0_counter") == sym(h, "vl0_counter") => {}
        _ => {
            return Err(Error::library(format!(
                "{} was loaded but does not answer to {LOADER_NAME} (wrong SONAME?)",
                path.display()
            )))
        }
    }
    bind(h, path)
}

impl VirtualPlatform {
    /// The library that was loaded.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A counter's value; 0 for a name the platform does not know (see [`Self::try_counter`]).
    pub fn counter(&self, name: &str) -> u64 {
        self.try_counter(name).unwrap_or(0)
    }

    /// A counter's value.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](npu_sycl_bridge::ErrorKind::InvalidArgument) for an unknown name.
    pub fn try_counter(&self, name: &str) -> Result<u64> {
        let c = CString::new(name).map_err(|_| Error::invalid_argument("counter name contains a NUL byte"))?;
        let mut v = 0u64;
        // SAFETY: a valid C string and out-parameter; the function follows the control ABI.
        match unsafe { (self.counter)(c.as_ptr(), &mut v) } {
            0 => Ok(v),
            _ => Err(Error::invalid_argument(format!("the virtual platform has no counter {name:?}"))),
        }
    }

    /// Makes the `nth` (1-based) next call of the Level Zero function `function` return `result`
    /// (a `ze_result_t`, e.g. `0x70000002` = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](npu_sycl_bridge::ErrorKind::InvalidArgument) for a name with a NUL byte.
    pub fn inject_fault(&self, function: &str, nth: u64, result: u32) -> Result<()> {
        let c = CString::new(function).map_err(|_| Error::invalid_argument("function name contains a NUL byte"))?;
        // SAFETY: a valid C string; the function follows the control ABI.
        match unsafe { (self.inject)(c.as_ptr(), nth, result) } {
            0 => Ok(()),
            _ => Err(Error::invalid_argument(format!("vl0_fault_inject({function:?}) failed"))),
        }
    }

    /// Removes every pending fault.
    pub fn clear_faults(&self) {
        // SAFETY: no arguments; the function follows the control ABI.
        unsafe { (self.clear)() }
    }
}

/// The error the real drivers return when a call of `function` fails (a `ze_result_t`), for fault
/// sweeps: out of host memory for host allocations and object creation, out of device memory for
/// device/shared allocations and imports, device lost for submission and waits, unknown otherwise.
pub fn driver_error_for(function: &str) -> u32 {
    const OUT_OF_HOST_MEMORY: u32 = 0x7000_0002;
    const OUT_OF_DEVICE_MEMORY: u32 = 0x7000_0003;
    const DEVICE_LOST: u32 = 0x7000_0001;
    const UNKNOWN: u32 = 0x7fff_fffe;
    match function {
        "zeMemAllocHost" => OUT_OF_HOST_MEMORY,
        f if f.starts_with("zeMemAlloc") || f.starts_with("zeMemImport") => OUT_OF_DEVICE_MEMORY,
        f if f.contains("Create") => OUT_OF_HOST_MEMORY,
        "zeCommandQueueExecuteCommandLists"
        | "zeFenceHostSynchronize"
        | "zeEventHostSynchronize"
        | "zeCommandQueueSynchronize" => DEVICE_LOST,
        _ => UNKNOWN,
    }
}

/// The Level Zero platform a program runs on, as chosen by [`select`].
#[derive(Debug)]
pub enum Selection {
    /// Real hardware: `/dev/accel/accel*` exists and the system's `libze_loader.so.1` was opened
    /// (it is now the loader of the process).
    Real {
        /// The loader that was opened.
        loader: PathBuf,
        /// The accelerator device nodes found (`/dev/accel/accel0`, ...).
        accel: Vec<PathBuf>,
    },
    /// The virtual platform, activated by [`select`].
    Virtual {
        /// The activated platform.
        platform: &'static VirtualPlatform,
        /// Why it was chosen, for the user ("no /dev/accel/accel* device: ...", "--virtual was given").
        reason: String,
    },
}

impl Selection {
    /// Whether this is the virtual platform.
    pub fn is_virtual(&self) -> bool {
        matches!(self, Selection::Virtual { .. })
    }

    /// The virtual platform, if that is what was selected.
    pub fn virtual_platform(&self) -> Option<&'static VirtualPlatform> {
        match self {
            Selection::Virtual { platform, .. } => Some(platform),
            Selection::Real { .. } => None,
        }
    }
}

/// The accelerator device nodes (`/dev/accel/accel*`): the Linux `ivpu` driver's NPUs. Windows has
/// no such nodes: there an NPU is what the system's Level Zero loader (`System32\ze_loader.dll`,
/// installed with Intel's drivers) reports, so this lists that file when it exists.
pub fn accel_devices() -> Vec<PathBuf> {
    if cfg!(windows) {
        let system = std::env::var_os("SystemRoot").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(r"C:\Windows"));
        let loader = system.join("System32").join(LOADER_NAME);
        return if loader.is_file() { vec![loader] } else { Vec::new() };
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/dev/accel")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("accel"))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Chooses the Level Zero platform the way the example and `npu-sycl-doctor` do, and makes it the
/// process's loader. Call it before anything opens a Level Zero loader.
///
/// - With `force_virtual`, or when no `/dev/accel/accel*` exists: [`activate`] (the virtual
///   platform).
/// - Otherwise `dlopen("libze_loader.so.1")`: if that succeeds, [`Selection::Real`]; if it fails
///   (no system loader), the virtual platform, with the reason. A `libze_loader.so.1` that turns
///   out to be the virtual platform (`LD_LIBRARY_PATH=target/virtual-l0`) is reported as virtual.
///
/// # Errors
/// Those of [`activate`] when the virtual platform is needed and cannot be loaded.
pub fn select(force_virtual: bool) -> Result<Selection> {
    let virt = |reason: String| activate().map(|platform| Selection::Virtual { platform, reason });
    if force_virtual {
        return virt("the virtual platform was asked for explicitly".into());
    }
    let accel = accel_devices();
    if accel.is_empty() {
        let what = if cfg!(windows) {
            "no System32\\ze_loader.dll (Intel's drivers)"
        } else {
            "/dev/accel/accel* does not exist"
        };
        return virt(format!("no Intel NPU here: {what}"));
    }
    let h = match os::open_system_loader() {
        Ok(h) => h,
        Err(why) => {
            return virt(format!("{} exists, but no system {LOADER_NAME} can be opened ({why})", accel[0].display()))
        }
    };
    if sym(h, "vl0_counter").is_some() {
        return virt(format!("{LOADER_NAME} in this process is the virtual platform (LD_LIBRARY_PATH?)"));
    }
    let loader = sym(h, "zeInit").and_then(file_of).unwrap_or_else(|| PathBuf::from(LOADER_NAME));
    Ok(Selection::Real { loader, accel })
}

/// Loading and inspecting shared libraries, per OS.
#[cfg(unix)]
mod os {
    use std::ffi::{c_void, CStr, CString};
    use std::path::{Path, PathBuf};

    pub const LOADER_NAME: &str = "libze_loader.so.1";
    /// The cdylib's file name as cargo writes it: stem and extension.
    pub const CDYLIB: (&str, &str) = ("libze_loader", ".so");

    fn dlerror() -> String {
        // SAFETY: dlerror returns NULL or a thread-local NUL-terminated string.
        let e = unsafe { libc::dlerror() };
        if e.is_null() {
            "unknown dlopen error".into()
        } else {
            // SAFETY: non-null, NUL-terminated.
            unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
        }
    }

    fn open(name: &CStr) -> Result<*mut c_void, String> {
        // SAFETY: loading a Level Zero loader (virtual or the system's) runs initialisers that are
        // safe at any time; the handle is kept for the whole process on purpose.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if h.is_null() {
            Err(dlerror())
        } else {
            Ok(h)
        }
    }

    pub fn open_path(path: &Path) -> Result<*mut c_void, String> {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| "the path contains a NUL byte")?;
        open(&c)
    }

    pub fn open_system_loader() -> Result<*mut c_void, String> {
        open(&CString::new(LOADER_NAME).expect("no NUL"))
    }

    /// The loader already loaded in the process, if any (never loads anything).
    pub fn loaded_loader() -> Option<*mut c_void> {
        let soname = CString::new(LOADER_NAME).expect("no NUL");
        // SAFETY: RTLD_NOLOAD only returns an existing handle; nothing is loaded or initialised.
        let h = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        (!h.is_null()).then_some(h)
    }

    /// The file a symbol was loaded from.
    pub fn file_of(sym: *mut c_void) -> Option<PathBuf> {
        // SAFETY: an all-zero Dl_info is valid; dladdr fills it for addresses inside loaded objects.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::dladdr(sym as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: dli_fname is a NUL-terminated path owned by the dynamic loader.
        let s = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
        Some(PathBuf::from(s))
    }

    pub fn sym(h: *mut c_void, name: &str) -> Option<*mut c_void> {
        let n = CString::new(name).expect("no NUL");
        // SAFETY: h is a live handle from dlopen; the name is NUL-terminated.
        let p = unsafe { libc::dlsym(h, n.as_ptr()) };
        (!p.is_null()).then_some(p)
    }
}

/// Loading and inspecting shared libraries, per OS.
#[cfg(windows)]
mod os {
    use std::ffi::{c_void, CString};
    use std::os::windows::ffi::OsStrExt;
    use std::path::{Path, PathBuf};
    use windows_sys::Win32::System::LibraryLoader::{
        GetModuleFileNameW, GetModuleHandleExW, GetModuleHandleW, GetProcAddress, LoadLibraryExW,
        GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS, GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
        LOAD_WITH_ALTERED_SEARCH_PATH,
    };

    pub const LOADER_NAME: &str = "ze_loader.dll";
    /// The cdylib's file name as cargo writes it: stem and extension.
    pub const CDYLIB: (&str, &str) = ("ze_loader", ".dll");

    fn wide(s: &std::ffi::OsStr) -> Vec<u16> {
        s.encode_wide().chain([0]).collect()
    }

    fn open(name: &std::ffi::OsStr, flags: u32) -> Result<*mut c_void, String> {
        let w = wide(name);
        // SAFETY: a NUL-terminated name; loading a Level Zero loader runs initialisers that are safe
        // at any time; the module is kept for the whole process on purpose.
        let h = unsafe { LoadLibraryExW(w.as_ptr(), std::ptr::null_mut(), flags) };
        if h.is_null() {
            Err(std::io::Error::last_os_error().to_string())
        } else {
            Ok(h)
        }
    }

    /// By path, with its dependencies searched beside it.
    pub fn open_path(path: &Path) -> Result<*mut c_void, String> {
        open(path.as_os_str(), LOAD_WITH_ALTERED_SEARCH_PATH)
    }

    pub fn open_system_loader() -> Result<*mut c_void, String> {
        open(std::ffi::OsStr::new(LOADER_NAME), 0)
    }

    /// The loader already loaded in the process, if any (never loads anything).
    pub fn loaded_loader() -> Option<*mut c_void> {
        let w = wide(std::ffi::OsStr::new(LOADER_NAME));
        // SAFETY: a NUL-terminated name; GetModuleHandleW takes no reference and loads nothing.
        let h = unsafe { GetModuleHandleW(w.as_ptr()) };
        (!h.is_null()).then_some(h)
    }

    /// The file a symbol was loaded from.
    pub fn file_of(sym: *mut c_void) -> Option<PathBuf> {
        let mut m = std::ptr::null_mut();
        let flags = GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT;
        // SAFETY: with FROM_ADDRESS the name argument is an address inside a module; no reference is taken.
        if unsafe { GetModuleHandleExW(flags, sym as *const u16, &mut m) } == 0 {
            return None;
        }
        let mut buf = vec![0u16; 32768];
        // SAFETY: buf is writable for its length.
        let n = unsafe { GetModuleFileNameW(m, buf.as_mut_ptr(), buf.len() as u32) } as usize;
        (n > 0).then(|| PathBuf::from(String::from_utf16_lossy(&buf[..n])))
    }

    pub fn sym(h: *mut c_void, name: &str) -> Option<*mut c_void> {
        let n = CString::new(name).expect("no NUL");
        // SAFETY: h is a live module; the name is NUL-terminated.
        let p = unsafe { GetProcAddress(h, n.as_ptr().cast()) };
        p.map(|f| f as *mut c_void)
    }
}
