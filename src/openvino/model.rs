//! `Model`: a model read from IR, before compilation.

use std::ffi::c_char;
use std::ptr::NonNull;

use openvino_sys as sys;

use super::{check, take_ov_string, Core, ElementType, KeepAlive, Shape};
use crate::error::{Error, Result};

/// An input or output of a model: its tensor name, element type and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    /// The port's (first) tensor name; empty when the port has none.
    pub name: String,
    /// The element type.
    pub element_type: ElementType,
    /// The shape, `None` when it is dynamic.
    pub shape: Option<Shape>,
}

impl PortInfo {
    /// The byte size of a tensor for this port, when its shape is static.
    pub fn byte_size(&self) -> Option<usize> {
        self.shape.as_ref().map(|s| self.element_type.byte_size(s.element_count()))
    }
}

/// Reads a const port's description and frees the port.
///
/// # Safety
/// `port` is a valid `ov_output_const_port_t` that nobody else frees; its model is alive.
pub(crate) unsafe fn take_port(port: *mut sys::ov_output_const_port_t) -> Result<PortInfo> {
    struct Port(*mut sys::ov_output_const_port_t);
    impl Drop for Port {
        fn drop(&mut self) {
            // SAFETY: the port is owned here and freed once.
            unsafe { sys::ov_output_const_port_free(self.0) }
        }
    }
    let port = Port(port);
    let mut name: *mut c_char = std::ptr::null_mut();
    // SAFETY: live port; name is an out-pointer. A port without names fails: that is not an error.
    let name = if unsafe { sys::ov_port_get_any_name(port.0, &mut name) } == sys::ov_status_e::OK {
        // SAFETY: name was allocated for us by the successful call.
        unsafe { take_ov_string(name) }.unwrap_or_default()
    } else {
        String::new()
    };
    let mut et = sys::ov_element_type_e::DYNAMIC;
    // SAFETY: live port; et is an out-pointer.
    check(unsafe { sys::ov_port_get_element_type(port.0, &mut et) }, || {
        format!("ov_port_get_element_type (port {name:?})")
    })?;
    let mut ps = sys::ov_partial_shape_t { rank: sys::ov_dimension_t { min: 0, max: 0 }, dims: std::ptr::null_mut() };
    // SAFETY: live port; ps is an out-pointer.
    check(unsafe { sys::ov_port_get_partial_shape(port.0, &mut ps) }, || {
        format!("ov_port_get_partial_shape (port {name:?})")
    })?;
    let shape = if ps.rank.min != ps.rank.max || ps.rank.min < 0 || (ps.dims.is_null() && ps.rank.min > 0) {
        None
    } else {
        // SAFETY: a static rank: dims has rank.min entries (filled by the successful call).
        let dims = if ps.rank.min == 0 {
            &[][..]
        } else {
            // SAFETY: as above: rank.min entries, filled by the successful call.
            unsafe { std::slice::from_raw_parts(ps.dims, ps.rank.min as usize) }
        };
        if dims.iter().all(|d| d.min == d.max && d.min >= 0) {
            Some(Shape::new(&dims.iter().map(|d| d.min as usize).collect::<Vec<_>>()))
        } else {
            None
        }
    };
    // SAFETY: filled by the successful call; freed once.
    unsafe { sys::ov_partial_shape_free(&mut ps) };
    Ok(PortInfo { name, element_type: ElementType::from_sys(et), shape })
}

/// A model read by [`Core::read_model_from_file`] or [`Core::read_model_from_memory`].
pub struct Model {
    ptr: NonNull<sys::ov_model_t>,
    _core: Core,
    _keepalive: Vec<KeepAlive>,
}

// SAFETY: an `ov_model_t` holds a `std::shared_ptr<ov::Model>` with no thread affinity; it may be
// moved to and freed on another thread. It is not Sync: `ov::Model` caches derived data lazily
// and is not documented as safe for concurrent use.
unsafe impl Send for Model {}

impl Model {
    /// # Safety
    /// `ptr` is a valid `ov_model_t` nobody else frees; `keepalive` holds what it points into.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::ov_model_t, core: Core, keepalive: Vec<KeepAlive>) -> Result<Model> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::invalid_argument("OpenVINO returned a null model"))?;
        Ok(Model { ptr, _core: core, _keepalive: keepalive })
    }

    /// The raw `ov_model_t`, still owned by this model.
    pub(crate) fn as_raw(&self) -> *mut sys::ov_model_t {
        self.ptr.as_ptr()
    }

    /// The model's inputs, in order.
    pub fn inputs(&self) -> Result<Vec<PortInfo>> {
        let mut n = 0usize;
        // SAFETY: live model; n is an out-pointer.
        check(unsafe { sys::ov_model_inputs_size(self.as_raw(), &mut n) }, || "ov_model_inputs_size".into())?;
        (0..n)
            .map(|i| {
                let mut p = std::ptr::null_mut();
                // SAFETY: live model; i < n; p is an out-pointer.
                check(unsafe { sys::ov_model_const_input_by_index(self.as_raw(), i, &mut p) }, || {
                    format!("ov_model_const_input_by_index({i})")
                })?;
                // SAFETY: p is a new port owned here; the model is alive.
                unsafe { take_port(p) }
            })
            .collect()
    }

    /// The model's outputs, in order.
    pub fn outputs(&self) -> Result<Vec<PortInfo>> {
        let mut n = 0usize;
        // SAFETY: live model; n is an out-pointer.
        check(unsafe { sys::ov_model_outputs_size(self.as_raw(), &mut n) }, || "ov_model_outputs_size".into())?;
        (0..n)
            .map(|i| {
                let mut p = std::ptr::null_mut();
                // SAFETY: live model; i < n; p is an out-pointer.
                check(unsafe { sys::ov_model_const_output_by_index(self.as_raw(), i, &mut p) }, || {
                    format!("ov_model_const_output_by_index({i})")
                })?;
                // SAFETY: p is a new port owned here; the model is alive.
                unsafe { take_port(p) }
            })
            .collect()
    }

    /// The model's friendly name (the `name` attribute of the IR's `<net>`).
    pub fn name(&self) -> Result<String> {
        let mut s: *mut c_char = std::ptr::null_mut();
        // SAFETY: live model; s is an out-pointer.
        check(unsafe { sys::ov_model_get_friendly_name(self.as_raw(), &mut s) }, || {
            "ov_model_get_friendly_name".into()
        })?;
        // SAFETY: allocated for us by the successful call.
        Ok(unsafe { take_ov_string(s) }.unwrap_or_default())
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: owned pointer, freed once; compiled models hold their own reference to the
        // underlying ov::Model. ov_model_free does not throw.
        unsafe { sys::ov_model_free(self.ptr.as_ptr()) };
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("raw", &self.as_raw()).finish()
    }
}
