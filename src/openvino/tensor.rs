//! Host tensors (`ov_tensor_t` over memory the CPU can read) and the shared handle that tensors,
//! remote tensors and requests hold.

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use openvino_sys as sys;

use super::external::ExternalTensor;
use super::{check, load, ElementType, KeepAlive, Shape};
use crate::error::{Aligned, Error, Result};
use crate::openvino::Element;

/// Who is using a tensor's memory right now: data views (readers / one writer) on the Rust side,
/// inferences on the OpenVINO side. A view and an inference never overlap.
#[derive(Debug, Default)]
struct UseState {
    readers: usize,
    writer: bool,
    in_flight: usize,
    /// A running inference writes the memory (the tensor is bound to an output).
    device_writer: bool,
}

/// One `ov_tensor_t`, freed once when the last [`Tensor`], [`RemoteTensor`](super::RemoteTensor)
/// or [`InferRequest`](super::InferRequest) binding holding it is dropped, and then everything it
/// keeps alive (wrapped memory, its context, ...), in that order.
pub struct TensorHandle {
    raw: Raw,
    state: Mutex<UseState>,
    /// The device may only read the memory (the NPU driver imported it read-only), so it must never
    /// be bound where an inference writes. Fixed when the tensor is made.
    read_only_for_device: bool,
    // Dropped after `ptr` is freed (fields drop after `Drop::drop`).
    _keepalive: Vec<KeepAlive>,
}

/// The tensor itself: an `ov_tensor_t` of the C API, or a tensor of another binding.
enum Raw {
    Native(NonNull<sys::ov_tensor_t>),
    External(Box<dyn ExternalTensor>),
}

// SAFETY: the handle is an `ov_tensor_t`, a heap object holding a `std::shared_ptr<ov::Tensor>`;
// it has no thread affinity, so it may be freed on any thread (Send). Through `&TensorHandle` only
// const queries are made (`get_shape`, `get_element_type`, `get_byte_size`, `data`), which read
// immutable fields of the tensor and are safe to call concurrently (Sync). Writes to the tensor's
// memory go through `TensorDataMut`, which `UseState` makes exclusive. `keepalive` and an external
// tensor are Send + Sync by their types.
unsafe impl Send for TensorHandle {}
// SAFETY: see the `Send` impl above.
unsafe impl Sync for TensorHandle {}

