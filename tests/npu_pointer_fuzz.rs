//! Property tests of the public API's pointer arguments (issue 14 item 4): `NpuContext::import` of
//! `unsafe` [`RawMemory`] (a pointer, a length and a keep-alive) and of the memory kinds that carry
//! a pointer of their own ([`PageAlignedBuffer`], Level Zero host and shared allocations).
//!
//! Every pointer stays inside a real mapping the case owns, so no case is undefined behaviour: a
//! page-aligned buffer of a few pages, the memory of an L0 host tensor of the NPU context (its start
//! or a pointer inside it), or host/shared memory of the virtual GPU, at any offset (page-aligned or
//! not) and with any length up to the mapping's end (zero, shorter than the tensor, equal, longer);
//! plus the null pointer. The tensor is of any element type, shape and tensor type, and often the
//! reference model's input, so that a tensor that is made is also used for an inference.
//!
//! The model, in the order the import checks: an allocation of the NPU's own Level Zero context is
//! refused (`Unsupported { CpuVa }`); a tensor with no elements, too many, or an element type without
//! a bit size is refused; a length shorter than the tensor is a `Size` error naming both; a pointer
//! the NPU context already owns is reused from the allocation's start only (a pointer inside one is
//! `Unsupported { CpuVa }`); any other pointer needs the driver's user-memory import (`Unsupported
//! { CpuVa }` on Meteor/Arrow Lake), a page-aligned address and a page-multiple byte size
//! (`Alignment` saying which), and must be memory the NPU can pin: GPU-driver memory is not (the
//! plugin's refusal, which the crate names `Unsupported { CpuVa }` for a Level Zero allocation and
//! passes on as an OpenVINO error for raw memory, whose owner it cannot know). Anything else is a
//! tensor of that element type and shape at exactly that address, whose host view shows the bytes
//! that were there and whose inference equals the CPU plugin's.
//!
//! After each case the keep-alive has been dropped exactly once (on error: by the time the import
//! returned; on success: not before the tensor and its request were dropped), and the process holds
//! exactly the fds and NPU and GPU allocations it held before.
use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use npu_sycl_bridge::error::Aligned;
use npu_sycl_bridge::level_zero::{DeviceType, L0Allocation, L0Context};
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::memory::{NpuMemory, RawMemory};
use npu_sycl_bridge::npu::NpuTensor;
use npu_sycl_bridge::openvino::{ElementType, MemType, Shape, TensorType};
use npu_sycl_bridge::ownership::KeepAlive;
use npu_sycl_bridge::{ErrorKind, Path, Reason, Result as BridgeResult};
use proptest::prelude::*;
use testkit::models;

mod common;

use common::npu::{core, counter, expected_import_bytes, imports_user_memory, l0_device, open_fds, NpuAndCpu};

const PAGE: usize = 4096;

/// The reference model's input: f32 `[4, 256]`, exactly one page.
const MODEL_INPUT: [usize; 2] = [4, 256];

/// Where an offset into a mapping lands.
#[derive(Debug, Clone, Copy)]
enum Offset {
    /// The mapping's start.
    Start,
    /// The start of one of its pages (taken modulo the page count).
    Page(usize),
    /// Any byte (taken modulo the mapping's size; for the caller's own mapping its end too).
    Byte(usize),
}

/// The length given with the pointer, relative to the tensor's byte size; never past the mapping's
/// end (it is cut there).
#[derive(Debug, Clone, Copy)]
enum Length {
    Zero,
    /// Shorter than the tensor by 1 + this (modulo the tensor's size).
    Shorter(usize),
    Equal,
    /// Longer than the tensor by this.
    Longer(usize),
    /// Up to the mapping's end.
    Rest,
}

