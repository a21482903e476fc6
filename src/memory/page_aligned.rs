//! [`PageAlignedBuffer`]: zeroed process memory whose address and size are multiples of the
//! 4096-byte page, as the NPU's system-memory import (CPU_VA) needs.

use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::openvino::{Element, ElementType, Shape, Tensor};

/// The page size the NPU's system-memory import requires for both the address and the size.
pub const PAGE_SIZE: usize = 4096;

/// Zeroed, page-aligned process memory (an anonymous `mmap`; `VirtualAlloc` on Windows), unmapped
/// once when dropped.
///
/// The size is rounded up to a multiple of [`PAGE_SIZE`] (at least one page), so every
/// `PageAlignedBuffer` satisfies the CPU_VA rules by construction. It is ordinary memory for the
/// NPU driver (`zeMemGetAllocProperties` says UNKNOWN), so OpenVINO imports it rather than reusing
/// an allocation.
///
/// Fill it through the slices, then **move** it into a tensor
/// ([`NpuContext::import`](crate::npu::NpuContext::import), [`into_tensor`](Self::into_tensor)).
/// The tensor owns it from then on and unmaps it only after OpenVINO freed the tensor and every
/// request that bound it let go of it. Its bytes are then reached through the tensor's checked views
/// ([`NpuTensor::host_data`](crate::npu::NpuTensor::host_data), [`Tensor::data`]),
/// which never overlap a running inference. (Taking the buffer by value, not in an `Arc`, is what
/// makes this sound: no other `&[u8]` into the memory can exist while the NPU writes it.)
pub struct PageAlignedBuffer {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer owns its mapping exclusively; shared access gives `&[u8]`, mutation needs
// `&mut self`, exactly like `Box<[u8]>`.
unsafe impl Send for PageAlignedBuffer {}
// SAFETY: as above.
unsafe impl Sync for PageAlignedBuffer {}

impl PageAlignedBuffer {
    /// A zeroed buffer of at least `byte_len` bytes: `byte_len` rounded up to a multiple of 4096
    /// (a zero length gives one page).
    ///
    /// # Errors
    /// [`Io`](crate::ErrorKind::Io) when the mapping fails (out of memory); [`Size`](crate::ErrorKind::Size)
    /// when the rounded size overflows.
    pub fn new(byte_len: usize) -> Result<PageAlignedBuffer> {
        let len = super::round_up_to_page(byte_len.max(1))
            .ok_or_else(|| Error::size("a page-aligned buffer", byte_len, usize::MAX))?;
        let ptr = map_zeroed(len).map_err(|e| Error::io(format!("mapping a {len}-byte page-aligned buffer"), e))?;
        Ok(PageAlignedBuffer { ptr, len })
    }

    /// A buffer holding a copy of `data` (followed by zeros up to the page boundary).
    pub fn from_slice<T: Element>(data: &[T]) -> Result<PageAlignedBuffer> {
        let bytes = std::mem::size_of_val(data);
        let mut b = PageAlignedBuffer::new(bytes)?;
        let dst = b.as_bytes_mut();
        // SAFETY: `data` is `bytes` readable bytes of plain-old-data (Element is sealed to POD
        // types without padding); `dst` holds at least `bytes` bytes and is a distinct allocation.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr().cast::<u8>(), dst.as_mut_ptr(), bytes) };
        Ok(b)
    }

    /// The size in bytes: a multiple of 4096.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false` (a buffer has at least one page).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The start address (a multiple of 4096). Valid while the buffer lives.
    pub fn as_ptr(&self) -> *const c_void {
        self.ptr.as_ptr().cast()
    }

