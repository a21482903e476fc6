//! `Core`: the OpenVINO runtime entry point.

use std::ffi::{c_char, CStr};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use openvino_sys as sys;

use super::properties::as_sys;
use super::{check, cstring, load, take_ov_string, CompiledModel, KeepAlive, Model, Properties, RemoteContext, Tensor};
use crate::error::{Error, Result};
use crate::openvino::ElementType;

pub(crate) struct CoreInner {
    ptr: NonNull<sys::ov_core_t>,
}

// SAFETY: `ov::Core` is documented thread-safe (all its methods may be called concurrently from
// several threads), and the `ov_core_t` holder has no thread affinity, so it can be used from and
// freed on any thread.
unsafe impl Send for CoreInner {}
// SAFETY: see `Send`.
unsafe impl Sync for CoreInner {}

impl Drop for CoreInner {
    fn drop(&mut self) {
        // SAFETY: owned pointer, freed exactly once; everything created from the core holds an
        // Arc to this inner, so nothing uses it any more. ov_core_free does not throw.
        unsafe { sys::ov_core_free(self.ptr.as_ptr()) };
    }
}

/// The OpenVINO runtime: reads and compiles models, enumerates devices, gives device contexts.
///
/// Cloning is cheap and shares the same `ov_core_t` (and with it the plugins and the NPU's one
/// Level Zero context). Everything created from a core keeps it alive.
#[derive(Clone)]
pub struct Core {
    pub(crate) inner: Arc<CoreInner>,
}

/// The version of a device plugin ([`Core::versions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceVersion {
    /// The device name, e.g. `"CPU"`.
    pub device: String,
    /// The plugin's build number, e.g. `"2026.4.1-22982-..."`.
    pub build_number: String,
    /// The plugin's description, e.g. `"openvino_intel_cpu_plugin"`.
    pub description: String,
}