impl TensorHandle {
    /// Takes ownership of `ptr`.
    ///
    /// # Safety
    /// `ptr` is a valid `ov_tensor_t` that nobody else frees, and `keepalive` keeps alive
    /// everything its memory depends on.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::ov_tensor_t, keepalive: Vec<KeepAlive>) -> Result<Arc<Self>> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::invalid_argument("OpenVINO returned a null tensor"))?;
        Ok(Self::new(Raw::Native(ptr), keepalive, false))
    }

    /// Takes a tensor of another binding; `keepalive` as in [`from_raw`](Self::from_raw).
    pub(crate) fn from_external(
        tensor: Box<dyn ExternalTensor>,
        keepalive: Vec<KeepAlive>,
        read_only_for_device: bool,
    ) -> Arc<Self> {
        Self::new(Raw::External(tensor), keepalive, read_only_for_device)
    }

    /// A remote tensor's handle: [`from_raw`](Self::from_raw), with whether the device may only
    /// read the memory.
    ///
    /// # Safety
    /// As [`from_raw`](Self::from_raw).
    pub(crate) unsafe fn from_raw_remote(
        ptr: *mut sys::ov_tensor_t,
        keepalive: Vec<KeepAlive>,
        read_only_for_device: bool,
    ) -> Result<Arc<Self>> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::invalid_argument("OpenVINO returned a null tensor"))?;
        Ok(Self::new(Raw::Native(ptr), keepalive, read_only_for_device))
    }

    fn new(raw: Raw, keepalive: Vec<KeepAlive>, read_only_for_device: bool) -> Arc<Self> {
        Arc::new(TensorHandle {
            raw,
            state: Mutex::new(UseState::default()),
            read_only_for_device,
            _keepalive: keepalive,
        })
    }

    pub(crate) fn is_read_only_for_device(&self) -> bool {
        self.read_only_for_device
    }

    /// The `ov_tensor_t`; null for a tensor of another binding.
    pub(crate) fn as_ptr(&self) -> *mut sys::ov_tensor_t {
        match &self.raw {
            Raw::Native(p) => p.as_ptr(),
            Raw::External(_) => std::ptr::null_mut(),
        }
    }

    /// The `ov_tensor_t`, for the C API calls that need one.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a tensor of another binding.
    pub(crate) fn native(&self) -> Result<*mut sys::ov_tensor_t> {
        match &self.raw {
            Raw::Native(p) => Ok(p.as_ptr()),
            Raw::External(_) => Err(Error::invalid_argument(
                "the tensor belongs to another OpenVINO binding (a C++ program's ov::RemoteTensor); bind and use it there",
            )),
        }
    }

    /// The tensor of another binding, if it is one.
    pub(crate) fn external(&self) -> Option<&dyn ExternalTensor> {
        match &self.raw {
            Raw::Native(_) => None,
            Raw::External(t) => Some(t.as_ref()),
        }
    }

    pub(crate) fn element_type(&self) -> Result<ElementType> {
        if let Some(t) = self.external() {
            return t.element_type();
        }
        let mut e = sys::ov_element_type_e::DYNAMIC;
        // SAFETY: ptr is a live tensor (owned by self); e is a valid out-pointer.
        check(unsafe { sys::ov_tensor_get_element_type(self.as_ptr(), &mut e) }, || {
            "ov_tensor_get_element_type".into()
        })?;
        Ok(ElementType::from_sys(e))
    }

    pub(crate) fn shape(&self) -> Result<Shape> {
        if let Some(t) = self.external() {
            return t.shape();
        }
        let mut s = sys::ov_shape_t { rank: 0, dims: std::ptr::null_mut() };
        // SAFETY: ptr is a live tensor; s is a valid out-pointer.
        let status = unsafe { sys::ov_tensor_get_shape(self.as_ptr(), &mut s) };
        // OpenVINO's C API cannot hand out a rank-0 shape: ov_tensor_get_shape makes its result with
        // ov_shape_create, which refuses rank 0 (INVALID_C_PARAM, nothing allocated), so every
        // scalar tensor's shape query fails. The tensor pointer is never null here, and a tensor of
        // rank 1 or more always has a shape to give: the refused one of one element is the scalar.
        if status == sys::ov_status_e::INVALID_C_PARAM && self.element_count()? == 1 {
            return Ok(Shape::new(&[]));
        }
        check(status, || "ov_tensor_get_shape".into())?;
        // SAFETY: s was filled by the successful call above and is freed only by take_sys.
        Ok(unsafe { Shape::take_sys(s) })
    }

    /// The number of elements (`ov_tensor_get_size`).
    fn element_count(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: ptr is a live tensor; n is a valid out-pointer.
        check(unsafe { sys::ov_tensor_get_size(self.as_ptr(), &mut n) }, || "ov_tensor_get_size".into())?;
        Ok(n)
    }

    pub(crate) fn byte_size(&self) -> Result<usize> {
        if let Some(t) = self.external() {
            return t.byte_size();
        }
        let mut n = 0usize;
        // SAFETY: ptr is a live tensor; n is a valid out-pointer.
        check(unsafe { sys::ov_tensor_get_byte_size(self.as_ptr(), &mut n) }, || "ov_tensor_get_byte_size".into())?;
        Ok(n)
    }

    fn data_ptr(&self) -> Result<*mut c_void> {
        let raw = self.native()?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: raw is a live tensor; p is a valid out-pointer.
        check(unsafe { sys::ov_tensor_data(raw, &mut p) }, || {
            "ov_tensor_data (the tensor's host memory; remote tensors have none)".into()
        })?;
        Ok(p)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, UseState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the tensor as used by an inference that reads it, or writes it (`writes`: bound to
    /// an output). Fails while a data view is alive, and where inferences would race on the
    /// memory: a written tensor is used by no other running inference, a read one by no running
    /// inference that writes it. Inferences that only read share a tensor.
    pub(crate) fn begin_inference(&self, what: &dyn fmt::Display, writes: bool) -> Result<()> {
        let mut s = self.lock();
        if s.writer || s.readers > 0 {
            return Err(Error::busy(format!(
                "{what} is held by a data view (Tensor::data/bytes, NpuTensor::host_data/host_bytes) or a SYCL \
                 access (a pending SharedTensor::write_async/read_async, a sycl_mut guard); drop or wait for it \
                 before running an inference that uses the tensor"
            )));
        }
        if s.device_writer || (writes && s.in_flight > 0) {
            return Err(Error::busy(format!(
                "{what} is used by another running inference{}, and this one would {} it: the two would race on \
                 the memory; wait for the other request first, or give each request its own output tensor",
                if s.device_writer { " that writes it" } else { "" },
                if writes { "write" } else { "read" }
            )));
        }
        s.in_flight += 1;
        s.device_writer = writes;
        Ok(())
    }

    pub(crate) fn end_inference(&self, writes: bool) {
        let mut s = self.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if writes {
            s.device_writer = false;
        }
    }

    fn acquire(&self, write: bool) -> Result<()> {
        let mut s = self.lock();
        if s.in_flight > 0 {
            return Err(Error::busy(
                "the tensor is in use by a running inference; wait for it (InferRequest::wait) first",
            ));
        }
        if s.writer || (write && s.readers > 0) {
            return Err(Error::busy(
                "the tensor's data is already borrowed (a clone of this tensor holds a data view or a SYCL access)",
            ));
        }
        if write {
            s.writer = true;
        } else {
            s.readers += 1;
        }
        Ok(())
    }

    fn release(&self, write: bool) {
        let mut s = self.lock();
        if write {
            s.writer = false;
        } else {
            s.readers = s.readers.saturating_sub(1);
        }
    }

    /// Pointer and element count for a view of `T` (or bytes when `T` is `u8` and `raw`).
    fn view<T: Element>(&self, raw: bool, write: bool) -> Result<(NonNull<T>, usize)> {
        if !raw {
            self.element_type()?.check::<T>("the tensor")?;
        }
        let p = self.data_ptr()?;
        let bytes = self.byte_size()?;
        self.view_ptr(p, bytes, write)
    }

    /// A read view of this tensor's `bytes` bytes at `p`, for tensors whose host-visible memory is
    /// found another way than `ov_tensor_data` (NPU remote tensors). The caller checked `T`.
    ///
    /// # Safety
    /// `p` is this tensor's memory: host-visible and valid for `bytes` bytes while `self` lives.
    pub(crate) unsafe fn data_at<T: Element>(&self, p: *mut c_void, bytes: usize) -> Result<TensorData<'_, T>> {
        let (ptr, len) = self.view_ptr::<T>(p, bytes, false)?;
        Ok(TensorData { handle: self, ptr, len, _p: PhantomData })
    }

    /// A write view of this tensor's memory at `p`; see [`data_at`](Self::data_at).
    ///
    /// # Safety
    /// As [`data_at`](Self::data_at).
    pub(crate) unsafe fn data_mut_at<T: Element>(&self, p: *mut c_void, bytes: usize) -> Result<TensorDataMut<'_, T>> {
        let (ptr, len) = self.view_ptr::<T>(p, bytes, true)?;
        Ok(TensorDataMut { handle: self, ptr, len, _p: PhantomData })
    }

    /// The data-use state without a view (reads shared, one writer): held by code that reaches the
    /// memory another way (SYCL copies), so that no inference overlaps it.
    #[cfg(feature = "sycl")]
    pub(crate) fn begin_use(&self, write: bool) -> Result<TensorUse<'_>> {
        self.acquire(write)?;
        Ok(TensorUse { handle: self, write })
    }

    /// Pointer and element count for a view of `T` over `bytes` bytes at `p`.
    fn view_ptr<T: Element>(&self, p: *mut c_void, bytes: usize, write: bool) -> Result<(NonNull<T>, usize)> {
        let len = bytes / std::mem::size_of::<T>();
        let p = if len == 0 {
            NonNull::dangling()
        } else {
            let p = NonNull::new(p.cast::<T>())
                .ok_or_else(|| Error::invalid_argument("the tensor has no host memory (null data pointer)"))?;
            if (p.as_ptr() as usize) % std::mem::align_of::<T>() != 0 {
                return Err(Error::alignment(Aligned::TensorData, std::mem::align_of::<T>(), p.as_ptr() as usize));
            }
            p
        };
        self.acquire(write)?;
        Ok((p, len))
    }
}

