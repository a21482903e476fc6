//! The NPU memory paths on the virtual platform, against the real OpenVINO NPU plugin: every path
//! infers and matches the CPU plugin, zero-copy is proven with the virtual platform's counters,
//! bad inputs come back as the right error kind without leaks, and 1,000 create/bind/infer/drop
//! cycles leave fds and allocations where they started.
//!
//! Every test calls `virtual_platform::activate()` first. Tests that read process-wide counters
//! or count fds run one at a time (`serial()`).

use std::ffi::c_void;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};

use npu_sycl_bridge::error::Aligned;
use npu_sycl_bridge::level_zero::{dup_fd, DeviceType, L0Allocation, L0Context, MemoryType};
use npu_sycl_bridge::memory::{PageAlignedBuffer, RawMemory};
use npu_sycl_bridge::npu::{LaptopGeneration, NpuContext, NpuTensor};
use npu_sycl_bridge::openvino::{Core, ElementType, MemType, Properties, Tensor, TensorType};
use npu_sycl_bridge::ownership::KeepAlive;
use npu_sycl_bridge::raw::AsRaw;
use npu_sycl_bridge::{ErrorKind, Path, Reason};
use testkit::models::{self, ReferenceModel};

mod common;

use common::npu::{
    core, counter, imports_user_memory, in_place_input, l0_device, open_fds, other_input, vp, NpuAndCpu,
};

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

type Setup = NpuAndCpu;

fn setup(m: ReferenceModel) -> Setup {
    NpuAndCpu::new(core(), m)
}

fn write_remote(t: &mut NpuTensor, bytes: &[u8]) {
    t.host_bytes_mut().unwrap().copy_from_slice(bytes);
}

fn read_remote(t: &NpuTensor) -> Vec<u8> {
    t.host_bytes().unwrap().to_vec()
}

struct Gpu {
    ctx: Arc<L0Context>,
    device: npu_sycl_bridge::level_zero::L0Device,
}

fn gpu() -> Gpu {
    let (driver, device) = l0_device(DeviceType::Gpu);
    Gpu { ctx: Arc::new(L0Context::create(driver).unwrap()), device }
}

impl Gpu {
    /// Exportable GPU memory holding `bytes`, and a dma-buf fd exported from it.
    fn exported(&self, len: usize, bytes: Option<&[u8]>) -> (L0Allocation, OwnedFd) {
        let mut mem = self.ctx.alloc_device_exportable(self.device, len, 4096).unwrap();
        if let Some(b) = bytes {
            mem.write(0, b).unwrap();
        }
        let fd = mem.export_dma_buf().unwrap();
        (mem, fd)
    }
}

// ------------------------------------------------------------------------------------------------
// NpuContext
// ------------------------------------------------------------------------------------------------

#[test]
fn npu_context_finds_the_plugins_l0_context_driver_and_capabilities() {
    let _s = serial();
    let s = setup(models::fully_connected());
    let caps = s.npu.capabilities();
    assert!(caps.fd_import && caps.mutable_command_lists, "{caps:?}");
    // User-memory import: NPU 40xx+ only, and only with the kernel's userptr ioctl.
    let generation = LaptopGeneration::from_npu_device_id(caps.device_id).expect("a known laptop NPU");
    assert_eq!(caps.generation, Some(generation));
    let userptr = generation.can_import_user_memory() && std::env::var("VL0_NPU_USERPTR").as_deref() != Ok("0");
    assert_eq!(caps.sysmem_import, userptr, "{caps:?}");
    assert_eq!(caps.api_version.major, 1);
    assert_eq!(s.npu.device().properties().unwrap().device_type, DeviceType::Vpu);
    let l0 = s.npu.level_zero_context();
    assert!(!l0.is_owned(), "the plugin's context is borrowed, never destroyed by us");
    l0.status().unwrap();
    assert_eq!(s.npu.driver().properties().unwrap().uuid, npu_sycl_bridge::level_zero::INTEL_NPU_DRIVER_UUID);

    // The Core's context is the same L0 context.
    let from_core = NpuContext::from_core(core()).unwrap();
    assert_eq!(from_core.level_zero_context().as_raw(), l0.as_raw());

    // Dropping every wrapper leaves the plugin's context alive (it is the Core's).
    let raw = l0.as_raw();
    drop(from_core);
    drop(s);
    let again = NpuContext::from_core(core()).unwrap();
    assert_eq!(again.level_zero_context().as_raw(), raw);
    again.level_zero_context().status().unwrap();
}

#[test]
fn npu_context_of_a_cpu_compiled_model_is_unsupported() {
    let _s = serial();
    let s = setup(models::fully_connected());
    let e = NpuContext::from_compiled_model(&s.cpu_model).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Unsupported { path: Path::Npu, reason: Reason::NotTheNpu }, "{e}");
    assert!(format!("{e:#}").contains("CPU"), "the message names the device: {e}");
    assert!(format!("{e:#}").contains("NPU"), "{e}");
    // OpenVINO's own error is kept, with its kind, as the source.
    let source = std::error::Error::source(&e).expect("OpenVINO's error as the source");
    let source = source.downcast_ref::<npu_sycl_bridge::Error>().expect("a crate Error");
    assert!(matches!(source.kind(), ErrorKind::OpenVino { .. }), "{source:?}");
}

