//! Sizes: a tensor's byte size, rounding to pages.

use super::PAGE_SIZE;
use crate::error::{Error, Result};
use crate::openvino::{ElementType, Shape};

/// The byte size of a tensor of `element_type` and `shape`, rejecting element types without a
/// fixed size and empty shapes.
pub(crate) fn tensor_bytes(element_type: ElementType, shape: &Shape) -> Result<usize> {
    if element_type.bits() == 0 {
        return Err(Error::element_type(format!(
            "a tensor over shared memory needs a fixed-size element type, not {element_type}"
        )));
    }
    let elements = shape
        .dims()
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::shape(format!("shape {shape} has too many elements")))?;
    if elements == 0 {
        return Err(Error::shape(format!("shape {shape} has no elements; the NPU needs a non-empty tensor")));
    }
    element_type.checked_byte_size(elements).ok_or_else(|| Error::shape(format!("shape {shape} is too large")))
}

/// `n` rounded up to a multiple of [`PAGE_SIZE`].
pub(crate) fn round_up_to_page(n: usize) -> Option<usize> {
    n.checked_add(PAGE_SIZE - 1).map(|v| v & !(PAGE_SIZE - 1))
}