/// A tensor's data-use state held without a view ([`TensorHandle::begin_use`]); released on drop.
#[cfg(feature = "sycl")]
pub(crate) struct TensorUse<'a> {
    handle: &'a TensorHandle,
    write: bool,
}

#[cfg(feature = "sycl")]
impl Drop for TensorUse<'_> {
    fn drop(&mut self) {
        self.handle.release(self.write);
    }
}

impl Drop for TensorHandle {
    fn drop(&mut self) {
        if let Raw::Native(p) = self.raw {
            // SAFETY: p is owned by this handle and freed exactly once, here. ov_tensor_free does
            // not throw (it deletes a shared_ptr holder).
            unsafe { sys::ov_tensor_free(p.as_ptr()) };
        }
        // An external tensor is dropped with `raw`, before the keep-alives (field order).
    }
}

/// A host tensor: an element type, a shape and memory the CPU can read and write.
///
/// Cloning is cheap and shares the same tensor (and memory). Data is read and written through
/// views ([`data`](Self::data), [`data_mut`](Self::data_mut), [`bytes`](Self::bytes),
/// [`bytes_mut`](Self::bytes_mut)); a view cannot be taken while an inference that uses the tensor
/// runs, and an inference cannot start while a view is alive (both are errors, not races).
#[derive(Clone)]
pub struct Tensor {
    pub(crate) handle: Arc<TensorHandle>,
}