fn owned_c(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: a non-null string field of a struct filled by OpenVINO, alive until it is freed
        // by the matching *_free call (which the callers make after copying).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

impl Core {
    /// Loads OpenVINO (see [`load`](super::load)) and creates a core.
    pub fn new() -> Result<Core> {
        load()?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: ptr is a valid out-pointer.
        check(unsafe { sys::ov_core_create(&mut ptr) }, || "ov_core_create".into())?;
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::invalid_argument("ov_core_create returned null"))?;
        Ok(Core { inner: Arc::new(CoreInner { ptr }) })
    }

    /// The raw `ov_core_t`, still owned by this core.
    pub(crate) fn as_raw(&self) -> *mut sys::ov_core_t {
        self.inner.ptr.as_ptr()
    }

    pub(crate) fn keepalive(&self) -> KeepAlive {
        self.inner.clone()
    }

    /// The OpenVINO runtime's build number (`ov_get_openvino_version`), e.g. `"2026.4.1-22982-..."`.
    pub fn version() -> Result<String> {
        load()?;
        let mut v = sys::ov_version_t { buildNumber: std::ptr::null(), description: std::ptr::null() };
        // SAFETY: v is a valid out-pointer.
        check(unsafe { sys::ov_get_openvino_version(&mut v) }, || "ov_get_openvino_version".into())?;
        let s = owned_c(v.buildNumber);
        // SAFETY: v was filled by the successful call and is freed once.
        unsafe { sys::ov_version_free(&mut v) };
        Ok(s)
    }

    /// The devices OpenVINO can use here, e.g. `["CPU", "NPU"]`.
    pub fn available_devices(&self) -> Result<Vec<String>> {
        let mut d = sys::ov_available_devices_t { devices: std::ptr::null_mut(), size: 0 };
        // SAFETY: live core; d is a valid out-pointer.
        check(unsafe { sys::ov_core_get_available_devices(self.as_raw(), &mut d) }, || {
            "ov_core_get_available_devices".into()
        })?;
        let out = (0..d.size)
            .map(|i| {
                // SAFETY: d.devices has d.size entries (filled by the successful call).
                owned_c(unsafe { *d.devices.add(i) })
            })
            .collect();
        // SAFETY: filled by the successful call; freed once.
        unsafe { sys::ov_available_devices_free(&mut d) };
        Ok(out)
    }

    /// The plugin versions for `device` (a device name such as `"CPU"`, or a meta device).
    pub fn versions(&self, device: &str) -> Result<Vec<DeviceVersion>> {
        let c_dev = cstring("device name", device)?;
        let mut l = sys::ov_core_version_list_t { versions: std::ptr::null_mut(), size: 0 };
        // SAFETY: live core; c_dev outlives the call; l is a valid out-pointer.
        check(unsafe { sys::ov_core_get_versions_by_device_name(self.as_raw(), c_dev.as_ptr(), &mut l) }, || {
            format!("ov_core_get_versions_by_device_name({device:?})")
        })?;
        let out = (0..l.size)
            .map(|i| {
                // SAFETY: l.versions has l.size entries.
                let v = unsafe { &*l.versions.add(i) };
                DeviceVersion {
                    device: owned_c(v.device_name),
                    build_number: owned_c(v.version.buildNumber),
                    description: owned_c(v.version.description),
                }
            })
            .collect();
        // SAFETY: filled by the successful call; freed once.
        unsafe { sys::ov_core_versions_free(&mut l) };
        Ok(out)
    }

    /// A property of `device` as a string (`ov_core_get_property`), e.g. `("CPU",
    /// "FULL_DEVICE_NAME")`.
    pub fn property(&self, device: &str, key: &str) -> Result<String> {
        let c_dev = cstring("device name", device)?;
        let c_key = cstring("property key", key)?;
        let mut v: *mut c_char = std::ptr::null_mut();
        // SAFETY: live core; the strings outlive the call; v is a valid out-pointer.
        check(unsafe { sys::ov_core_get_property(self.as_raw(), c_dev.as_ptr(), c_key.as_ptr(), &mut v) }, || {
            format!("ov_core_get_property({device:?}, {key:?})")
        })?;
        // SAFETY: v was allocated by OpenVINO for us.
        Ok(unsafe { take_ov_string(v) }.unwrap_or_default())
    }

    /// Reads a model from an IR `.xml` file (weights from `weights`, or the `.bin` next to it).
    pub fn read_model_from_file(&self, xml: impl AsRef<Path>, weights: Option<&Path>) -> Result<Model> {
        let xml = xml.as_ref();
        let path_str = |p: &Path| {
            p.to_str()
                .ok_or_else(|| Error::invalid_argument(format!("the path {} is not valid UTF-8", p.display())))
                .and_then(|s| cstring("path", s))
        };
        let c_xml = path_str(xml)?;
        let c_bin = weights.map(path_str).transpose()?;
        let mut m = std::ptr::null_mut();
        check(
            // SAFETY: live core; the strings outlive the call (null bin = default); m is an out-pointer.
            unsafe {
                sys::ov_core_read_model(
                    self.as_raw(),
                    c_xml.as_ptr(),
                    c_bin.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
                    &mut m,
                )
            },
            || format!("reading the model {}", xml.display()),
        )?;
        // SAFETY: m is a new model nobody else owns.
        unsafe { Model::from_raw(m, self.clone(), Vec::new()) }
    }

    /// Reads a model from IR XML text and its weights (`.bin` contents; may be empty).
    ///
    /// The weights are copied into a tensor that the model keeps (OpenVINO's constants may point
    /// into it), so `weights` can be dropped afterwards.
    pub fn read_model_from_memory(&self, xml: &str, weights: &[u8]) -> Result<Model> {
        if xml.is_empty() {
            return Err(Error::invalid_argument("read_model_from_memory: the XML text is empty"));
        }
        let w = if weights.is_empty() {
            None
        } else {
            Some(Tensor::from_bytes(ElementType::U8, [weights.len()], weights)?)
        };
        let mut m = std::ptr::null_mut();
        check(
            // SAFETY: live core; xml is valid for xml.len() bytes (the C API copies it into a string);
            // the weights tensor is live (or null for none); m is an out-pointer.
            unsafe {
                sys::ov_core_read_model_from_memory_buffer(
                    self.as_raw(),
                    xml.as_ptr().cast(),
                    xml.len(),
                    w.as_ref().map_or(std::ptr::null(), |t| t.as_raw().cast_const()),
                    &mut m,
                )
            },
            || "reading a model from memory (IR XML text)".into(),
        )?;
        let keep: Vec<KeepAlive> = w.map(|t| t.handle as KeepAlive).into_iter().collect();
        // SAFETY: m is a new model nobody else owns; keep holds the weights it may point into.
        unsafe { Model::from_raw(m, self.clone(), keep) }
    }

    /// Compiles `model` for `device` (`"CPU"`, `"NPU"`, ...) with string `properties`
    /// (`ov_core_compile_model_props`).
    pub fn compile_model(&self, model: &Model, device: &str, properties: &Properties) -> Result<CompiledModel> {
        let c_dev = cstring("device name", device)?;
        let c_props = properties.to_c()?;
        let props = as_sys(&c_props);
        let mut cm = std::ptr::null_mut();
        check(
            // SAFETY: live core and model; device name and properties (pointing into c_props) outlive
            // the call; cm is an out-pointer.
            unsafe {
                sys::ov_core_compile_model_props(
                    self.as_raw(),
                    model.as_raw(),
                    c_dev.as_ptr(),
                    props.len(),
                    props.as_ptr(),
                    &mut cm,
                )
            },
            || format!("compiling the model for device {device:?}"),
        )?;
        // SAFETY: cm is a new compiled model nobody else owns.
        unsafe { CompiledModel::from_raw(cm, self.clone()) }
    }

    /// Imports a compiled model exported with [`CompiledModel::export`] for `device`.
    pub fn import_model(&self, exported: &[u8], device: &str) -> Result<CompiledModel> {
        let c_dev = cstring("device name", device)?;
        let mut cm = std::ptr::null_mut();
        check(
            // SAFETY: live core; exported is valid for its length (read during the call only); cm is an
            // out-pointer.
            unsafe {
                sys::ov_core_import_model(
                    self.as_raw(),
                    exported.as_ptr().cast(),
                    exported.len(),
                    c_dev.as_ptr(),
                    &mut cm,
                )
            },
            || format!("importing a compiled model ({} bytes) for device {device:?}", exported.len()),
        )?;
        // SAFETY: cm is a new compiled model nobody else owns.
        unsafe { CompiledModel::from_raw(cm, self.clone()) }
    }

    /// The device's default remote context (`ov_core_get_default_context`). For the NPU this is
    /// the plugin's one Level Zero context; see [`RemoteContext`].
    pub fn default_context(&self, device: &str) -> Result<RemoteContext> {
        let c_dev = cstring("device name", device)?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: live core; the name outlives the call; ctx is an out-pointer.
        check(unsafe { sys::ov_core_get_default_context(self.as_raw(), c_dev.as_ptr(), &mut ctx) }, || {
            format!("ov_core_get_default_context({device:?})")
        })?;
        // SAFETY: ctx is a new context nobody else owns; it keeps the core alive.
        unsafe { RemoteContext::from_raw(ctx, self.keepalive()) }
    }
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core").field("raw", &self.as_raw()).finish()
    }
}