/// What the pointer points into, and how it is handed over.
#[derive(Debug, Clone)]
enum Source {
    /// `RawMemory` into a page-aligned buffer of `pages` pages that the case owns; the buffer is the
    /// keep-alive, or (`keepalive: false`) the case keeps it until the tensor is gone.
    OwnPages { pages: usize, offset: Offset, len: Length, keepalive: bool },
    /// A `PageAlignedBuffer` of at least `byte_len` bytes, moved into the import.
    Buffer { byte_len: usize },
    /// `RawMemory::new` with the null pointer.
    Null { len: usize },
    /// `RawMemory` into the memory of an L0 host tensor of the NPU context (`pages` pages), which
    /// is the keep-alive.
    HostTensor { pages: usize, offset: Offset, len: Length },
    /// `RawMemory` into host (or shared) memory of the virtual GPU, which is the keep-alive.
    GpuRaw { shared: bool, pages: usize, offset: Offset, len: Length },
    /// The virtual GPU's host (or shared) allocation itself, moved into the import.
    GpuAllocation { shared: bool, pages: usize },
    /// A host allocation the program made in the NPU plugin's own Level Zero context.
    NpuAllocation { pages: usize },
}

fn offset() -> impl Strategy<Value = Offset> {
    prop_oneof![Just(Offset::Start), (0usize..4).prop_map(Offset::Page), any::<usize>().prop_map(Offset::Byte)]
}

fn length() -> impl Strategy<Value = Length> {
    prop_oneof![
        Just(Length::Zero),
        any::<usize>().prop_map(Length::Shorter),
        Just(Length::Equal),
        prop_oneof![1usize..=64, 1usize..=3 * PAGE].prop_map(Length::Longer),
        Just(Length::Rest),
    ]
}

fn source() -> impl Strategy<Value = Source> {
    let pages = 1usize..=4;
    prop_oneof![
        4 => (pages.clone(), offset(), length(), any::<bool>())
            .prop_map(|(pages, offset, len, keepalive)| Source::OwnPages { pages, offset, len, keepalive }),
        2 => prop_oneof![0usize..=64, 0usize..=4 * PAGE].prop_map(|byte_len| Source::Buffer { byte_len }),
        1 => prop_oneof![Just(0usize), Just(PAGE), any::<usize>()].prop_map(|len| Source::Null { len }),
        3 => (pages.clone(), offset(), length())
            .prop_map(|(pages, offset, len)| Source::HostTensor { pages, offset, len }),
        2 => (any::<bool>(), pages.clone(), offset(), length())
            .prop_map(|(shared, pages, offset, len)| Source::GpuRaw { shared, pages, offset, len }),
        1 => (any::<bool>(), pages.clone()).prop_map(|(shared, pages)| Source::GpuAllocation { shared, pages }),
        1 => pages.prop_map(|pages| Source::NpuAllocation { pages }),
    ]
}

/// Shapes of rank 0 to 4 with small extents (0 included; page multiples of bytes reachable), or one
/// with an extent so large that the element count or the byte count overflows.
fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        6 => prop::collection::vec(prop_oneof![1usize..=16, 0usize..=128], 0..=4),
        2 => prop::collection::vec(prop::sample::select(vec![1usize, 2, 4, 8, 16, 256, 512, 1024, 4096]), 1..=3),
        1 => (prop::collection::vec(1usize..=4, 0..=2), prop_oneof![Just(usize::MAX), Just(usize::MAX / 3), Just(1usize << 62)])
            .prop_map(|(mut dims, huge)| {
                dims.push(huge);
                dims
            }),
    ]
}

/// The tensor: often the model's input (so that an import that works is inferred with), else any
/// element type and shape.
fn tensor() -> impl Strategy<Value = (ElementType, Vec<usize>, TensorType)> {
    let tt = prop::sample::select(vec![TensorType::Input, TensorType::Output, TensorType::Binded]);
    prop_oneof![
        1 => tt.clone().prop_map(|tt| (ElementType::F32, MODEL_INPUT.to_vec(), tt)),
        2 => (prop::sample::select(ElementType::ALL.to_vec()), shape(), tt),
    ]
}

/// The reference model on the NPU and the CPU, and a GPU context to allocate from.
struct Setup {
    s: NpuAndCpu,
    gpu: Arc<L0Context>,
    device: npu_sycl_bridge::level_zero::L0Device,
    /// Whether the NPU imports user memory on this profile.
    user_memory: bool,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let s = NpuAndCpu::new(core(), models::fully_connected());
        let user_memory = imports_user_memory(&s.npu);
        let (driver, device) = l0_device(DeviceType::Gpu);
        Setup { s, gpu: Arc::new(L0Context::create(driver).unwrap()), device, user_memory }
    })
}