#[test]
fn npu_context_keeps_the_compiled_model_and_core_alive() {
    let _s = serial();
    // A Core of its own, dropped before the tensors: everything is kept alive by the NpuContext.
    let m = models::multi_io();
    let (npu, mut request) = {
        let core = Core::new().unwrap();
        let model = core.read_model_from_memory(&m.xml, &m.weights).unwrap();
        let compiled = core.compile_model(&model, "NPU", &Properties::new()).unwrap();
        (NpuContext::from_compiled_model(&compiled).unwrap(), compiled.create_infer_request().unwrap())
    };
    let a = m.sample_input(0);
    let b = m.sample_input(1);
    let mut ta = npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap();
    write_remote(&mut ta, &a);
    let tb = in_place_input(&npu, &b, [1, 1024]);
    drop(npu);
    request.set_input_tensor(0, &ta).unwrap();
    request.set_input_tensor(1, &tb).unwrap();
    drop((ta, tb));
    request.infer().unwrap();
    let sum = request.output_tensor(0).unwrap().bytes().unwrap().to_vec();
    m.compare(0, &m.reference(&[&a, &b]).unwrap()[0], &sum).unwrap();
}

/// The plugin keeps one Level Zero context per process for every live Core (openvinotoolkit/openvino
/// `ZeroInitStructsHolder::getInstance()`): two Cores' NPU contexts are one context, a buffer is
/// imported into it once whichever Core's tensor comes first, and dropping one Core (with its model,
/// request and tensor) leaves the other's tensors working.
#[test]
fn two_cores_share_one_npu_context() {
    let _s = serial();
    let m = models::fully_connected();
    let d = &m.inputs[0];
    let input = m.sample_input(0);
    let want = m.reference(&[&input]).unwrap();
    let compile = |core: &Core| {
        let model = core.read_model_from_memory(&m.xml, &m.weights).unwrap();
        core.compile_model(&model, "NPU", &Properties::new()).unwrap()
    };
    let core_a = Core::new().unwrap();
    let core_b = Core::new().unwrap();
    let (compiled_a, compiled_b) = (compile(&core_a), compile(&core_b));
    let npu_a = NpuContext::from_compiled_model(&compiled_a).unwrap();
    let npu_b = NpuContext::from_compiled_model(&compiled_b).unwrap();
    assert_eq!(npu_a.level_zero_context().as_raw(), npu_b.level_zero_context().as_raw(), "one context for both Cores");

    let gpu = gpu();
    let (_mem, fd) = gpu.exported(input.len().next_multiple_of(4096), Some(&input));
    let imports0 = counter("npu.imports.dma_buf");
    let t_a = npu_a.import(dup_fd(fd.as_fd()).unwrap(), d.element_type, d.shape.clone(), TensorType::Input).unwrap();
    let t_b = npu_b.import(fd, d.element_type, d.shape.clone(), TensorType::Input).unwrap();
    assert_eq!(counter("npu.imports.dma_buf"), imports0 + 1, "one import of the buffer across both Cores");

    let mut request_a = compiled_a.create_infer_request().unwrap();
    request_a.set_input_tensor(0, &t_a).unwrap();
    request_a.infer().unwrap();
    m.compare(0, &want[0], &request_a.output_tensor(0).unwrap().bytes().unwrap()).unwrap();
    drop((request_a, t_a, npu_a, compiled_a, core_a));

    let mut request_b = compiled_b.create_infer_request().unwrap();
    request_b.set_input_tensor(0, &t_b).unwrap();
    request_b.infer().unwrap();
    m.compare(0, &want[0], &request_b.output_tensor(0).unwrap().bytes().unwrap()).unwrap();
    npu_b.level_zero_context().status().unwrap();
}

// ------------------------------------------------------------------------------------------------
// The paths: correct results and zero-copy
// ------------------------------------------------------------------------------------------------

#[test]
fn l0_host_tensors_match_the_cpu_plugin_without_copies() {
    let _s = serial();
    let s = setup(models::fully_connected());
    let d_in = &s.m.inputs[0];
    let d_out = &s.m.outputs[0];
    let mut input = s.npu.l0_host_tensor(d_in.element_type, d_in.shape.clone(), TensorType::Input).unwrap();
    let output = s.npu.l0_host_tensor(d_out.element_type, d_out.shape.clone(), TensorType::Binded).unwrap();
    let p = input.remote().params().unwrap();
    assert_eq!(p.mem_type, Some(MemType::L0InternalBuf));
    assert_eq!(p.tensor_type, Some(TensorType::Input));
    let info = s.npu.level_zero_context().memory_properties(p.mem_handle).unwrap();
    assert_eq!(info.kind, MemoryType::Host, "plugin-allocated host memory");

    let x = s.m.sample_input(0);
    write_remote(&mut input, &x);
    let mut r = s.request();
    r.set_input_tensor(0, &input).unwrap();
    r.set_output_tensor(0, &output).unwrap();
    let inferences0 = counter("npu.inferences");
    r.infer().unwrap(); // records the command list
    let copied0 = counter("npu.bytes_copied");
    r.infer().unwrap();
    assert_eq!(counter("npu.inferences"), inferences0 + 2, "ran on the virtual NPU");
    let (sys0, fd0) = (counter("npu.graph_args.sysmem"), counter("npu.graph_args.dma_buf"));
    s.assert_matches_cpu(std::slice::from_ref(&x), &[read_remote(&output)]);

    // Written after binding, seen by the next inference without rebinding.
    let y = other_input(&s.m, 0);
    write_remote(&mut input, &y);
    r.infer().unwrap();
    s.assert_matches_cpu(&[y], &[read_remote(&output)]);
    assert_eq!(counter("npu.bytes_copied"), copied0, "no device copies");
    assert_eq!(
        (counter("npu.graph_args.sysmem"), counter("npu.graph_args.dma_buf")),
        (sys0, fd0),
        "plugin memory, no imports"
    );
}

