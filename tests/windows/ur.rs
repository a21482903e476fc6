//! Unified Runtime's C API (DPC++'s layer under SYCL) from the Windows wheels, loaded at run time:
//! `ur_loader_shared.dll` and the Level Zero adapters it finds beside it. Only what the Windows
//! suite asks of it: the GPU, exportable memory, NT-handle export and import, a blocking copy.

use std::ffi::c_void;
use std::path::Path;

use windows_sys::Win32::System::LibraryLoader::{
    GetProcAddress, LoadLibraryExW, SetDllDirectoryW, LOAD_WITH_ALTERED_SEARCH_PATH,
};

pub type Handle = *mut c_void;
pub const SUCCESS: i32 = 0;
pub const DEVICE_TYPE_GPU: u32 = 3;
pub const DEVICE_INFO_NAME: u32 = 66;
pub const EXTERNAL_MEM_TYPE_WIN32_NT: u32 = 1;
const STRUCTURE_TYPE_EXP_EXTERNAL_MEM_DESC: u32 = 0x2001;
const STRUCTURE_TYPE_EXP_WIN32_HANDLE: u32 = 0x2004;

/// `ur_exp_win32_handle_t`.
#[repr(C)]
pub struct Win32Handle {
    pub stype: u32,
    pub next: *const c_void,
    pub handle: *mut c_void,
}

/// `ur_exp_external_mem_desc_t`.
#[repr(C)]
pub struct ExternalMemDesc {
    pub stype: u32,
    pub next: *const c_void,
}

macro_rules! ur_api {
    ($($name:ident: fn($($arg:ty),*);)*) => {
        /// The entry points, from the loader.
        #[allow(non_snake_case)]
        pub struct Ur { $(pub $name: unsafe extern "C" fn($($arg),*) -> i32,)* }
        impl Ur {
            /// Loads `ur_loader_shared.dll` from `bin` (its dependencies and adapters beside it). `bin`
            /// becomes a DLL directory of the process, as oneAPI's `setvars.bat` puts it on `PATH`: the
            /// loader opens the adapters by path, and they find `umf.dll` and `libmmd.dll` by name.
            pub fn load(bin: &Path) -> Result<Ur, String> {
                let dir: Vec<u16> = bin.as_os_str().encode_wide_nul();
                // SAFETY: a NUL-terminated directory; it only adds a place the DLL search looks.
                if unsafe { SetDllDirectoryW(dir.as_ptr()) } == 0 {
                    return Err(format!("SetDllDirectory {}: {}", bin.display(), std::io::Error::last_os_error()));
                }
                let path: Vec<u16> = bin.join("ur_loader_shared.dll").as_os_str().encode_wide_nul();
                // SAFETY: a NUL-terminated path; the loader's initialisers have no preconditions, and
                // the module stays loaded for the whole process.
                let lib = unsafe { LoadLibraryExW(path.as_ptr(), std::ptr::null_mut(), LOAD_WITH_ALTERED_SEARCH_PATH) };
                if lib.is_null() {
                    return Err(format!("LoadLibrary {}: {}", bin.display(), std::io::Error::last_os_error()));
                }
                Ok(Ur { $($name: {
                    let name = concat!(stringify!($name), "\0");
                    // SAFETY: a live module and a NUL-terminated name.
                    let f = unsafe { GetProcAddress(lib, name.as_ptr()) }.ok_or(concat!("no ", stringify!($name)))?;
                    // SAFETY: the signature is ur_api.h's for this name.
                    unsafe { std::mem::transmute::<unsafe extern "system" fn() -> isize, unsafe extern "C" fn($($arg),*) -> i32>(f) }
                },)* })
            }
        }
    };
}

ur_api! {
    urLoaderInit: fn(u32, Handle);
    urAdapterGet: fn(u32, *mut Handle, *mut u32);
    urPlatformGet: fn(Handle, u32, *mut Handle, *mut u32);
    urDeviceGet: fn(Handle, u32, u32, *mut Handle, *mut u32);
    urDeviceGetInfo: fn(Handle, u32, usize, *mut c_void, *mut usize);
    urContextCreate: fn(u32, *const Handle, *const c_void, *mut Handle);
    urContextRelease: fn(Handle);
    urQueueCreate: fn(Handle, Handle, *const c_void, *mut Handle);
    urQueueRelease: fn(Handle);
    urEnqueueUSMMemcpy: fn(Handle, bool, *mut c_void, *const c_void, usize, u32, *const Handle, *mut Handle);
    urMemoryExportAllocExportableMemoryExp: fn(Handle, Handle, usize, usize, u32, *mut *mut c_void);
    urMemoryExportFreeExportableMemoryExp: fn(Handle, Handle, *mut c_void);
    urMemoryExportExportMemoryHandleExp: fn(Handle, Handle, u32, *mut c_void, *mut c_void);
    urBindlessImagesImportExternalMemoryExp: fn(Handle, Handle, usize, u32, *mut ExternalMemDesc, *mut Handle);
    urBindlessImagesMapExternalLinearMemoryExp: fn(Handle, Handle, u64, u64, Handle, *mut *mut c_void);
    urBindlessImagesFreeMappedLinearMemoryExp: fn(Handle, Handle, *mut c_void);
    urBindlessImagesReleaseExternalMemoryExp: fn(Handle, Handle, Handle);
}