/// An owner whose drops are counted.
struct Counted<T> {
    _inner: T,
    drops: Arc<AtomicUsize>,
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn counted<T: Send + Sync + 'static>(inner: T) -> (Arc<Counted<T>>, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    (Arc::new(Counted { _inner: inner, drops: Arc::clone(&drops) }), drops)
}

/// What the NPU context already knows of the pointer.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Known {
    /// Nothing: the memory is imported (CPU_VA).
    Unknown,
    /// The start of one of its allocations of this many bytes: reused.
    Start(usize),
    /// Inside one of its allocations.
    Interior,
}

/// Who refuses to pin memory that passes every check of the crate.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pinning {
    Pinnable,
    /// GPU-driver memory handed over as raw memory: the plugin's error, passed on.
    RefusedRaw,
    /// GPU-driver memory handed over as a Level Zero allocation: named by the crate.
    RefusedL0,
}

/// The outcome the model predicts.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Error(ErrorKind),
    /// An error OpenVINO raised (the NPU plugin's refusal).
    OpenVinoError,
    Tensor,
}

/// The model of the CPU_VA import (see the module docs), in the order the crate checks.
fn model(
    needed: Result<usize, ErrorKind>,
    ptr: usize,
    len: usize,
    known: Known,
    user_memory: bool,
    pin: Pinning,
) -> Expect {
    let n = match needed {
        Ok(n) => n,
        Err(kind) => return Expect::Error(kind),
    };
    if n > len {
        return Expect::Error(ErrorKind::Size { needed: n, available: len });
    }
    let unsupported = |reason| Expect::Error(ErrorKind::Unsupported { path: Path::CpuVa, reason });
    match known {
        Known::Interior => unsupported(Reason::InsideNpuAllocation),
        Known::Start(size) if n > size => Expect::Error(ErrorKind::Size { needed: n, available: size }),
        Known::Start(_) => Expect::Tensor,
        Known::Unknown if !user_memory => unsupported(Reason::NoSystemMemoryImport),
        Known::Unknown if ptr % PAGE != 0 => {
            Expect::Error(ErrorKind::Alignment { what: Aligned::CpuVaPointer, required: PAGE, actual: ptr })
        }
        Known::Unknown if n % PAGE != 0 => {
            Expect::Error(ErrorKind::Alignment { what: Aligned::CpuVaByteSize, required: PAGE, actual: n })
        }
        Known::Unknown => match pin {
            Pinning::Pinnable => Expect::Tensor,
            Pinning::RefusedRaw => Expect::OpenVinoError,
            Pinning::RefusedL0 => unsupported(Reason::GpuUsmNotPinnable),
        },
    }
}

/// The byte offset `o` lands on in a mapping of `size` bytes (`end_ok`: its end is a valid
/// pointer for a length of 0).
fn resolve_offset(o: Offset, size: usize, end_ok: bool) -> usize {
    match o {
        Offset::Start => 0,
        Offset::Page(k) => (k % size.div_ceil(PAGE)) * PAGE,
        Offset::Byte(b) => b % (size + usize::from(end_ok)),
    }
}

/// The length `l` stands for, for a tensor of `needed` bytes (4096 when the tensor has no size),
/// cut at the `available` bytes up to the mapping's end.
fn resolve_length(l: Length, needed: Result<usize, ErrorKind>, available: usize) -> usize {
    let n = needed.unwrap_or(PAGE);
    let len = match l {
        Length::Zero => 0,
        Length::Shorter(k) => n - 1 - k % n,
        Length::Equal => n,
        Length::Longer(k) => n.saturating_add(k),
        Length::Rest => available,
    };
    len.min(available)
}

/// Fills `bytes` page by page with the model's sample input (one page each), so that any page of
/// a mapping is a valid input; a tail shorter than a page gets its prefix.
fn fill(bytes: &mut [u8], input: &[u8]) {
    for chunk in bytes.chunks_mut(PAGE) {
        chunk.copy_from_slice(&input[..chunk.len()]);
    }
}

/// The memory of one case, ready for the import.
enum Memory {
    Raw(RawMemory),
    Buffer(PageAlignedBuffer),
    Level0(L0Allocation),
}