    /// The start address, for writing. Valid while the buffer lives.
    pub fn as_mut_ptr(&mut self) -> *mut c_void {
        self.ptr.as_ptr().cast()
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: the mapping holds `len` initialised (zero-filled) bytes while self lives; shared
        // access only through &self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, mutable.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusive through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The whole buffer as elements of `T` (`len() / size_of::<T>()` of them; 4096 is a multiple
    /// of every element size, and the page alignment satisfies every element's alignment).
    pub fn as_slice<T: Element>(&self) -> &[T] {
        // SAFETY: page alignment ≥ align_of::<T>(); len is a multiple of 4096 and so of
        // size_of::<T>() (1, 2, 4 or 8); every bit pattern is a valid T (Element is sealed to POD).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<T>(), self.len / std::mem::size_of::<T>()) }
    }

    /// The whole buffer as mutable elements of `T`.
    pub fn as_mut_slice<T: Element>(&mut self) -> &mut [T] {
        // SAFETY: as for as_slice, exclusive through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<T>(), self.len / std::mem::size_of::<T>()) }
    }

    /// A plain OpenVINO [`Tensor`] over the start of this buffer (no copy), which keeps the buffer
    /// alive.
    ///
    /// Bound to an NPU request, such a tensor is imported zero-copy when its byte size is a
    /// multiple of 4096 (its address always is): the NPU plugin imports it like CPU_VA
    /// (`npu.imports.sysmem` on the virtual platform) and rebinds it through a mutable command
    /// list. Any other plain tensor is shadow-copied into a plugin buffer on every inference:
    /// results are the same, only slower. See the [module docs](crate::npu#plain-host-tensors).
    ///
    /// # Errors
    /// [`Size`](crate::ErrorKind::Size) when the tensor needs more bytes than the buffer has;
    /// [`ElementType`](crate::ErrorKind::ElementType) for element types without a fixed size.
    pub fn into_tensor(self, element_type: ElementType, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        let needed = super::tensor_bytes(element_type, &shape)?;
        if needed > self.len {
            return Err(Error::size(
                format!("a {element_type} tensor of shape {shape} over a page-aligned buffer"),
                needed,
                self.len,
            ));
        }
        let ptr = self.ptr.as_ptr().cast::<c_void>();
        // SAFETY: ptr is valid for `needed ≤ len` bytes, page-aligned (≥ any element alignment)
        // and initialised; the buffer moves into the tensor's keepalive, so it stays valid until
        // OpenVINO has freed the tensor and every request that bound it has released it. It was
        // moved in by value, so it is reachable only through the tensor, whose views and
        // inferences are serialised by the tensor's use state.
        unsafe { Tensor::from_host_ptr(element_type, shape, ptr, Some(Arc::new(self))) }
    }
}

impl Drop for PageAlignedBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `map_zeroed` with exactly this address and length and
        // is unmapped once, here; no reference into it outlives self.
        unsafe { unmap(self.ptr, self.len) };
    }
}

/// `len` (a page multiple) bytes of fresh, zeroed, page-aligned private memory.
#[cfg(unix)]
fn map_zeroed(len: usize) -> std::io::Result<NonNull<u8>> {
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched. Anonymous
    // mappings are zero-filled and page-aligned.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(NonNull::new(p.cast::<u8>()).expect("mmap never returns null on success"))
}

/// # Safety
/// `ptr` and `len` are a mapping made by [`map_zeroed`], unmapped once.
#[cfg(unix)]
unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
}

/// `len` (a page multiple) bytes of fresh, zeroed, page-aligned private memory (committed pages
/// start on an allocation-granularity boundary, which is a page multiple).
#[cfg(windows)]
fn map_zeroed(len: usize) -> std::io::Result<NonNull<u8>> {
    use windows_sys::Win32::System::Memory::{VirtualAlloc, MEM_COMMIT, MEM_RESERVE, PAGE_READWRITE};
    // SAFETY: reserves and commits fresh pages; no existing memory is touched. Committed pages
    // read as zero.
    let p = unsafe { VirtualAlloc(std::ptr::null(), len, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE) };
    NonNull::new(p.cast::<u8>()).ok_or_else(std::io::Error::last_os_error)
}

/// # Safety
/// `ptr` is a mapping made by [`map_zeroed`], released once.
#[cfg(windows)]
unsafe fn unmap(ptr: NonNull<u8>, _len: usize) {
    use windows_sys::Win32::System::Memory::{VirtualFree, MEM_RELEASE};
    // SAFETY: the caller's contract; MEM_RELEASE frees the whole reservation (size 0).
    unsafe { VirtualFree(ptr.as_ptr().cast(), 0, MEM_RELEASE) };
}

impl fmt::Debug for PageAlignedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageAlignedBuffer").field("ptr", &self.ptr).field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_zeroes_and_aligns() {
        let mut b = PageAlignedBuffer::new(5000).unwrap();
        assert_eq!(b.len(), 8192);
        assert_eq!(b.as_ptr() as usize % PAGE_SIZE, 0);
        assert!(b.as_bytes().iter().all(|&x| x == 0));
        b.as_mut_slice::<f32>()[3] = 1.5;
        assert_eq!(b.as_slice::<f32>().len(), 2048);
        assert_eq!(b.as_slice::<f32>()[3], 1.5);
        assert_eq!(PageAlignedBuffer::new(0).unwrap().len(), 4096);
        assert_eq!(PageAlignedBuffer::new(4096).unwrap().len(), 4096);
        let c = PageAlignedBuffer::from_slice(&[1u16, 2, 3]).unwrap();
        assert_eq!(&c.as_slice::<u16>()[..4], &[1, 2, 3, 0]);
    }
}