impl Tensor {
    /// A zero-filled tensor that owns its memory (allocated by OpenVINO's default allocator).
    pub fn new(element_type: ElementType, shape: impl Into<Shape>) -> Result<Tensor> {
        load()?;
        let shape = shape.into();
        if element_type == ElementType::Dynamic || element_type == ElementType::String {
            return Err(Error::element_type(format!(
                "a tensor of {element_type} elements cannot be created from plain memory"
            )));
        }
        let mut dims = shape.to_i64()?;
        let mut raw: *mut sys::ov_tensor_t = std::ptr::null_mut();
        // SAFETY: the shape borrows `dims`, which outlives the call (the C API copies it); raw is a
        // valid out-pointer.
        check(unsafe { sys::ov_tensor_create(element_type.to_sys(), Shape::as_sys(&mut dims), &mut raw) }, || {
            format!("ov_tensor_create({element_type}, {shape})")
        })?;
        // SAFETY: raw is a new tensor that nothing else owns; its memory is owned by the tensor.
        let handle = unsafe { TensorHandle::from_raw(raw, Vec::new()) }?;
        let bytes = handle.byte_size()?;
        if bytes > 0 {
            let p = handle.data_ptr()?;
            // SAFETY: p points to `bytes` writable bytes owned by the new tensor; no view exists yet.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        }
        Ok(Tensor { handle })
    }

    /// A tensor that owns a copy of `data`. `data.len()` must equal the shape's element count.
    pub fn from_slice<T: Element>(shape: impl Into<Shape>, data: &[T]) -> Result<Tensor> {
        let shape = shape.into();
        if data.len() != shape.element_count() {
            return Err(Error::shape(format!(
                "a tensor of shape {shape} has {} elements, but the slice has {}",
                shape.element_count(),
                data.len()
            )));
        }
        let mut t = Tensor::new(T::ELEMENT_TYPE, shape)?;
        t.data_mut::<T>()?.copy_from_slice(data);
        Ok(t)
    }

    /// A tensor that owns a copy of `bytes`, which must be exactly the tensor's byte size.
    pub fn from_bytes(element_type: ElementType, shape: impl Into<Shape>, bytes: &[u8]) -> Result<Tensor> {
        let shape = shape.into();
        let needed = element_type.byte_size(shape.element_count());
        if needed != bytes.len() {
            return Err(Error::size(format!("a {element_type} tensor of shape {shape}"), needed, bytes.len()));
        }
        let mut t = Tensor::new(element_type, shape)?;
        t.bytes_mut()?.copy_from_slice(bytes);
        Ok(t)
    }

    /// A tensor over memory that the caller provides (`ov_tensor_create_from_host_ptr`): no copy.
    ///
    /// `keepalive` is stored in the tensor and dropped after the native tensor is freed, which is
    /// after the last clone of this tensor and the last [`InferRequest`](super::InferRequest)
    /// binding of it are gone. Give it the owner of the memory whenever you can.
    ///
    /// # Safety
    /// - `ptr` is valid for reads and writes of the tensor's byte size
    ///   (`element_type.byte_size(shape.element_count())`) and aligned for the element type;
    /// - the memory stays valid, and is not accessed through other pointers while the tensor is
    ///   used (viewed or bound to a running inference), until `keepalive` is dropped, or, when
    ///   `keepalive` is `None`, until this tensor, all its clones and every request it was bound
    ///   to are dropped (OpenVINO may keep the pointer; see intel/openvino-rs#125);
    /// - for the data views to be sound, the memory is initialised.
    pub unsafe fn from_host_ptr(
        element_type: ElementType,
        shape: impl Into<Shape>,
        ptr: *mut c_void,
        keepalive: Option<KeepAlive>,
    ) -> Result<Tensor> {
        load()?;
        let shape = shape.into();
        if ptr.is_null() {
            return Err(Error::invalid_argument("Tensor::from_host_ptr: the pointer is null"));
        }
        let mut dims = shape.to_i64()?;
        let mut raw: *mut sys::ov_tensor_t = std::ptr::null_mut();
        check(
            // SAFETY: the shape borrows `dims` for the call only; ptr validity is the caller's contract.
            unsafe {
                sys::ov_tensor_create_from_host_ptr(element_type.to_sys(), Shape::as_sys(&mut dims), ptr, &mut raw)
            },
            || format!("ov_tensor_create_from_host_ptr({element_type}, {shape}, {ptr:p})"),
        )?;
        // SAFETY: raw is a new tensor nobody else owns; keepalive keeps its memory (caller's contract).
        let handle = unsafe { TensorHandle::from_raw(raw, keepalive.into_iter().collect()) }?;
        Ok(Tensor { handle })
    }

    /// Takes ownership of a raw `ov_tensor_t` (crate use: tensors returned by OpenVINO).
    ///
    /// # Safety
    /// As [`TensorHandle::from_raw`].
    pub(crate) unsafe fn from_raw(ptr: *mut sys::ov_tensor_t, keepalive: Vec<KeepAlive>) -> Result<Tensor> {
        // SAFETY: forwarded to the caller.
        Ok(Tensor { handle: unsafe { TensorHandle::from_raw(ptr, keepalive) }? })
    }

    /// The element type.
    pub fn element_type(&self) -> Result<ElementType> {
        self.handle.element_type()
    }

    /// The shape.
    pub fn shape(&self) -> Result<Shape> {
        self.handle.shape()
    }

    /// The size of the tensor's data in bytes.
    pub fn byte_size(&self) -> Result<usize> {
        self.handle.byte_size()
    }

    /// The address of the tensor's memory (for example to check its alignment). Reading or
    /// writing through it bypasses the views' checks.
    pub fn data_ptr(&self) -> Result<*mut c_void> {
        self.handle.data_ptr()
    }

    /// The raw `ov_tensor_t`, still owned by this tensor.
    pub(crate) fn as_raw(&self) -> *mut sys::ov_tensor_t {
        self.handle.as_ptr()
    }

    /// Reads the elements as `T`, which must match the element type.
    ///
    /// # Errors
    /// [`ElementType`](crate::ErrorKind::ElementType) if `T` does not match;
    /// [`Busy`](crate::ErrorKind::Busy) while an inference uses the tensor or a
    /// clone holds a mutable view.
    pub fn data<T: Element>(&self) -> Result<TensorData<'_, T>> {
        let (ptr, len) = self.handle.view::<T>(false, false)?;
        Ok(TensorData { handle: &self.handle, ptr, len, _p: PhantomData })
    }