/// One case, built: the memory, the predicted outcome, the address a tensor must use, the bytes it
/// must show (the first `needed` bytes at that address, read before the import), the keep-alive's
/// drop count, and what the case itself keeps alive until the tensor is gone.
struct Built {
    memory: BridgeResult<Memory>,
    expect: Expect,
    ptr: usize,
    bytes: Vec<u8>,
    drops: Option<Arc<AtomicUsize>>,
    held: Option<Box<dyn Any>>,
}

/// Copies `len` bytes at `ptr`.
///
/// # Safety
/// `ptr` is valid for reads of `len` bytes and nothing writes them meanwhile.
unsafe fn copy_out(ptr: *const u8, len: usize) -> Vec<u8> {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec()
}

fn build(source: &Source, et: ElementType, dims: &[usize], s: &Setup) -> Built {
    let need = expected_import_bytes(et, dims);
    let input = s.s.m.sample_input(0);
    let gpu_memory = |shared: bool, pages: usize| {
        let mut mem = if shared {
            s.gpu.alloc_shared(s.device, pages * PAGE, PAGE).unwrap()
        } else {
            s.gpu.alloc_host(pages * PAGE, PAGE, Default::default()).unwrap()
        };
        let mut bytes = vec![0u8; pages * PAGE];
        fill(&mut bytes, &input);
        mem.write(0, &bytes).unwrap();
        mem
    };
    match *source {
        Source::OwnPages { pages, offset, len, keepalive } => {
            let mut buf = PageAlignedBuffer::new(pages * PAGE).unwrap();
            fill(buf.as_bytes_mut(), &input);
            let size = buf.len();
            let off = resolve_offset(offset, size, true);
            let len = resolve_length(len, need.clone(), size - off);
            // SAFETY: `off <= size`: the pointer is inside the mapping or at its end.
            let ptr = unsafe { buf.as_mut_ptr().cast::<u8>().add(off) };
            let expect = model(need.clone(), ptr as usize, len, Known::Unknown, s.user_memory, Pinning::Pinnable);
            // SAFETY: `len` bytes from `ptr` lie in the mapping, which nothing writes now.
            let bytes = unsafe { copy_out(ptr, need.clone().map_or(0, |n| n.min(len))) };
            let (owner, drops) = counted(buf);
            let (keep, held): (Option<KeepAlive>, Option<Box<dyn Any>>) =
                if keepalive { (Some(owner), None) } else { (None, Some(Box::new(owner))) };
            // SAFETY: `ptr` is valid for reads and writes of `len` bytes (inside the mapping) until
            // the owner is dropped: the keep-alive, or held by the case until the tensor is gone;
            // the case touches the memory only through the tensor from here on.
            let memory = unsafe { RawMemory::new(ptr, len, keep) }.map(Memory::Raw);
            Built { memory, expect, ptr: ptr as usize, bytes, drops: Some(drops), held }
        }
        Source::Buffer { byte_len } => {
            let mut buf = PageAlignedBuffer::new(byte_len).unwrap();
            fill(buf.as_bytes_mut(), &input);
            let (ptr, len) = (buf.as_ptr() as usize, buf.len());
            let expect = model(need.clone(), ptr, len, Known::Unknown, s.user_memory, Pinning::Pinnable);
            let bytes = buf.as_bytes()[..need.map_or(0, |n| n.min(len))].to_vec();
            Built { memory: Ok(Memory::Buffer(buf)), expect, ptr, bytes, drops: None, held: None }
        }
        Source::Null { len } => {
            let (owner, drops) = counted(());
            // SAFETY: a null pointer is refused before it is used.
            let memory = unsafe { RawMemory::new(std::ptr::null_mut(), len, Some(owner)) }.map(Memory::Raw);
            let expect = Expect::Error(ErrorKind::InvalidArgument);
            Built { memory, expect, ptr: 0, bytes: Vec::new(), drops: Some(drops), held: None }
        }
        Source::HostTensor { pages, offset, len } => {
            let size = pages * PAGE;
            let mut host = s.s.npu.l0_host_tensor(ElementType::U8, [size], TensorType::Binded).unwrap();
            fill(&mut host.host_bytes_mut().unwrap(), &input);
            let base = host.remote().params().unwrap().mem_handle.cast::<u8>();
            let off = resolve_offset(offset, size, false);
            let len = resolve_length(len, need.clone(), size - off);
            // SAFETY: `off < size`: inside the tensor's allocation.
            let ptr = unsafe { base.add(off) };
            let known = if off == 0 { Known::Start(size) } else { Known::Interior };
            let expect = model(need.clone(), ptr as usize, len, known, s.user_memory, Pinning::Pinnable);
            // SAFETY: inside the host tensor's memory; no view of it is alive, no inference runs.
            let bytes = unsafe { copy_out(ptr, need.map_or(0, |n| n.min(len))) };
            let (owner, drops) = counted(host);
            // SAFETY: the host tensor (the keep-alive) owns the allocation `ptr` lies in, `len`
            // bytes up to its end at most; it is reached through the new tensor only from here on.
            let memory = unsafe { RawMemory::new(ptr, len, Some(owner)) }.map(Memory::Raw);
            Built { memory, expect, ptr: ptr as usize, bytes, drops: Some(drops), held: None }
        }
        Source::GpuRaw { shared, pages, offset, len } => {
            let mem = gpu_memory(shared, pages);
            let size = mem.len();
            let off = resolve_offset(offset, size, false);
            let len = resolve_length(len, need.clone(), size - off);
            // SAFETY: `off < size`: inside the allocation.
            let ptr = unsafe { mem.as_ptr().cast::<u8>().add(off) };
            let expect = model(need.clone(), ptr as usize, len, Known::Unknown, s.user_memory, Pinning::RefusedRaw);
            let (owner, drops) = counted(mem);
            // SAFETY: the GPU allocation (the keep-alive) is host-accessible memory holding `len`
            // bytes from `ptr`; it is reached through the tensor only from here on.
            let memory = unsafe { RawMemory::new(ptr, len, Some(owner)) }.map(Memory::Raw);
            Built { memory, expect, ptr: ptr as usize, bytes: Vec::new(), drops: Some(drops), held: None }
        }
        Source::GpuAllocation { shared, pages } => {
            let mem = gpu_memory(shared, pages);
            let (ptr, len) = (mem.as_ptr() as usize, mem.len());
            let expect = model(need, ptr, len, Known::Unknown, s.user_memory, Pinning::RefusedL0);
            Built { memory: Ok(Memory::Level0(mem)), expect, ptr, bytes: Vec::new(), drops: None, held: None }
        }
        Source::NpuAllocation { pages } => {
            let mem = s.s.npu.level_zero_context().alloc_host(pages * PAGE, PAGE, Default::default()).unwrap();
            let ptr = mem.as_ptr() as usize;
            // Refused before anything else: the plugin imports no memory of its own context.
            let expect =
                Expect::Error(ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::PluginContextMemory });
            Built { memory: Ok(Memory::Level0(mem)), expect, ptr, bytes: Vec::new(), drops: None, held: None }
        }
    }
}

