//! USM allocations that free themselves, and the [`SyclMemory`] trait the queue copies through.

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use super::ffi::bridge;
use super::{sycl_error, Error, Queue, Result, SyclContext, SyclDevice};

/// The kind of a USM allocation (`sycl::usm::alloc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UsmKind {
    /// `malloc_host`: host memory the device can access.
    Host,
    /// `malloc_shared`: migrates between host and device.
    Shared,
    /// `malloc_device`: device memory, not host-accessible (copy through a queue).
    Device,
}

impl UsmKind {
    pub(crate) fn to_bridge(self) -> bridge::UsmKind {
        match self {
            UsmKind::Host => bridge::UsmKind::Host,
            UsmKind::Shared => bridge::UsmKind::Shared,
            UsmKind::Device => bridge::UsmKind::Device,
        }
    }

    pub(crate) fn from_bridge(k: bridge::UsmKind) -> Option<Self> {
        match k {
            bridge::UsmKind::Host => Some(UsmKind::Host),
            bridge::UsmKind::Shared => Some(UsmKind::Shared),
            bridge::UsmKind::Device => Some(UsmKind::Device),
            _ => None,
        }
    }

    /// Whether the host may dereference the memory directly.
    pub fn is_host_accessible(self) -> bool {
        !matches!(self, UsmKind::Device)
    }
}

/// Plain old data: every bit pattern is a valid value and there is no padding, so values can be
/// copied to and from device memory as bytes.
///
/// # Safety
/// Implement only for types with no padding, no invalid bit patterns and no pointers or references
/// whose validity matters (integers, floats, arrays of them, `#[repr(C)]` structs of them without
/// padding).
pub unsafe trait Pod: Copy + 'static {}

macro_rules! pod {
    ($($t:ty),*) => { $(
        // SAFETY: primitive integers and floats have no padding and accept every bit pattern.
        unsafe impl Pod for $t {}
    )* };
}
pod!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
// SAFETY: an array of `Pod` has no padding between elements and accepts every bit pattern.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// The size of one `T` for reading memory as a `Vec<T>` (`what` names the operation in the error).
///
/// `[T; 0]` is `Pod` but zero-sized: a `Vec` of it has no buffer (its pointer dangles), so copying
/// bytes into it would write through a dangling pointer. Such a read is an `InvalidArgument` error.
pub(crate) fn element_size_for_read<T: Pod>(what: &str) -> Result<usize> {
    match std::mem::size_of::<T>() {
        0 => Err(Error::invalid_argument(format!(
            "{what}: {} is a zero-sized type; memory cannot be read as zero-sized elements",
            std::any::type_name::<T>()
        ))),
        n => Ok(n),
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Memory the SYCL runtime knows in a [`SyclContext`]: a [`UsmBuffer`], an
/// [`ExportableDeviceMemory`](super::ExportableDeviceMemory) or an
/// [`ImportedMemory`](super::ImportedMemory). Copies go through [`Queue`].
pub trait SyclMemory: sealed::Sealed {
    /// The first byte (a device address for device memory).
    fn as_ptr(&self) -> *const u8;
    /// The first byte, for writing.
    fn as_mut_ptr(&mut self) -> *mut u8;
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Always `false`: zero-length allocations are refused.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The context the memory belongs to.
    fn context(&self) -> &Arc<SyclContext>;
}

impl sealed::Sealed for UsmBuffer {}
impl sealed::Sealed for super::ExportableDeviceMemory {}
impl sealed::Sealed for super::ImportedMemory {}
impl sealed::Sealed for LentMemory<'_> {}

/// SYCL memory of another owner, lent for as long as this lives: what a shared tensor hands out
/// for exclusive SYCL access (its `sycl_mut`). The owner's guard, held inside, keeps every other
/// user of the memory (an inference, a host view) away until it is dropped.
pub struct LentMemory<'a> {
    ptr: NonNull<u8>,
    len: usize,
    context: &'a Arc<SyclContext>,
    _guard: Box<dyn Send + Sync + 'a>,
}

impl<'a> LentMemory<'a> {
    /// `len` bytes at `ptr` in `context`, lent while `guard` is held.
    ///
    /// # Safety
    /// `ptr` is SYCL memory of `context`, valid for reads and writes of `len` bytes for `'a`, and
    /// while `guard` lives nothing else reads or writes it.
    pub(crate) unsafe fn new(
        ptr: NonNull<u8>,
        len: usize,
        context: &'a Arc<SyclContext>,
        guard: impl Send + Sync + 'a,
    ) -> LentMemory<'a> {
        LentMemory { ptr, len, context, _guard: Box::new(guard) }
    }
}

impl fmt::Debug for LentMemory<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LentMemory").field("ptr", &self.ptr).field("len", &self.len).finish()
    }
}

