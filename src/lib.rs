//! # npu-sycl-bridge
//!
//! Zero-copy memory sharing between oneAPI/DPC++ (SYCL) applications and OpenVINO's NPU plugin on
//! Intel Core Ultra machines (Meteor, Lunar and Arrow Lake: an iGPU and an NPU on one shared DRAM).
//! A SYCL program keeps its buffers; the NPU reads its inputs from them and writes its outputs
//! into them, with no copy in between, and Rust's ownership rules keep every piece of memory alive
//! for as long as OpenVINO can still touch it.
//!
//! Everything here runs under the unmodified OpenVINO 2026.4.1 NPU plugin and DPC++ 2026.2
//! runtime. On machines without an Intel NPU the virtual Level Zero platform (`crates/virtual-l0`,
//! controlled through `testkit::virtual_platform`) stands in for the Level Zero stack (a virtual
//! Intel GPU and NPU); the tests and the example use it, and say so.
//!
//! The whole zero-copy program, in nine calls:
//!
//! ```no_run
//! # #[cfg(feature = "sycl")] fn main() -> npu_sycl_bridge::Result<()> {
//! use npu_sycl_bridge::{Auto, Core, Properties};
//! # let m = testkit::models::fully_connected(); // npu-sycl-bridge-testkit: reference models
//! # let (xml, weights, data) = (&m.xml, &m.weights, m.sample_input(0));
//!
//! let core = Core::new()?;
//! let model = core.read_model_from_memory(xml, weights)?;
//! let compiled = core.compile_model(&model, "NPU", &Properties::new())?;
//! // The iGPU and the NPU, the first sharing strategy that works, a tensor of it on every port:
//! let mut shared = Auto::for_model(&compiled)?.request(&compiled)?;
//! shared.inputs[0].write(0, &data)?; // a SYCL memcpy into the memory the NPU reads
//! shared.request.infer()?; // the NPU reads SYCL's memory and writes into SYCL's memory: no copy
//! let result: Vec<f32> = shared.outputs[0].read_to_vec()?;
//! # let _ = result; Ok(()) }
//! # #[cfg(not(feature = "sycl"))] fn main() {}
//! ```
//!
//! Keep the [`Auto`] to see its choice: `println!("{}", auto.decision())` says which strategy was
//! chosen and why the ones before it were not.
//! Memory the program already owns (SYCL USM or exportable device memory, a dma-buf fd, a Level
//! Zero allocation, page-aligned host memory) goes to the NPU through one call,
//! [`NpuContext::import`] ([`memory`]); [`pool::NpuPool`] hands such
//! memory out again and again with its import kept.
//!
//! `examples/forum_port.rs` (`cargo xtask example`) is the long form of this: the forum's C++
//! snippet ported step by step. `npu-sycl-doctor` (`cargo run -p npu-sycl-doctor [-- --json]`,
//! `crates/doctor`) tries every strategy on the machine it runs on and prints what
//! works.
//!
//! # Layers
//! | module | what | needs |
//! |--------|------|-------|
//! | [`openvino`] | Core, Model, CompiledModel, InferRequest, Tensor, remote contexts and tensors over OpenVINO's C API (`openvino-sys`, loaded at run time) | OpenVINO 2026.4 |
//! | [`level_zero`] | drivers, devices, contexts (owned or borrowed), allocations, dma-buf export/import | a Level Zero loader |
//! | [`npu`] | [`NpuContext`] (the plugin's context and its driver's capabilities) and the NPU memory paths: CPU_VA, dma-buf, L0 host tensors, [`PageAlignedBuffer`] | the NPU plugin |
//! | [`sycl`] | SYCL platforms, devices, contexts (also from a native `ze_context_handle_t`, `keep` or `transfer`), queues, USM, dma-buf export/import | feature `sycl` |
//! | [`memory`] | [`NpuMemory`]: every kind of memory a program owns that the NPU can use, for the one import call [`NpuContext::import`] | — |
//! | [`pool`] | [`NpuPool`]: the program's buffers imported once and handed out again | — |
//! | [`strategy`] | the SYCL ⇄ NPU sharing strategies and [`Auto`]; [`SharedTensor`] (SYCL copies, also asynchronous) | feature `sycl` |
//! | [`error`] | the one [`Error`] with an [`ErrorKind`] to match on | — |
//!
//! The reference models and the control of the virtual Level Zero platform (activate, select,
//! counters, fault injection) are in the development crate `npu-sycl-bridge-testkit`
//! (`crates/testkit`: `testkit::models`, `testkit::virtual_platform`), for tests and examples.
//!
//! # Sharing strategies
//! A strategy turns "SYCL memory" and "an NPU remote tensor" into one [`SharedTensor`]: the bytes
//! SYCL's queues copy into and out of are the bytes the NPU graph reads and writes. Which one
//! works depends on the drivers, not on the model:
//!
//! | strategy | SYCL side | NPU side (`MEM_TYPE`) | works on | zero-copy | costs | owns the memory |
//! |----------|-----------|-----------------------|----------|-----------|-------|-----------------|
//! | [`CardPath`] (the forum snippet) | `make_context(ownership::keep)` over the **NPU's** `ze_context`, then `malloc_shared` | CPU_VA | **nowhere with stock DPC++**: the NPU's Level Zero driver is never a SYCL platform. Returns [`ErrorKind::Unsupported`] `{ path: Path::CardPath }` with the reason. It does run to the end for a context of a driver SYCL lists ([`Strategy::card_path`]; `tests/strategies.rs`, `card_path_on_a_gpu_driver_context_runs_to_the_end_v1`/`_v2`) | — | — | — |
//! | [`DmaBuf`] | `alloc_exportable_device_mem` → `export_device_mem_handle<dma_buf>` (device memory) | SHARED_BUF (a dma-buf **fd**) | a GPU driver that exports dma-bufs and an NPU driver that lists `DMA_BUF` among its import types (the doctor prints it). Intel's recommended Linux path; a real i915/xe → ivpu import is **unverified**. Verified on the virtual platform with adapters v1 and v2 | yes | one export plus one NPU import per tensor (page pinning and IOMMU mapping on real hardware). Each inference then costs nothing extra | the remote tensor: it holds the fd (closes it once) and the [`sycl::ExportableDeviceMemory`] |
//! | [`CpuVa`] | `aligned_alloc_host` / `aligned_alloc_shared` (4096-aligned, size rounded up to 4096) | CPU_VA (system-memory import) | NPU drivers with `STANDARD_ALLOCATION` import (`ZE_extension_external_memmap_sysmem`). GPU-driver USM imported by the NPU as system memory is **unverified** on real i915/xe + ivpu | yes | one NPU import per tensor. Each inference then costs nothing extra | the remote tensor, which holds the [`sycl::UsmBuffer`] |
//! | `NpuExport` | NPU host memory the crate allocates exportable in its own NPU context, exported by the NPU driver as dma-bufs (new fds the caller owns) and imported by SYCL | SHARED_BUF import of the same buffer, used in place | an NPU driver that exports memory allocated exportable (linux-npu-driver 1.32.1 does; it exports nothing else, so the plugin's own tensors never) and a GPU driver that imports the NPU's dma-buf (ivpu → i915/xe **unverified**). Verified on the virtual platform with adapters v1 and v2 | yes | one allocation, two exports, one NPU and one SYCL import per tensor | the remote tensor holds the NPU allocation (freed after the plugin's import); the shared tensor holds the SYCL import and its fd |
//! | [`NpuToSycl`] | SYCL `memcpy` to and from the plugin's memory | L0 host tensor (`L0_INTERNAL_BUF`, allocated by the plugin) | wherever the NPU works | **no**: one CPU copy per transfer | none on the NPU side; every SYCL ⇄ NPU transfer costs one memcpy of the tensor's bytes | the plugin's allocation, freed with the remote tensor |
//! | [`Auto`] | tries every strategy but the card path, in its order (`Auto::ORDER`), and stops at the first that works | | chooses **dma-buf** on the virtual platform; expected (unverified) to do the same on Linux Core Ultra machines with stock DPC++ | | it runs the probe of each strategy it tries: a 4 KiB tensor written by SYCL, read through the NPU's mapping, and back | |
//!
//! Without SYCL, [`npu`] offers the same NPU memory paths to any host code: a CPU_VA tensor over a
//! [`PageAlignedBuffer`] (moved into the tensor), a dma-buf tensor from any
//! exporter ([`NpuContext::import`] of an `OwnedFd`), and L0 host tensors
//! (plugin memory: the "already resident" floor).
//!
//! Traps that hold for every strategy:
//! - `TensorType::Input` makes the plugin allocate **write-combined** memory (only memory the
//!   plugin allocates itself). Reading it back from the CPU is very slow, so use `Output` or
//!   `Binded` for anything read back.
//! - Make shared tensors once and keep them bound: the import is the expensive part. Rebinding
//!   memory the plugin already knows only patches the recorded command list. That needs the
//!   driver's mutable command lists ([`NpuCapabilities::mutable_command_lists`](npu::NpuCapabilities::mutable_command_lists)).
//! - On the virtual platform timings mean nothing (its "NPU" runs on the CPU). Only the
//!   counters count.
//!
//! # Lifetime rules
//! 1. **Memory outlives the tensors over it.** A remote tensor holds the owner of its memory in
//!    its keep-alive list: a [`PageAlignedBuffer`] is *moved* into
//!    [`import`](npu::NpuContext::import), and a strategy puts its SYCL allocation
//!    (and dma-buf fd) there. The memory is freed only after OpenVINO freed the tensor. Raw memory
//!    goes through the `unsafe` [`RawMemory`](memory::RawMemory),
//!    whose `keepalive` must be `'static`. Proved by the compile-fail tests
//!    `tests/compile_fail/npu_buffer_used_after_move_into_tensor.rs`,
//!    `npu_buffer_slice_held_across_move.rs`, `npu_keepalive_must_be_static.rs` and
//!    `npu_host_view_outlives_remote_tensor.rs`.
//! 2. **Tensors outlive the requests they are bound to.** An
//!    [`InferRequest`] holds every tensor bound to it. A tensor that was
//!    replaced by a rebind is held until the next inference has finished, because OpenVINO and
//!    the recorded command list may still refer to it. Proved by
//!    `tests/openvino_cpu.rs::a_rebound_tensor_lives_until_the_next_inference_finishes`.
//! 3. **The NPU's Level Zero context is borrowed.** The plugin keeps one per process, shared by
//!    every live `Core` (`ZeroInitStructsHolder::getInstance()`, since openvinotoolkit/openvino#29917),
//!    and destroys it when the last Core (or tensor, context, model) holding it goes: a later Core
//!    gets a new one. [`NpuContext`] wraps it as
//!    a borrowed [`level_zero::L0Context`] that never destroys it, and keeps the OpenVINO remote
//!    context, and through it the Core, alive. A SYCL context made from a foreign `ze_context`
//!    with `ownership::keep` holds the context's owner as its keep-alive
//!    ([`sycl::LevelZeroOwnership::Keep`]), so the owner cannot destroy it first. Proved by
//!    `tests/npu_memory_paths.rs::npu_context_keeps_the_compiled_model_and_core_alive`,
//!    `tests/npu_memory_paths.rs::two_cores_share_one_npu_context` and
//!    `tests/sycl_shim.rs` (`keep_leaves_the_context_alive_v1`/`_v2`).
//! 4. **A dma-buf fd is handed over by value.**
//!    [`import`](npu::NpuContext::import) takes an `OwnedFd` and closes it exactly
//!    once, after the plugin let go (the plugin never closes it). Use
//!    [`dup_fd`](level_zero::dup_fd) to keep your own fd. Proved by
//!    `tests/compile_fail/npu_dma_buf_fd_used_after_handover.rs` and
//!    `tests/npu_memory_paths.rs::bad_fds_are_typed_errors_without_leaks`.
//! 5. **No two running inferences share a tensor one of them writes**, and no inference starts
//!    while a host view or a pending SYCL copy ([`PendingSycl`]) holds the
//!    tensor: [`InvalidArgument`](ErrorKind::InvalidArgument) when it is tried. Inputs that are
//!    only read are shared. A [`pool`] hands a tensor out again only when no request holds it.
//!    Proved by `tests/npu_import_and_pool.rs` and `tests/strategies.rs`
//!    (`pending_sycl_copies_overlap_inference_and_exclude_it_v1`/`_v2`).
//!
//! Together these make every teardown order sound from safe code: requests, tensors, strategies,
//! SYCL contexts, NPU contexts, compiled models and the Core. This is checked by
//! `tests/strategies.rs` (`drops_in_any_order_are_sound_v1`/`_v2`,
//! `thousand_cycles_leak_nothing_v1`/`_v2`).
//!
//! # The forum questions, answered
//!
//! ## Can the NPU use pre-allocated device memory, or a memory pool of mine?
//! It can use your memory, but not your allocator or context. The NPU plugin has one Level Zero
//! context per process, shared by its Cores, and accepts no user context (Intel KB 000100965), so "a pool for the
//! NPU" means buffers you allocate once in **your** SYCL context, each wrapped once as a remote
//! tensor:
//! - pre-allocated **device** memory: exportable device memory handed over as a dma-buf ([`DmaBuf`]);
//! - pre-allocated **host/shared USM**, page-aligned: imported as CPU_VA ([`CpuVa`]).
//!
//! Bind each tensor once. New data written by SYCL after binding is seen by the next inference,
//! with no rebind and no re-import. Binding a request to another tensor patches the command list
//! the plugin recorded at the first inference (mutable command lists); nothing is re-recorded or
//! copied. Do **not** carve several tensors out of one allocation the NPU already knows: the
//! plugin reuses such an allocation from its **start**, so the crate refuses interior pointers
//! ([`ErrorKind::Unsupported`] `{ path: Path::CpuVa }`). Proved by:
//! - `tests/strategies.rs`: `dma_buf_matches_cpu_zero_copy_v1`/`_v2` (one import per tensor, none
//!   per inference, write-after-bind seen) and `cpu_va_host_and_shared_usm_match_cpu_zero_copy_v1`/`_v2`;
//! - `tests/npu_memory_paths.rs::cpu_va_at_an_existing_npu_allocation_reuses_it_and_interior_pointers_are_refused`;
//! - `tests/virtual_npu.rs::plain_page_aligned_tensors_are_imported_and_rebound` (three buffers
//!   bound in turn to one request, each read in place);
//! - `examples/forum_port.rs`.
//!
//! ## What does `SHARED_BUF` really take?
//! On Linux, a **dma-buf file descriptor**, passed as `MEM_HANDLE` = `(void*)(intptr_t)fd`.
//! It does not take a pointer: a host pointer given as `SHARED_BUF` is read as a garbage fd and the
//! import fails. The driver must list `DMA_BUF` among its import types. `MEM_HANDLE` read back from
//! the tensor is the NPU driver's *mapping* of the buffer, never the fd. The plugin does not close
//! the fd. Here [`NpuContext::import`] of an `OwnedFd` takes an `OwnedFd`,
//! checks that it is open and that the buffer behind it is large enough, and closes it once.
//! Proved by `tests/npu_memory_paths.rs::dma_buf_tensors_from_the_virtual_gpu_match_the_cpu_plugin_zero_copy`
//! (SHARED_BUF tensors from GPU-exported fds, zero-copy),
//! `tests/npu_memory_paths.rs::bad_fds_are_typed_errors_without_leaks` (a number that is not an
//! open fd, as a pointer would be, is an `InvalidArgument` before OpenVINO is called) and
//! `tests/strategies.rs` (`dma_buf_matches_cpu_zero_copy_v1`/`_v2`).
//!
//! ## Can I give the NPU a raw host pointer?
//! Yes, as **CPU_VA**: the pointer **and** the tensor's byte size must be multiples of 4096, and
//! there is **no copy fallback**. A misaligned pointer or size is an error
//! ("Importing standard allocation is not supported if memory is not aligned to standard page
//! size"), not a silent copy. The crate checks both before OpenVINO is called
//! ([`ErrorKind::Alignment`] `{ what: Aligned::CpuVaPointer | "CPU_VA byte size", .. }`).
//! [`PageAlignedBuffer`] gives such memory. The NPU then uses your address
//! itself: the tensor's `MEM_HANDLE` equals your pointer. Proved by
//! `tests/virtual_npu.rs::page_aligned_cpu_va_is_zero_copy_and_misaligned_is_refused`,
//! `tests/npu_memory_paths.rs::cpu_va_tensors_match_the_cpu_plugin_zero_copy` and
//! `tests/npu_memory_paths.rs::bad_cpu_va_memory_is_rejected_before_openvino`.
//!
//! ## When does OpenVINO copy my host tensors?
//! A plain `ov::Tensor` bound to an NPU request is
//! - **imported** (zero-copy, like CPU_VA, then rebound through a mutable command list) when its
//!   data pointer **and** byte size are multiples of 4096;
//! - **shadow-copied** into a plugin buffer on every inference otherwise. The results are the
//!   same; only the cost differs.
//!
//! Without mutable command lists in the driver (`ZE_experimental_mutable_command_list`),
//! **every** user tensor is copied in and out. Proved by
//! `tests/npu_memory_paths.rs::plain_tensors_page_aligned_are_imported_others_copied` (the graph
//! reads the aligned tensors' own pages; the unaligned ones are not imported) and
//! `tests/virtual_npu.rs::plain_page_aligned_tensors_are_imported_and_rebound`; the no-mutable-list
//! case by `tests/without_mutable_command_lists.rs` (the virtual NPU started without the extension:
//! even CPU_VA and page-aligned inputs are then copied, and the graph never reads their pages). The
//! crate reports the capability ([`NpuCapabilities::mutable_command_lists`](npu::NpuCapabilities::mutable_command_lists)),
//! and so does `npu-sycl-doctor`.
//!
//! ## Why did `make_context` with the NPU's context throw, and what should I do instead?
//! `sycl::make_context<backend::ext_oneapi_level_zero>({ze_ctx, devices, keep})` needs `devices`
//! from the SYCL platform of the **driver that created `ze_ctx`**. The NPU's context belongs to
//! the NPU's Level Zero driver, and DPC++ builds SYCL platforms only from drivers that have a GPU
//! device. So the NPU is never a SYCL device, and the only devices you can pass are the iGPU's,
//! which belong to another driver. UR does not check the mismatch. Adapter v2 throws
//! `UR_RESULT_ERROR_INVALID_ARGUMENT` (error 45); adapter v1 accepts the call, then
//! `malloc_shared` returns null and context teardown crashes. This crate turns that into errors:
//! - [`Strategy::new`]`(CardPath, ..)` returns [`ErrorKind::Unsupported`] `{ path: Path::CardPath }`, whose
//!   message says the above and names the strategies that work;
//! - [`sycl::SyclContext::from_level_zero`] probes the context on each device before the runtime sees
//!   it, so on the virtual platform the forced call is an [`ErrorKind::Sycl`] error rather than a
//!   later crash. A context of another driver stays outside that `unsafe` fn's contract: on real
//!   drivers the probe itself hands the NPU driver a GPU device handle.
//!
//! Instead, keep your own SYCL context on the iGPU and give the NPU your memory: as a dma-buf
//! ([`DmaBuf`]) or as page-aligned USM ([`CpuVa`]), or let [`Auto`] choose. Proved by
//! `tests/strategies.rs` (`card_path_on_the_npu_context_is_unsupported_v1`/`_v2`,
//! `cross_driver_make_context_is_an_error_v1`/`_v2`, `auto_picks_dma_buf_and_says_why_v1`/`_v2`),
//! `tests/sycl_shim.rs` (`cross_driver_make_context_is_an_error_v1`/`_v2`), `crates/doctor/tests/doctor.rs` and
//! `examples/forum_port.rs` (steps 5 and 6).
//!
//! # Feature `sycl`
//! Compiles the C++ SYCL shim (host-only, built with g++ or icpx against the DPC++ headers) and
//! enables [`sycl`], [`strategy`] and the `forum_port` example (`npu-sycl-doctor` turns it on).
//! Without it the crate still builds and runs the OpenVINO, Level Zero and NPU layers.
//!
#![cfg_attr(
    feature = "sycl",
    doc = "\n[`Auto`]: strategy::Auto\n[`CardPath`]: strategy::StrategyKind::CardPath\n[`Strategy::card_path`]: strategy::Strategy::card_path\n\
           [`Strategy::new`]: strategy::Strategy::new\n[`DmaBuf`]: strategy::StrategyKind::DmaBuf\n[`CpuVa`]: strategy::StrategyKind::CpuVa\n\
           [`NpuToSycl`]: strategy::StrategyKind::NpuToSycl\n[`SharedTensor`]: strategy::SharedTensor\n[`PendingSycl`]: strategy::PendingSycl\n[`sycl`]: crate::sycl\n\
           [`strategy`]: crate::strategy\n[`sycl::LevelZeroOwnership::Keep`]: crate::sycl::LevelZeroOwnership::Keep\n\
           [`sycl::SyclContext::from_level_zero`]: crate::sycl::SyclContext::from_level_zero\n\
           [`sycl::ExportableDeviceMemory`]: crate::sycl::ExportableDeviceMemory\n[`sycl::UsmBuffer`]: crate::sycl::UsmBuffer"
)]
// Without feature `sycl` the SYCL items do not exist: their links point at the feature's section.
#![cfg_attr(
    not(feature = "sycl"),
    doc = "\n[`Auto`]: #feature-sycl\n[`CardPath`]: #feature-sycl\n[`Strategy::card_path`]: #feature-sycl\n\
           [`Strategy::new`]: #feature-sycl\n[`DmaBuf`]: #feature-sycl\n[`CpuVa`]: #feature-sycl\n\
           [`NpuToSycl`]: #feature-sycl\n[`SharedTensor`]: #feature-sycl\n[`PendingSycl`]: #feature-sycl\n[`sycl`]: #feature-sycl\n\
           [`strategy`]: #feature-sycl\n[`sycl::LevelZeroOwnership::Keep`]: #feature-sycl\n\
           [`sycl::SyclContext::from_level_zero`]: #feature-sycl\n\
           [`sycl::ExportableDeviceMemory`]: #feature-sycl\n[`sycl::UsmBuffer`]: #feature-sycl"
)]
#![deny(missing_docs)]

pub mod error;
pub use error::{Error, ErrorKind, Path, Result};

// The front door: what a program needs to run a model on the NPU over its own or SYCL's memory.
pub use memory::{NpuMemory, PageAlignedBuffer};
pub use npu::{NpuContext, NpuTensor};
pub use openvino::{CompiledModel, Core, ElementType, InferRequest, Model, Properties, Shape, Tensor, TensorType};
pub use pool::NpuPool;
#[cfg(feature = "sycl")]
pub use strategy::{Auto, SharedRequest, SharedTensor, Strategy, StrategyKind};

pub mod level_zero;
pub mod memory;
pub mod npu;
pub mod openvino;
pub mod pool;

#[cfg(feature = "sycl")]
pub mod sycl;

#[cfg(feature = "sycl")]
pub mod strategy;