fn import<M: NpuMemory>(m: M, et: ElementType, dims: &[usize], tt: TensorType) -> BridgeResult<NpuTensor> {
    setup().s.npu.import(m, et, Shape::new(dims), tt)
}

/// One case: checks the outcome against the model; returns what happened, for the case's message.
fn one_case(source: &Source, et: ElementType, dims: &[usize], tt: TensorType) -> Result<String, TestCaseError> {
    let s = setup();
    let Built { memory, expect, ptr, bytes, drops, held } = build(source, et, dims, s);
    let dropped = || drops.as_ref().map(|d| d.load(Ordering::SeqCst));
    let result = memory.and_then(|m| match m {
        Memory::Raw(m) => import(m, et, dims, tt),
        Memory::Buffer(m) => import(m, et, dims, tt),
        Memory::Level0(m) => import(m, et, dims, tt),
    });
    let what = match (result, &expect) {
        (Err(e), Expect::Error(kind)) => {
            prop_assert_eq!(e.kind(), kind, "{:#}", e);
            let message = format!("{e:#}");
            prop_assert!(!message.trim().is_empty());
            if drops.is_some() && held.is_none() {
                prop_assert_eq!(dropped(), Some(1), "the keep-alive is dropped once when the import fails: {}", e);
            }
            format!("refused: {e}")
        }
        (Err(e), Expect::OpenVinoError) => {
            prop_assert!(
                matches!(e.kind(), ErrorKind::OpenVino { .. }),
                "the plugin's refusal: {:?}: {:#}",
                e.kind(),
                e
            );
            prop_assert_eq!(dropped(), Some(1), "the keep-alive is dropped once when the import fails: {}", e);
            format!("refused by the plugin: {e}")
        }
        (Err(e), Expect::Tensor) => return Err(TestCaseError::fail(format!("a tensor was due: {e:#}"))),
        (Ok(_), expect) if *expect != Expect::Tensor => {
            return Err(TestCaseError::fail(format!("imported, but {expect:?} was due")))
        }
        (Ok(t), _) => {
            if held.is_none() {
                prop_assert_eq!(dropped().unwrap_or(0), 0, "the keep-alive lives as long as the tensor");
            }
            prop_assert_eq!(t.element_type(), et);
            prop_assert_eq!(t.shape(), &Shape::new(dims));
            let params = t.remote().params().unwrap();
            prop_assert_eq!(params.mem_type, Some(MemType::CpuVa));
            prop_assert_eq!(params.mem_handle as usize, ptr, "the NPU uses the given address");
            prop_assert_eq!(&t.host_bytes().unwrap()[..], &bytes[..], "the host view shows the bytes at the address");
            let inferred = et == ElementType::F32 && dims == MODEL_INPUT;
            if inferred {
                let out =
                    s.s.npu
                        .l0_host_tensor(ElementType::F32, s.s.m.outputs[0].shape.clone(), TensorType::Output)
                        .unwrap();
                let mut r = s.s.request();
                r.set_input_tensor(0, &t).unwrap();
                r.set_output_tensor(0, &out).unwrap();
                r.infer().unwrap();
                drop(t);
                prop_assert_eq!(dropped().filter(|_| held.is_none()).unwrap_or(0), 0, "the request keeps the memory");
                s.s.assert_matches_cpu_in(
                    &format!("{source:?}"),
                    std::slice::from_ref(&bytes),
                    &[out.host_bytes().unwrap().to_vec()],
                );
                drop(r);
            }
            format!("imported{}", if inferred { " and inferred" } else { "" })
        }
    };
    drop(held);
    if let Some(d) = &drops {
        prop_assert_eq!(d.load(Ordering::SeqCst), 1, "the keep-alive is dropped exactly once: {}", what);
    }
    Ok(what)
}