    /// Writes the elements as `T`, which must match the element type. Errors as [`data`](Self::data).
    pub fn data_mut<T: Element>(&mut self) -> Result<TensorDataMut<'_, T>> {
        let (ptr, len) = self.handle.view::<T>(false, true)?;
        Ok(TensorDataMut { handle: &self.handle, ptr, len, _p: PhantomData })
    }

    /// Reads the raw bytes, whatever the element type.
    pub fn bytes(&self) -> Result<TensorBytes<'_>> {
        let (ptr, len) = self.handle.view::<u8>(true, false)?;
        Ok(TensorData { handle: &self.handle, ptr, len, _p: PhantomData })
    }

    /// Writes the raw bytes, whatever the element type.
    pub fn bytes_mut(&mut self) -> Result<TensorBytesMut<'_>> {
        let (ptr, len) = self.handle.view::<u8>(true, true)?;
        Ok(TensorDataMut { handle: &self.handle, ptr, len, _p: PhantomData })
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("raw", &self.handle.as_ptr())
            .field("element_type", &self.element_type().ok())
            .field("shape", &self.shape().ok())
            .finish()
    }
}

/// A read view of a tensor's elements ([`Tensor::data`]); dereferences to `[T]`.
pub struct TensorData<'a, T: Element> {
    handle: &'a TensorHandle,
    ptr: NonNull<T>,
    len: usize,
    _p: PhantomData<&'a [T]>,
}

