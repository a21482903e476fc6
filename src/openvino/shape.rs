//! Static tensor shapes.

use std::fmt;
use std::sync::Arc;

use openvino_sys as sys;

use crate::error::{Error, Result};

/// A static shape: one extent per dimension (`[1, 3, 224, 224]`). A rank-0 shape is a scalar.
/// Shared, so a clone (every tensor a pool hands out carries one) allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape {
    dims: Arc<[usize]>,
}

impl Shape {
    /// A shape with these extents.
    pub fn new(dims: &[usize]) -> Shape {
        Shape { dims: Arc::from(dims) }
    }

    /// The extents.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The number of elements (the product of the extents; 1 for a scalar).
    pub fn element_count(&self) -> usize {
        self.dims.iter().product()
    }

    /// The extents as `i64`, as OpenVINO's `ov_shape_t` stores them.
    pub(crate) fn to_i64(&self) -> Result<Vec<i64>> {
        self.dims
            .iter()
            .map(|&d| i64::try_from(d).map_err(|_| Error::shape(format!("dimension {d} of shape {self} is too large"))))
            .collect()
    }

    /// Borrows `dims` (from [`to_i64`](Self::to_i64)) as an `ov_shape_t`. The C API copies the
    /// dimensions of a shape passed by value, so the result must only be passed by value to calls
    /// made while `dims` lives; it is never freed with `ov_shape_free`.
    pub(crate) fn as_sys(dims: &mut [i64]) -> sys::ov_shape_t {
        sys::ov_shape_t { rank: dims.len() as i64, dims: dims.as_mut_ptr() }
    }

    /// Copies an `ov_shape_t` filled by OpenVINO and frees it with `ov_shape_free`.
    ///
    /// # Safety
    /// `shape` was filled by a successful OpenVINO call and is not freed elsewhere.
    pub(crate) unsafe fn take_sys(mut shape: sys::ov_shape_t) -> Shape {
        let dims: Vec<usize> = if shape.dims.is_null() || shape.rank <= 0 {
            Vec::new()
        } else {
            // SAFETY: OpenVINO allocated `rank` dimensions at `dims` (caller's contract).
            unsafe { std::slice::from_raw_parts(shape.dims, shape.rank as usize) }
                .iter()
                .map(|&d| d.max(0) as usize)
                .collect()
        };
        // SAFETY: the shape was allocated by OpenVINO and is freed exactly once, here.
        unsafe { sys::ov_shape_free(&mut shape) };
        Shape { dims: dims.into() }
    }
}

impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Self {
        s.clone()
    }
}

impl From<&[usize]> for Shape {
    fn from(d: &[usize]) -> Self {
        Shape::new(d)
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(d: [usize; N]) -> Self {
        Shape::new(&d)
    }
}

impl From<Vec<usize>> for Shape {
    fn from(dims: Vec<usize>) -> Self {
        Shape { dims: dims.into() }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}