proptest! {
    // Each case maps a few pages (or allocates GPU or NPU memory) and imports them through
    // OpenVINO; one in six also runs an inference on the NPU and the CPU plugin.
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// Any pointer into memory the case owns, or null, as any tensor: the typed error the model
    /// predicts or a correct tensor, the keep-alive dropped exactly once, and afterwards the process
    /// holds exactly the fds and NPU and GPU allocations it held before.
    #[test]
    fn any_pointer_as_any_tensor_is_the_predicted_error_or_a_correct_tensor(
        source in source(),
        (et, dims, tt) in tensor(),
    ) {
        // Warm-up outside the counts: the contexts, the plugin's first import and host tensor.
        let s = setup();
        static WARM: OnceLock<()> = OnceLock::new();
        WARM.get_or_init(|| {
            let _ = s.s.npu.import(PageAlignedBuffer::new(PAGE).unwrap(), ElementType::U8, [PAGE], TensorType::Input);
            drop(s.s.npu.l0_host_tensor(ElementType::U8, [PAGE], TensorType::Binded).unwrap());
            drop(s.gpu.alloc_host(PAGE, PAGE, Default::default()).unwrap());
        });
        let (fds, npu_allocations, gpu_allocations) =
            (open_fds(), counter("npu.live_allocations"), counter("gpu.live_allocations"));
        let what = one_case(&source, et, &dims, tt)?;
        let case = format!("{source:?} as {et} {dims:?} {tt:?}: {what}");
        prop_assert_eq!(open_fds(), fds, "fds after {}", case);
        prop_assert_eq!(counter("npu.live_allocations"), npu_allocations, "NPU allocations after {}", case);
        prop_assert_eq!(counter("gpu.live_allocations"), gpu_allocations, "GPU allocations after {}", case);
    }
}