/// A write view of a tensor's elements ([`Tensor::data_mut`]); dereferences to `[T]`.
pub struct TensorDataMut<'a, T: Element> {
    handle: &'a TensorHandle,
    ptr: NonNull<T>,
    len: usize,
    _p: PhantomData<&'a mut [T]>,
}

/// A read view of a tensor's bytes ([`Tensor::bytes`]).
pub type TensorBytes<'a> = TensorData<'a, u8>;
/// A write view of a tensor's bytes ([`Tensor::bytes_mut`]).
pub type TensorBytesMut<'a> = TensorDataMut<'a, u8>;

impl<T: Element> Deref for TensorData<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: ptr/len describe the tensor's memory (checked for type, size and alignment);
        // the tensor lives for 'a; UseState guarantees no writer view and no running inference
        // while this view exists; every bit pattern is a valid T (Element is sealed to POD types).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> Deref for TensorDataMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: as for TensorData; this view is the only one (UseState.writer).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> DerefMut for TensorDataMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for Deref; the view is exclusive (UseState.writer) and `&mut self` makes the
        // returned slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> Drop for TensorData<'_, T> {
    fn drop(&mut self) {
        self.handle.release(false);
    }
}

impl<T: Element> Drop for TensorDataMut<'_, T> {
    fn drop(&mut self) {
        self.handle.release(true);
    }
}

impl<T: Element + fmt::Debug> fmt::Debug for TensorData<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: Element + fmt::Debug> fmt::Debug for TensorDataMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