#[test]
fn cpu_va_tensors_match_the_cpu_plugin_zero_copy() {
    let _s = serial();
    let s = setup(models::multi_io());
    if !imports_user_memory(&s.npu) {
        return;
    }
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    let sysmem0 = counter("npu.imports.sysmem");
    let copied0 = counter("npu.bytes_copied");
    let buf_a = PageAlignedBuffer::from_slice(&f32s(&a)).unwrap();
    let va_a = buf_a.as_ptr();
    let mut ta = s.npu.import(buf_a, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
    let tb = s
        .npu
        .import(PageAlignedBuffer::from_slice(&f32s(&b)).unwrap(), ElementType::F32, [1, 1024], TensorType::Input)
        .unwrap();
    let sum =
        s.npu.import(PageAlignedBuffer::new(4096).unwrap(), ElementType::F32, [1, 1024], TensorType::Output).unwrap();
    let product =
        s.npu.import(PageAlignedBuffer::new(4096).unwrap(), ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
    // The VA the NPU uses is the buffer's own.
    assert_eq!(ta.remote().params().unwrap().mem_handle.cast_const(), va_a);
    assert_eq!(ta.remote().params().unwrap().mem_type, Some(MemType::CpuVa));
    assert_eq!(counter("npu.imports.sysmem"), sysmem0 + 4, "each buffer is imported once");

    let mut r = s.request();
    r.set_input_tensor(0, &ta).unwrap();
    r.set_input_tensor(1, &tb).unwrap();
    r.set_output_tensor(0, &sum).unwrap();
    r.set_output_tensor(1, &product).unwrap();
    let inferences0 = counter("npu.inferences");
    let args0 = counter("npu.graph_args.sysmem");
    r.infer().unwrap();
    assert_eq!(counter("npu.inferences"), inferences0 + 1, "ran on the virtual NPU");
    assert_eq!(counter("npu.graph_args.sysmem"), args0 + 4, "the graph ran on the imported pages themselves");
    s.assert_matches_cpu(&[a.clone(), b.clone()], &[read_remote(&sum), read_remote(&product)]);

    let a2 = other_input(&s.m, 0);
    write_remote(&mut ta, &a2);
    r.infer().unwrap();
    assert_eq!(counter("npu.graph_args.sysmem"), args0 + 8);
    s.assert_matches_cpu(&[a2, b], &[read_remote(&sum), read_remote(&product)]);
    assert_eq!(counter("npu.bytes_copied"), copied0, "no device copies");
    assert_eq!(counter("npu.imports.sysmem"), sysmem0 + 4, "binding and inferring import nothing more");
}

#[test]
fn dma_buf_tensors_from_the_virtual_gpu_match_the_cpu_plugin_zero_copy() {
    let _s = serial();
    let s = setup(models::multi_io());
    let g = gpu();
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    let fds0 = open_fds();
    let imports0 = counter("npu.imports.dma_buf");
    let copied0 = counter("npu.bytes_copied");
    {
        // The GPU writes the inputs into exportable device memory and exports dma-bufs.
        let (mut mem_a, fd_a) = g.exported(4096, Some(&a));
        let (_mem_b, fd_b) = g.exported(4096, Some(&b));
        let (mem_sum, fd_sum) = g.exported(4096, None);
        let (mem_prod, fd_prod) = g.exported(4096, None);
        let ta = s.npu.import(fd_a, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let tb = s.npu.import(fd_b, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let tsum = s.npu.import(fd_sum, ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        let tprod = s.npu.import(fd_prod, ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        assert_eq!(counter("npu.imports.dma_buf"), imports0 + 4);
        assert_eq!(ta.remote().params().unwrap().mem_type, Some(MemType::SharedBuf));

        let mut r = s.request();
        r.set_input_tensor(0, &ta).unwrap();
        r.set_input_tensor(1, &tb).unwrap();
        r.set_output_tensor(0, &tsum).unwrap();
        r.set_output_tensor(1, &tprod).unwrap();
        let inferences0 = counter("npu.inferences");
        let args0 = counter("npu.graph_args.dma_buf");
        r.infer().unwrap();
        assert_eq!(counter("npu.inferences"), inferences0 + 1, "ran on the virtual NPU");
        assert_eq!(counter("npu.graph_args.dma_buf"), args0 + 4, "the graph ran on the GPU's pages themselves");
        // The GPU reads the results from its own allocations.
        let read = |m: &L0Allocation| {
            let mut v = vec![0u8; 4096];
            m.read(0, &mut v).unwrap();
            v
        };
        s.assert_matches_cpu(&[a.clone(), b.clone()], &[read(&mem_sum), read(&mem_prod)]);

        // The GPU writes a new input after binding: the next inference sees it, no rebinding.
        let a2 = other_input(&s.m, 0);
        mem_a.write(0, &a2).unwrap();
        r.infer().unwrap();
        assert_eq!(counter("npu.graph_args.dma_buf"), args0 + 8);
        s.assert_matches_cpu(&[a2, b.clone()], &[read(&mem_sum), read(&mem_prod)]);
        assert_eq!(counter("npu.bytes_copied"), copied0, "no NPU copies");
        assert_eq!(counter("npu.imports.dma_buf"), imports0 + 4, "no re-import");
    }
    assert_eq!(open_fds(), fds0, "each tensor closed its fd once; the GPU memory's fds are gone too");
}

#[test]
fn plain_tensors_page_aligned_are_imported_others_copied() {
    let _s = serial();
    let s = setup(models::multi_io());
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));

    // Page-aligned address and size: imported like CPU_VA (zero-copy) where the NPU imports user
    // memory; copied by the plugin like any other host tensor where it does not (NPU 37xx).
    let userptr = s.npu.capabilities().sysmem_import;
    let sysmem0 = counter("npu.imports.sysmem");
    let copied0 = counter("npu.bytes_copied");
    let ta = PageAlignedBuffer::from_slice(&f32s(&a)).unwrap().into_tensor(ElementType::F32, [1, 1024]).unwrap();
    let tb = PageAlignedBuffer::from_slice(&f32s(&b)).unwrap().into_tensor(ElementType::F32, [1, 1024]).unwrap();
    let mut r = s.request();
    r.set_input_tensor(0, &ta).unwrap();
    r.set_input_tensor(1, &tb).unwrap();
    let args0 = counter("npu.graph_args.sysmem");
    r.infer().unwrap();
    let in_place = if userptr { 2 } else { 0 };
    assert_eq!(
        counter("npu.graph_args.sysmem"),
        args0 + in_place,
        "the graph read both inputs' own pages (userptr {userptr})"
    );
    let outs: Vec<Vec<u8>> = (0..2).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect();
    s.assert_matches_cpu(&[a.clone(), b.clone()], &outs);
    let imported = counter("npu.imports.sysmem") - sysmem0;
    assert_eq!(imported >= 2, userptr, "both page-aligned inputs were imported where the NPU can ({imported})");
    assert_eq!(counter("npu.bytes_copied"), copied0, "no device copies");

    // Not page-aligned (64 bytes into a buffer): copied by the plugin, results still correct.
    let sysmem1 = counter("npu.imports.sysmem");
    let mut unaligned = Vec::new();
    for bytes in [&a, &b] {
        let mut buf = PageAlignedBuffer::new(8192).unwrap();
        buf.as_bytes_mut()[64..64 + 4096].copy_from_slice(bytes);
        // SAFETY: 64 + 4096 ≤ 8192 bytes of the buffer, which the tensor keeps alive.
        let p = unsafe { buf.as_mut_ptr().cast::<u8>().add(64) }.cast::<c_void>();
        let keep: KeepAlive = Arc::new(buf);
        // SAFETY: p is valid for the tensor's 4096 bytes while `keep` lives; the tensor holds it.
        unaligned.push(unsafe { Tensor::from_host_ptr(ElementType::F32, [1, 1024], p, Some(keep)) }.unwrap());
    }
    let mut r2 = s.request();
    r2.set_input_tensor(0, &unaligned[0]).unwrap();
    r2.set_input_tensor(1, &unaligned[1]).unwrap();
    let args1 = counter("npu.graph_args.sysmem");
    r2.infer().unwrap();
    assert_eq!(counter("npu.graph_args.sysmem"), args1, "the graph ran on the plugin's copies");
    let outs: Vec<Vec<u8>> = (0..2).map(|i| r2.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect();
    s.assert_matches_cpu(&[a, b], &outs);
    assert_eq!(counter("npu.imports.sysmem"), sysmem1, "unaligned tensors are not imported (copied instead)");
    eprintln!(
        "plain tensors: page-aligned imports {imported}; unaligned: npu.bytes_copied +{} (the plugin's shadow copy is a CPU memcpy)",
        counter("npu.bytes_copied") - copied0
    );
}

#[test]
fn dma_buf_tensors_from_a_callers_fd_have_no_host_views() {
    let _s = serial();
    let s = setup(models::multi_io());
    let g = gpu();
    // Two tensors over one exported buffer (dup_fd), and the exporter keeps its allocation: three
    // ways to write the same pages. A host view (a Rust slice) of them could change under its
    // reader, so none is handed out.
    let (mut mem, fd) = g.exported(4096, Some(&s.m.sample_input(0)));
    let mut t1 = s.npu.import(dup_fd(fd.as_fd()).unwrap(), ElementType::F32, [1, 1024], TensorType::Input).unwrap();
    let mut t2 = s.npu.import(fd, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
    let host_view = ErrorKind::Unsupported { path: Path::HostView, reason: Reason::ExporterOwnsMemory };
    let e = t1.host_bytes().unwrap_err();
    assert_eq!(e.kind(), &host_view, "{e}");
    assert!(format!("{e:#}").contains("exporter"), "{e}");
    assert_eq!(t1.host_data::<f32>().unwrap_err().kind(), &host_view);
    assert_eq!(t1.host_bytes_mut().unwrap_err().kind(), &host_view);
    assert_eq!(t2.host_data_mut::<f32>().unwrap_err().kind(), &host_view);
    assert_eq!(t2.clone().host_bytes().unwrap_err().kind(), &host_view, "clones share the rule");
    // The data goes through the exporter, and the next inference sees it.
    let (a, b) = (other_input(&s.m, 0), s.m.sample_input(1));
    mem.write(0, &a).unwrap();
    let tb = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
    let mut tb_w = tb.clone();
    write_remote(&mut tb_w, &b);
    let sum = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
    let prod = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
    let mut r = s.request();
    r.set_input_tensor(0, &t1).unwrap();
    r.set_input_tensor(1, &tb).unwrap();
    r.set_output_tensor(0, &sum).unwrap();
    r.set_output_tensor(1, &prod).unwrap();
    r.infer().unwrap();
    s.assert_matches_cpu(&[a, b], &[read_remote(&sum), read_remote(&prod)]);
    drop((r, t1, t2));
}

#[test]
fn a_buffer_is_imported_once_per_npu_context() {
    let _s = serial();
    let s = setup(models::multi_io());
    let g = gpu();
    // Two fds of one exported buffer. The real NPU driver gives two imports of one buffer the same
    // buffer object, so freeing the first would break the second (the virtual NPU then fails the
    // graph): the bridge imports the buffer once and the second tensor uses that import.
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    let (mut mem, fd) = g.exported(4096, Some(&a));
    let imports0 = counter("npu.imports.dma_buf");
    let first = s.npu.import(dup_fd(fd.as_fd()).unwrap(), ElementType::F32, [1, 1024], TensorType::Input).unwrap();
    let second = s.npu.import(fd, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
    assert_eq!(counter("npu.imports.dma_buf"), imports0 + 1, "one import for two tensors over one buffer");
    assert_eq!(first.remote().params().unwrap().mem_type, Some(MemType::SharedBuf));
    assert_eq!(
        second.remote().params().unwrap().mem_handle,
        first.remote().params().unwrap().mem_handle,
        "the second tensor is the first import's mapping"
    );
    assert_eq!(
        second.host_bytes().unwrap_err().kind(),
        &ErrorKind::Unsupported { path: Path::HostView, reason: Reason::ExporterOwnsMemory }
    );
    // The first tensor goes; the import stays for the second, which still reads the GPU's pages.
    drop(first);
    let a2 = other_input(&s.m, 0);
    mem.write(0, &a2).unwrap();
    let tb = in_place_input(&s.npu, &b, [1, 1024]);
    let sum = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
    let prod = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
    let graph_dma0 = counter("npu.graph_args.dma_buf");
    let mut r = s.request();
    r.set_input_tensor(0, &second).unwrap();
    r.set_input_tensor(1, &tb).unwrap();
    r.set_output_tensor(0, &sum).unwrap();
    r.set_output_tensor(1, &prod).unwrap();
    r.infer().unwrap();
    s.assert_matches_cpu(&[a2, b.clone()], &[read_remote(&sum), read_remote(&prod)]);
    assert!(counter("npu.graph_args.dma_buf") > graph_dma0, "the graph read the imported pages in place");
    // Once every tensor over it is gone, the buffer is imported afresh.
    drop((r, second));
    let live0 = counter("npu.live_allocations");
    let again = s.npu.import(mem.export_dma_buf().unwrap(), ElementType::F32, [1, 1024], TensorType::Input);
    assert_eq!(counter("npu.imports.dma_buf"), imports0 + 2, "a new import after the first was freed");
    drop(again.unwrap());
    assert_eq!(counter("npu.live_allocations"), live0);
}

#[test]
fn threads_importing_one_buffer_share_one_import() {
    let _s = serial();
    let s = setup(models::multi_io());
    let g = gpu();
    // 8 threads make, use and drop tensors over one buffer at once, each through its own fd: a
    // second live import would share the driver's buffer object and the first free would break it
    // (the virtual NPU then fails the graph), so every inference passing proves one import at a time.
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    let (mem, fd) = g.exported(4096, Some(&a));
    let expected = s.cpu(&[a.clone(), b.clone()]);
    let (fds0, live0) = (open_fds(), counter("npu.live_allocations"));
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (s, fd, b, expected) = (&s, &fd, &b, &expected);
            scope.spawn(move || {
                let mut r = s.request();
                let tb = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
                tb.clone().host_bytes_mut().unwrap().copy_from_slice(b);
                let sum = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
                let prod = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
                r.set_input_tensor(1, &tb).unwrap();
                r.set_output_tensor(0, &sum).unwrap();
                r.set_output_tensor(1, &prod).unwrap();
                for i in 0..100 {
                    let ta = s
                        .npu
                        .import(dup_fd(fd.as_fd()).unwrap(), ElementType::F32, [1, 1024], TensorType::Input)
                        .unwrap();
                    r.set_input_tensor(0, &ta).unwrap();
                    r.infer().unwrap_or_else(|e| panic!("thread {t}, iteration {i}: {e}"));
                    drop(ta);
                    s.m.compare(0, &expected[0], &read_remote(&sum))
                        .unwrap_or_else(|e| panic!("thread {t}, iteration {i}: {e}"));
                }
                s.m.compare(1, &expected[1], &read_remote(&prod)).unwrap();
            });
        }
    });
    assert_eq!(counter("npu.live_allocations"), live0, "every import and allocation was freed");
    assert_eq!(open_fds(), fds0, "every fd was closed once");
    drop((mem, fd));
}

#[test]
fn input_cpu_va_tensors_are_read_only_for_the_npu_and_cannot_be_outputs() {
    let _s = serial();
    let s = setup(models::multi_io());
    if !imports_user_memory(&s.npu) {
        return;
    }
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    // Made for an input: the plugin imports it write-combined, which the NPU maps read-only.
    let input = s
        .npu
        .import(PageAlignedBuffer::from_slice(&a).unwrap(), ElementType::F32, [1, 1024], TensorType::Input)
        .unwrap();
    assert!(input.is_read_only_for_device());
    let mut r = s.request();
    for e in [r.set_output_tensor(0, &input).unwrap_err(), r.set_tensor(&s.m.outputs[1].name, &input).unwrap_err()] {
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument, "{e}");
        assert!(format!("{e:#}").contains("read-only") && format!("{e:#}").contains("TensorType::Output"), "{e}");
    }
    // A tensor reusing that import (a CPU_VA tensor at its start) is read-only too.
    let va = input.remote().params().unwrap().mem_handle;
    let keep: KeepAlive = Arc::new(input.clone());
    // SAFETY: va is the start of the input tensor's 4096-byte buffer, kept alive by `keep`.
    let alias = unsafe {
        s.npu.import(
            RawMemory::new(va.cast(), 4096, Some(keep)).unwrap(),
            ElementType::F32,
            [1, 1024],
            TensorType::Binded,
        )
    }
    .unwrap();
    assert!(alias.is_read_only_for_device(), "it reuses the read-only import");
    assert_eq!(r.set_output_tensor(1, &alias).unwrap_err().kind(), &ErrorKind::InvalidArgument);
    // As inputs they work; outputs made for outputs are writable.
    let out = |tt| s.npu.import(PageAlignedBuffer::new(4096).unwrap(), ElementType::F32, [1, 1024], tt).unwrap();
    let (sum, prod) = (out(TensorType::Output), out(TensorType::Binded));
    assert!(!sum.is_read_only_for_device() && !prod.is_read_only_for_device());
    r.set_input_tensor(0, &input).unwrap();
    r.set_tensor(&s.m.inputs[1].name, &in_place_input(&s.npu, &b, [1, 1024])).unwrap();
    r.set_output_tensor(0, &sum).unwrap();
    r.set_output_tensor(1, &prod).unwrap();
    r.infer().unwrap();
    s.assert_matches_cpu(&[a, b], &[read_remote(&sum), read_remote(&prod)]);
}

// ------------------------------------------------------------------------------------------------
// Bad inputs: typed errors, no leaks
// ------------------------------------------------------------------------------------------------

#[test]
fn bad_fds_are_typed_errors_without_leaks() {
    let _s = serial();
    let s = setup(models::multi_io());
    let fds0 = open_fds();
    let imports0 = counter("npu.imports.dma_buf");

    // An fd number that is not open.
    // SAFETY: deliberately wrapping a number that is not an open fd (the API must not close it).
    let bogus = unsafe { OwnedFd::from_raw_fd(1_000_000) };
    let e = s.npu.import(bogus, ElementType::F32, [1, 1024], TensorType::Input).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidArgument, "{e}");
    assert!(format!("{e:#}").contains("not an open file descriptor"), "{e}");

    // A closed fd (closed by its owner, then handed over by number).
    let g = gpu();
    let (_mem, fd) = g.exported(4096, None);
    let closed = fd.as_raw_fd();
    drop(fd);
    // The number may be reused by another thread; fstat decides. Only check the error kind when
    // it really is closed.
    // SAFETY: fstat on any number is harmless.
    if unsafe { libc::fcntl(closed, libc::F_GETFD) } == -1 {
        // SAFETY: as above: a number that is not open; the API forgets it.
        let e = s
            .npu
            .import(unsafe { OwnedFd::from_raw_fd(closed) }, ElementType::F32, [1, 1024], TensorType::Input)
            .unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument, "{e}");
    }

    // Something that is not a dma-buf: a pipe has no size.
    let (rd, wr) = std::io::pipe().unwrap();
    let e = s.npu.import(std::os::fd::OwnedFd::from(rd), ElementType::F32, [1, 1024], TensorType::Input).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Size { needed: 4096, available: 0 }), "{e:?}");
    drop(wr);

    // A dma-buf smaller than the tensor.
    let (_small, small_fd) = g.exported(4096, None);
    let e = s.npu.import(small_fd, ElementType::F32, [1, 2048], TensorType::Input).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Size { needed: 8192, available: 4096 }), "{e:?}");

    drop((_mem, _small, g));
    assert_eq!(counter("npu.imports.dma_buf"), imports0, "nothing reached the driver");
    assert_eq!(open_fds(), fds0, "every fd handed over was closed exactly once (or never opened)");

    // dup_fd keeps the caller's fd.
    let g = gpu();
    let (_m3, mine) = g.exported(4096, None);
    let t = s.npu.import(dup_fd(mine.as_fd()).unwrap(), ElementType::F32, [1, 1024], TensorType::Input).unwrap();
    drop(t);
    // SAFETY: fcntl on our own open fd.
    assert_ne!(unsafe { libc::fcntl(mine.as_raw_fd(), libc::F_GETFD) }, -1, "our fd is still open");
}