sycl_memory!(LentMemory<'_>);

/// The checks before a SYCL allocation of `len` bytes aligned to `alignment` on `device` of
/// `context` (`what` names the type in the errors): a non-zero length, a power-of-two alignment (or
/// 0), no error deferred by a `Drop` in the context, and a device of the context, whose slot and
/// `sycl::device` are returned.
pub(super) fn check_allocation<'c>(
    what: &str,
    context: &'c SyclContext,
    device: &SyclDevice,
    len: usize,
    alignment: usize,
) -> Result<(usize, &'c bridge::SyclDevice)> {
    if len == 0 {
        return Err(Error::invalid_argument(format!("{what}: zero-length allocation")));
    }
    if alignment != 0 && !alignment.is_power_of_two() {
        return Err(Error::invalid_argument(format!("{what}: alignment {alignment} is not a power of two")));
    }
    context.check_deferred()?;
    context.sycl_device(device)
}

/// A USM allocation (`aligned_alloc_{host,shared,device}`), freed with `sycl::free` in `Drop`.
///
/// It holds an `Arc` to its [`SyclContext`], so the context outlives it. All copy helpers (here and on
/// [`Queue`]) wait for completion before returning, so nothing is in flight on it when it is dropped
/// unless raw pointers were used with [`Queue::memcpy_raw`] (then wait first).
pub struct UsmBuffer {
    ptr: NonNull<u8>,
    len: usize,
    alignment: usize,
    kind: UsmKind,
    device: SyclDevice,
    context: Arc<SyclContext>,
}

// SAFETY: the buffer exclusively owns its allocation (like `Box<[u8]>`); freeing it from another thread
// is fine because `sycl::free` is thread-safe, and the context is `Send + Sync`.
unsafe impl Send for UsmBuffer {}
// SAFETY: `&UsmBuffer` only reads the pointer value and copies *out* through a queue (which waits); all
// writes need `&mut UsmBuffer`.
unsafe impl Sync for UsmBuffer {}

impl fmt::Debug for UsmBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UsmBuffer")
            .field("kind", &self.kind)
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("alignment", &self.alignment)
            .finish()
    }
}

impl UsmBuffer {
    /// Allocates `len` bytes of `kind` on `device` in `context`, aligned to `alignment` (a power of
    /// two, or 0 for the runtime's default). The memory is uninitialised as far as this type knows
    /// (read it only after writing it, or after [`fill`](Self::fill)).
    pub fn new(
        context: &Arc<SyclContext>,
        device: &SyclDevice,
        kind: UsmKind,
        len: usize,
        alignment: usize,
    ) -> Result<Self> {
        let (_, sd) = check_allocation("UsmBuffer", context, device, len, alignment)?;
        let p = bridge::usm_alloc(kind.to_bridge(), len, alignment, sd, context.raw())
            .map_err(sycl_error("USM allocation"))?;
        let ptr = NonNull::new(p).ok_or_else(|| Error::sycl("USM allocation returned nullptr"))?;
        Ok(UsmBuffer { ptr, len, alignment, kind, device: device.clone(), context: Arc::clone(context) })
    }

    /// The kind asked for at allocation.
    pub fn kind(&self) -> UsmKind {
        self.kind
    }

    /// The alignment asked for (0 = the runtime's default).
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// The device the memory was allocated on (for host memory: the device it was asked with).
    pub fn device(&self) -> &SyclDevice {
        &self.device
    }

    /// `sycl::get_pointer_type(ptr, context)` as the runtime reports it now; `None` for `unknown`.
    pub fn pointer_kind(&self) -> Result<Option<UsmKind>> {
        // SAFETY: the pointer is a live allocation of this context; the call only looks it up.
        let k = unsafe { bridge::pointer_kind(self.ptr.as_ptr(), self.context.raw()) }
            .map_err(sycl_error("get_pointer_type"))?;
        Ok(UsmKind::from_bridge(k))
    }

    /// Copies `src` to the start of the buffer through `queue` and waits.
    pub fn copy_from_slice<T: Pod>(&mut self, queue: &Queue, src: &[T]) -> Result<()> {
        queue.write(self, 0, src)
    }

    /// Copies the whole buffer into a new `Vec<T>` through `queue` and waits. The length in bytes must
    /// be a multiple of `size_of::<T>()`.
    pub fn copy_to_vec<T: Pod>(&self, queue: &Queue) -> Result<Vec<T>> {
        queue.read_to_vec(self)
    }

    /// Sets every byte to `value` through `queue` (`memset`) and waits.
    pub fn fill(&mut self, queue: &Queue, value: u8) -> Result<()> {
        queue.fill(self, value)
    }
}

sycl_memory!(UsmBuffer);

impl Drop for UsmBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated in this context by `usm_alloc`, is freed exactly once (here), and
        // the context is alive (we hold an Arc to it).
        if let Err(e) = unsafe { bridge::usm_free(self.ptr.as_ptr(), self.context.raw()) } {
            self.context.defer_error(Error::sycl(format!("sycl::free of {:p}: {}", self.ptr, e.what())));
        }
    }
}