trait WideNul {
    fn encode_wide_nul(&self) -> Vec<u16>;
}
impl WideNul for std::ffi::OsStr {
    fn encode_wide_nul(&self) -> Vec<u16> {
        use std::os::windows::ffi::OsStrExt;
        self.encode_wide().chain([0]).collect()
    }
}

/// `r` as a Result naming the call.
pub fn check(r: i32, call: &str) -> Result<(), String> {
    if r == SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} returned {r:#x}"))
    }
}

impl Ur {
    /// Every GPU device of every adapter, with its name.
    pub fn gpus(&self) -> Result<Vec<(Handle, String)>, String> {
        let mut out = Vec::new();
        // SAFETY: ur_api.h's contracts: counts first, then arrays of that many handles.
        unsafe {
            check((self.urLoaderInit)(0, std::ptr::null_mut()), "urLoaderInit")?;
            let mut n = 0;
            check((self.urAdapterGet)(0, std::ptr::null_mut(), &mut n), "urAdapterGet")?;
            let mut adapters = vec![std::ptr::null_mut(); n as usize];
            check((self.urAdapterGet)(n, adapters.as_mut_ptr(), std::ptr::null_mut()), "urAdapterGet")?;
            for a in adapters {
                let mut np = 0;
                check((self.urPlatformGet)(a, 0, std::ptr::null_mut(), &mut np), "urPlatformGet")?;
                let mut platforms = vec![std::ptr::null_mut(); np as usize];
                check((self.urPlatformGet)(a, np, platforms.as_mut_ptr(), std::ptr::null_mut()), "urPlatformGet")?;
                for p in platforms {
                    let mut nd = 0;
                    if (self.urDeviceGet)(p, DEVICE_TYPE_GPU, 0, std::ptr::null_mut(), &mut nd) != SUCCESS {
                        continue;
                    }
                    let mut devices = vec![std::ptr::null_mut(); nd as usize];
                    check(
                        (self.urDeviceGet)(p, DEVICE_TYPE_GPU, nd, devices.as_mut_ptr(), std::ptr::null_mut()),
                        "urDeviceGet",
                    )?;
                    for d in devices {
                        let mut name = [0u8; 256];
                        check(
                            (self.urDeviceGetInfo)(
                                d,
                                DEVICE_INFO_NAME,
                                name.len(),
                                name.as_mut_ptr().cast(),
                                std::ptr::null_mut(),
                            ),
                            "urDeviceGetInfo(NAME)",
                        )?;
                        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                        out.push((d, String::from_utf8_lossy(&name[..end]).into_owned()));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Imports the NT handle `handle` (`size` bytes) into `ctx` on `dev` and maps it: the external
    /// memory and its device pointer.
    pub fn import_nt_handle(
        &self,
        ctx: Handle,
        dev: Handle,
        handle: *mut c_void,
        size: usize,
    ) -> Result<(Handle, *mut c_void), String> {
        let win32 = Win32Handle { stype: STRUCTURE_TYPE_EXP_WIN32_HANDLE, next: std::ptr::null(), handle };
        let mut desc =
            ExternalMemDesc { stype: STRUCTURE_TYPE_EXP_EXTERNAL_MEM_DESC, next: std::ptr::addr_of!(win32).cast() };
        let mut ext = std::ptr::null_mut();
        let mut ptr = std::ptr::null_mut();
        // SAFETY: the descriptor chain lives for the calls; out-parameters are valid.
        unsafe {
            check(
                (self.urBindlessImagesImportExternalMemoryExp)(
                    ctx,
                    dev,
                    size,
                    EXTERNAL_MEM_TYPE_WIN32_NT,
                    &mut desc,
                    &mut ext,
                ),
                "urBindlessImagesImportExternalMemoryExp",
            )?;
            check(
                (self.urBindlessImagesMapExternalLinearMemoryExp)(ctx, dev, 0, size as u64, ext, &mut ptr),
                "urBindlessImagesMapExternalLinearMemoryExp",
            )?;
        }
        Ok((ext, ptr))
    }
}