#[test]
fn bad_cpu_va_memory_is_rejected_before_openvino() {
    let _s = serial();
    let s = setup(models::multi_io());
    if !imports_user_memory(&s.npu) {
        return;
    }
    let sysmem0 = counter("npu.imports.sysmem");

    // Byte size not a page multiple: 1000 f32 = 4000 bytes.
    let e = s
        .npu
        .import(PageAlignedBuffer::new(4096).unwrap(), ElementType::F32, [1, 1000], TensorType::Input)
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Alignment { what: Aligned::CpuVaByteSize, required: 4096, actual: 4000 }, "{e}");

    // Buffer smaller than the tensor.
    let e = s
        .npu
        .import(PageAlignedBuffer::new(4096).unwrap(), ElementType::F32, [1, 2048], TensorType::Input)
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Size { needed: 8192, available: 4096 }, "{e}");

    // Misaligned pointer.
    let mut buf = PageAlignedBuffer::new(3 * 4096).unwrap();
    // SAFETY: 64 bytes into a 12 KiB buffer that outlives the (failed) call.
    let p = unsafe { buf.as_mut_ptr().cast::<u8>().add(64) }.cast::<c_void>();
    // SAFETY: p is valid for 8192 bytes; nothing is created (the call fails before OpenVINO).
    let e = unsafe {
        s.npu.import(RawMemory::new(p.cast(), 8192, None).unwrap(), ElementType::F32, [1, 1024], TensorType::Input)
    }
    .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Alignment { what: Aligned::CpuVaPointer, required: 4096, .. }), "{e}");
    assert!(format!("{e:#}").contains("4096"), "{e}");

    // byte_len smaller than the tensor.
    // SAFETY: as above.
    let e = unsafe {
        s.npu.import(
            RawMemory::new(buf.as_mut_ptr().cast(), 2048, None).unwrap(),
            ElementType::F32,
            [1, 1024],
            TensorType::Input,
        )
    }
    .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Size { needed: 4096, available: 2048 }, "{e}");

    // Element types without a fixed size, and empty shapes.
    let e = s
        .npu
        .import(PageAlignedBuffer::new(4096).unwrap(), ElementType::Dynamic, [1, 1024], TensorType::Input)
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::ElementType, "{e}");
    let e = s.npu.l0_host_tensor(ElementType::F32, [0, 1024], TensorType::Input).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Shape, "{e}");

    assert_eq!(counter("npu.imports.sysmem"), sysmem0, "nothing reached the driver");
}

#[test]
fn binding_checks_element_type_and_shape() {
    let _s = serial();
    let s = setup(models::multi_io());
    let mut r = s.request();
    let live0 = counter("npu.live_allocations");
    {
        let wrong_type = s.npu.l0_host_tensor(ElementType::I32, [1, 1024], TensorType::Input).unwrap();
        let e = r.set_input_tensor(0, &wrong_type).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::ElementType, "{e}");
        let wrong_shape = s.npu.l0_host_tensor(ElementType::F32, [2, 512], TensorType::Input).unwrap();
        let e = r.set_input_tensor(1, &wrong_shape).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::Shape, "{e}");
        // A view of the wrong Rust type.
        let e = wrong_shape.host_data::<i32>().unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::ElementType, "{e}");
    }
    assert_eq!(counter("npu.live_allocations"), live0, "the rejected tensors' memory is released");
}

// ------------------------------------------------------------------------------------------------
// 1,000 cycles
// ------------------------------------------------------------------------------------------------

#[test]
fn thousand_create_bind_infer_drop_cycles_leak_nothing() {
    let _s = serial();
    let s = setup(models::multi_io());
    let g = gpu();
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    let want = s.cpu(&[a.clone(), b.clone()]);

    let fds0 = open_fds();
    let npu_live0 = counter("npu.live_allocations");
    let gpu_live0 = counter("gpu.live_allocations");
    let inferences0 = counter("npu.inferences");
    let mut request = s.request();
    for i in 0..1000 {
        if i % 250 == 0 {
            request = s.request(); // also drop and recreate requests
        }
        let ta = in_place_input(&s.npu, &a, [1, 1024]);
        let (_mem_b, fd_b) = g.exported(4096, Some(&b));
        let tb = s.npu.import(fd_b, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let tsum = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
        let tprod = PageAlignedBuffer::new(4096).unwrap().into_tensor(ElementType::F32, [1, 1024]).unwrap();
        request.set_input_tensor(0, &ta).unwrap();
        request.set_input_tensor(1, &tb).unwrap();
        request.set_output_tensor(0, &tsum).unwrap();
        request.set_output_tensor(1, &tprod).unwrap();
        request.infer().unwrap();
        if i % 100 == 0 {
            assert_eq!(read_remote(&tsum), want[0], "cycle {i}");
            assert_eq!(tprod.bytes().unwrap().to_vec(), want[1], "cycle {i}");
        }
    }
    drop(request);
    let (fds1, npu1, gpu1) = (open_fds(), counter("npu.live_allocations"), counter("gpu.live_allocations"));
    eprintln!("after 1000 cycles: fds {fds0} -> {fds1}, npu.live_allocations {npu_live0} -> {npu1}, gpu.live_allocations {gpu_live0} -> {gpu1}");
    assert_eq!(counter("npu.inferences") - inferences0, 1000, "every cycle ran on the virtual NPU");
    assert_eq!(fds1, fds0, "open fds");
    assert_eq!(npu1, npu_live0, "NPU allocations");
    assert_eq!(gpu1, gpu_live0, "GPU allocations");
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn cpu_va_at_an_existing_npu_allocation_reuses_it_and_interior_pointers_are_refused() {
    let _s = serial();
    let s = setup(models::multi_io());
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    // One 8 KiB L0 host tensor holding `a` at its start and `b` at +4096.
    let mut big = s.npu.l0_host_tensor(ElementType::F32, [1, 2048], TensorType::Binded).unwrap();
    {
        let mut bytes = big.host_bytes_mut().unwrap();
        bytes[..4096].copy_from_slice(&a);
        bytes[4096..].copy_from_slice(&b);
    }
    let va = big.remote().params().unwrap().mem_handle.cast::<u8>();
    let sysmem0 = counter("npu.imports.sysmem");
    let keep: KeepAlive = Arc::new(big.clone());

    // Inside the allocation: the plugin would read from the allocation's start. Refused.
    // SAFETY: in bounds of the 8 KiB allocation owned by `keep`; the call fails before OpenVINO.
    let e = unsafe {
        s.npu.import(
            RawMemory::new(va.add(4096), 4096, Some(keep.clone())).unwrap(),
            ElementType::F32,
            [1, 1024],
            TensorType::Input,
        )
    }
    .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::InsideNpuAllocation }, "{e}");
    assert!(format!("{e:#}").contains("lies inside (not at the start of) an existing allocation"), "{e}");
    // Larger than the allocation.
    // SAFETY: as above.
    let e = unsafe {
        s.npu.import(
            RawMemory::new(va.cast(), 1 << 20, Some(keep.clone())).unwrap(),
            ElementType::F32,
            [1, 4096],
            TensorType::Input,
        )
    }
    .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Size { needed: 16384, available: 8192 }, "{e}");

    // At its start: reused (no import), and the inference reads the right bytes.
    // SAFETY: the first 4096 bytes of the allocation `keep` (the L0 tensor) owns.
    let ta = unsafe {
        s.npu.import(
            RawMemory::new(va.cast(), 8192, Some(keep)).unwrap(),
            ElementType::F32,
            [1, 1024],
            TensorType::Input,
        )
    }
    .unwrap();
    assert_eq!(counter("npu.imports.sysmem"), sysmem0, "no import: the plugin reuses its own allocation");
    assert_eq!(ta.remote().params().unwrap().mem_handle.cast::<u8>(), va);
    drop(big);
    let tb = in_place_input(&s.npu, &b, [1, 1024]);
    let mut r = s.request();
    r.set_input_tensor(0, &ta).unwrap();
    r.set_input_tensor(1, &tb).unwrap();
    r.infer().unwrap();
    let outs: Vec<Vec<u8>> = (0..2).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect();
    s.assert_matches_cpu(&[a, b], &outs);
}

#[test]
fn driver_failures_surface_as_errors_and_release_the_memory() {
    let _s = serial();
    let s = setup(models::multi_io());
    let live0 = counter("npu.live_allocations");

    // The plugin's zeMemAllocHost fails: an OpenVINO error, nothing allocated.
    vp().inject_fault("zeMemAllocHost", 1, 0x7000_0002).unwrap();
    let e = s.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap_err();
    vp().clear_faults();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");
    assert_eq!(counter("npu.live_allocations"), live0);

    // The sysmem import fails (or, without user-memory import, is refused before OpenVINO): the
    // caller's keep-alive is released at once (not leaked).
    struct Owner(Arc<std::sync::atomic::AtomicUsize>, #[allow(dead_code)] PageAlignedBuffer);
    impl Drop for Owner {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut buf = PageAlignedBuffer::new(4096).unwrap();
    let p = buf.as_mut_ptr();
    let keep: KeepAlive = Arc::new(Owner(drops.clone(), buf));
    vp().inject_fault("zeMemAllocHost", 1, 0x7000_0002).unwrap();
    // SAFETY: p is the page-aligned 4096-byte buffer owned by `keep`.
    let e = unsafe {
        s.npu.import(
            RawMemory::new(p.cast(), 4096, Some(keep)).unwrap(),
            ElementType::F32,
            [1, 1024],
            TensorType::Input,
        )
    }
    .unwrap_err();
    vp().clear_faults();
    if s.npu.capabilities().sysmem_import {
        assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");
    } else {
        assert_eq!(
            e.kind(),
            &ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::NoSystemMemoryImport },
            "{e:?}"
        );
    }
    assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 1, "the keep-alive was dropped on error");
    assert_eq!(counter("npu.live_allocations"), live0);
}
