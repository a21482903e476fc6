//! The virtual NPU through the real OpenVINO runtime and its unmodified NPU plugin.
//!
//! The process first loads the virtual Level Zero platform (`libze_loader.so.1`), then uses OpenVINO:
//! the NPU plugin finds the virtual NPU driver, compiles graphs through the graph extension (the
//! driver runs them on OpenVINO's CPU plugin in this process) and binds memory through host
//! allocation, sysmem import (CPU_VA), dma-buf import (SHARED_BUF) and mutable command lists.
//!
//! Every NPU result is compared with the CPU plugin's result for the same inputs.

mod common;

use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex};

use common::{compile, sample_tensors};
use npu_sycl_bridge::level_zero::{DeviceType, Driver, ExternalMemoryTypes, L0Context};
use npu_sycl_bridge::openvino::{
    CompiledModel, Core, ElementType, MemType, Properties, RemoteTensor, Tensor, TensorType,
};
use npu_sycl_bridge::ownership::Foreign;
use npu_sycl_bridge::raw::{self, AsRaw};
use testkit::models::{self, ReferenceModel};
use testkit::virtual_platform::{self, VirtualPlatform};

// ---------------------------------------------------------------------------------------------------
// Harness: activation and the virtual platform's counters
// ---------------------------------------------------------------------------------------------------

/// Loads the virtual platform (idempotent); every test calls it before touching OpenVINO's NPU.
fn activate() -> &'static VirtualPlatform {
    virtual_platform::activate().expect("the virtual Level Zero platform must load")
}

/// Reads a counter of the virtual platform (`vl0_counter`).
fn counter(name: &str) -> u64 {
    activate().try_counter(name).unwrap_or_else(|e| panic!("counter {name}: {e}"))
}

/// Tests that compare counter deltas run one at a time (the counters are process-wide).
fn counters_lock() -> std::sync::MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

fn core() -> Core {
    activate();
    Core::new().expect("OpenVINO must be available (cargo xtask setup)")
}

fn npu_properties() -> Properties {
    Properties::new().set("NPU_COMPILER_TYPE", "DRIVER")
}

fn compile_npu(core: &Core, m: &ReferenceModel) -> CompiledModel {
    let model = core.read_model_from_memory(&m.xml, &m.weights).unwrap();
    core.compile_model(&model, "NPU", &npu_properties()).unwrap_or_else(|e| panic!("{} on NPU: {e}", m.name))
}

/// The CPU plugin's outputs for `inputs`.
fn cpu_outputs(core: &Core, m: &ReferenceModel, inputs: &[Tensor]) -> Vec<Vec<u8>> {
    let cpu = compile(core, m, "CPU");
    let mut r = cpu.create_infer_request().unwrap();
    for (i, t) in inputs.iter().enumerate() {
        r.set_input_tensor(i, t).unwrap();
    }
    r.infer().unwrap();
    (0..m.outputs.len()).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect()
}

fn assert_same(m: &ReferenceModel, want: &[Vec<u8>], got: &[Vec<u8>]) {
    assert_eq!(want.len(), got.len());
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if let Err(e) = m.compare(i, w, g) {
            panic!("{} on NPU vs CPU: {e}", m.name);
        }
    }
}

/// Inputs derived from the sample inputs with a per-`seed` twist, so different requests differ.
fn varied_inputs(m: &ReferenceModel, seed: u8) -> Vec<Tensor> {
    m.inputs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut b = m.sample_input(i);
            match d.element_type {
                ElementType::F32 => {
                    for c in b.chunks_exact_mut(4) {
                        let x = f32::from_le_bytes(c.try_into().unwrap()) + seed as f32 * 0.25;
                        c.copy_from_slice(&x.to_le_bytes());
                    }
                }
                ElementType::U8 => b.iter_mut().for_each(|x| *x = x.wrapping_add(seed)),
                _ => {}
            }
            Tensor::from_bytes(d.element_type, d.shape.clone(), &b).unwrap()
        })
        .collect()
}

/// Page-aligned, zeroed memory of `len` bytes (a multiple of 4096), freed on drop.
struct PageBuf {
    ptr: *mut u8,
    len: usize,
}
// SAFETY: plain process memory owned by this value.
unsafe impl Send for PageBuf {}
// SAFETY: shared references only read through raw pointers the tests synchronise.
unsafe impl Sync for PageBuf {}
impl PageBuf {
    fn new(len: usize) -> PageBuf {
        // SAFETY: anonymous private mapping, checked below.
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
        assert_ne!(p, libc::MAP_FAILED);
        PageBuf { ptr: p as *mut u8, len }
    }
    fn write(&self, off: usize, b: &[u8]) {
        assert!(off + b.len() <= self.len);
        // SAFETY: in bounds of the mapping.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.ptr.add(off), b.len()) };
    }
}
impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.ptr as *mut c_void, self.len) };
    }
}

fn driver_of_type(t: DeviceType) -> Driver {
    activate();
    Driver::all()
        .unwrap()
        .into_iter()
        .find(|d| d.devices().unwrap().iter().any(|dev| dev.properties().unwrap().device_type == t))
        .unwrap_or_else(|| panic!("no {t:?} driver"))
}

/// Whether the virtual NPU imports user memory on this laptop profile (`STANDARD_ALLOCATION`: NPU
/// 40xx+ with the kernel's userptr ioctl; never NPU 37xx).
fn user_memory_import() -> bool {
    let npu = driver_of_type(DeviceType::Vpu).devices().unwrap().remove(0);
    npu.external_memory_properties().unwrap().import.contains(ExternalMemoryTypes::STANDARD_ALLOCATION)
}

/// A CPU_VA tensor the plugin made, or, where the NPU imports no user memory, `None` after checking
/// that generation's answer: the plugin itself refuses CPU_VA (and says so on stderr, so a test that
/// stops there does not pass silently).
fn cpu_va_or_refusal(made: npu_sycl_bridge::Result<RemoteTensor>) -> Option<RemoteTensor> {
    if user_memory_import() {
        return Some(made.unwrap());
    }
    let e = made.map(|_| ()).unwrap_err();
    assert!(format!("{e:#}").contains("Importing standard allocation is not supported"), "{e}");
    eprintln!("this profile's NPU imports no user memory: checked that the plugin refuses CPU_VA ({e})");
    None
}

// ---------------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------------

#[test]
fn npu_is_listed_and_its_context_belongs_to_the_npu_driver() {
    let core = core();
    let devices = core.available_devices().unwrap();
    assert!(devices.iter().any(|d| d == "NPU"), "{devices:?}");
    assert!(!core.property("NPU", "FULL_DEVICE_NAME").unwrap().is_empty());

    let ctx = core.default_context("NPU").unwrap();
    let raw = ctx.l0_context().unwrap();
    assert!(!raw.is_null());
    let npu = driver_of_type(DeviceType::Vpu);
    let gpu = driver_of_type(DeviceType::Gpu);
    // The plugin's own host memory (a host tensor of that context) is an allocation of the NPU driver:
    // the NPU driver's registry knows it, the GPU driver's does not.
    let host = ctx.create_host_tensor(ElementType::F32, vec![1, 1024]).unwrap();
    let p = host.data_ptr().unwrap();
    // SAFETY: the plugin's context outlives `core`, which outlives these borrowed wrappers.
    let on_npu = Arc::new(unsafe { raw::level_zero::context(raw.cast(), npu, Foreign::Borrowed { owner: None }) });
    let info = on_npu.memory_properties(p).unwrap();
    assert_eq!(info.kind, npu_sycl_bridge::level_zero::MemoryType::Host, "{info:?}");
    let gpu_ctx = Arc::new(L0Context::create(gpu).unwrap());
    assert_eq!(gpu_ctx.memory_properties(p).unwrap().kind, npu_sycl_bridge::level_zero::MemoryType::Unknown);
    // A device of the GPU driver is foreign to that context.
    let gpu_dev = gpu.devices().unwrap()[0];
    assert!(on_npu.alloc_device(gpu_dev, 4096, 4096).is_err());
}

#[test]
fn every_model_compiles_and_infers_like_the_cpu_plugin() {
    let _g = counters_lock();
    let core = core();
    let graphs0 = counter("npu.graphs");
    let inf0 = counter("npu.inferences");
    for m in models::all() {
        let npu = compile_npu(&core, &m);
        let ins = npu.inputs().unwrap();
        assert_eq!(ins.len(), m.inputs.len(), "{}", m.name);
        for (p, d) in ins.iter().zip(&m.inputs) {
            assert_eq!(p.element_type, d.element_type, "{}", m.name);
            assert_eq!(p.shape.as_ref(), Some(&d.shape), "{}", m.name);
        }
        let outs = npu.outputs().unwrap();
        for (p, d) in outs.iter().zip(&m.outputs) {
            assert_eq!(p.element_type, d.element_type, "{}", m.name);
            assert_eq!(p.name, d.name, "{}: output tensor names must survive", m.name);
        }
        let inputs = sample_tensors(&m);
        let want = cpu_outputs(&core, &m, &inputs);
        let mut r = npu.create_infer_request().unwrap();
        for (i, t) in inputs.iter().enumerate() {
            r.set_input_tensor(i, t).unwrap();
        }
        r.infer().unwrap();
        let got: Vec<Vec<u8>> =
            (0..m.outputs.len()).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect();
        assert_same(&m, &want, &got);
        // And the Rust reference agrees too.
        let reference = common::expected(&m);
        assert_same(&m, &reference, &got);
        // A second inference with other inputs on the same request (re-executes the recorded list).
        let inputs2 = varied_inputs(&m, 3);
        for (i, t) in inputs2.iter().enumerate() {
            r.set_input_tensor(i, t).unwrap();
        }
        r.infer().unwrap();
        let got2: Vec<Vec<u8>> =
            (0..m.outputs.len()).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect();
        assert_same(&m, &cpu_outputs(&core, &m, &inputs2), &got2);
    }
    assert!(counter("npu.graphs") >= graphs0 + models::all().len() as u64);
    assert!(counter("npu.inferences") >= inf0 + 2 * models::all().len() as u64);
}

/// linux-npu-driver reports `initStageRequired = ZE_GRAPH_STAGE_INITIALIZE` for every graph
/// (graph.cpp `Graph::getProperties2/3`), so the plugin calls `pfnGraphInitialize` for each model it
/// compiles.
#[test]
fn the_plugin_initializes_every_graph_it_compiles() {
    let _g = counters_lock();
    let core = core();
    let inits0 = activate().try_counter("npu.graph_initializations").unwrap_or(0);
    let _npu = compile_npu(&core, &models::fully_connected());
    assert!(counter("npu.graph_initializations") > inits0, "pfnGraphInitialize was not called");
}

#[test]
fn dma_buf_from_the_virtual_gpu_is_consumed_without_copy() {
    let _g = counters_lock();
    let core = core();
    let m = models::fully_connected();
    let d = &m.inputs[0];
    let bytes = d.byte_size();
    let npu = compile_npu(&core, &m);

    // The producer: device memory of the virtual GPU, exported as a dma-buf.
    let gpu = driver_of_type(DeviceType::Gpu);
    let gpu_ctx = Arc::new(L0Context::create(gpu).unwrap());
    let gpu_dev = gpu.devices().unwrap()[0];
    let mut buf = gpu_ctx.alloc_device_exportable(gpu_dev, bytes, 4096).unwrap();
    let fd = buf.export_dma_buf().unwrap();
    let first = m.sample_input(0);
    buf.write(0, &first).unwrap();

    let ctx = core.default_context("NPU").unwrap();
    let copied_npu = counter("npu.bytes_copied");
    let copied_gpu = counter("gpu.bytes_copied");
    let imports = counter("npu.imports.dma_buf");
    use std::os::fd::AsRawFd;
    // SAFETY: fd is an open dma-buf of at least `bytes`; `fd` (an OwnedFd) is kept alive by keepalive.
    let remote = unsafe {
        raw::openvino::remote_tensor(
            &ctx,
            d.element_type,
            d.shape.clone(),
            MemType::SharedBuf,
            Some(MemType::fd_handle(fd.as_raw_fd())),
            Some(TensorType::Input),
            vec![Arc::new(fd)],
        )
    }
    .unwrap();
    assert_eq!(counter("npu.imports.dma_buf"), imports + 1);
    let direct = counter("npu.graph_args.dma_buf");
    let mut r = npu.create_infer_request().unwrap();
    r.set_input_tensor(0, &remote).unwrap();
    r.infer().unwrap();
    assert_eq!(counter("npu.graph_args.dma_buf"), direct + 1, "the graph must read the dma-buf mapping itself");
    let t = Tensor::from_bytes(d.element_type, d.shape.clone(), &first).unwrap();
    let got = r.output_tensor(0).unwrap().bytes().unwrap().to_vec();
    assert_same(&m, &cpu_outputs(&core, &m, &[t]), &[got]);

    assert_eq!(counter("npu.bytes_copied"), copied_npu, "the NPU copied bytes");
    assert_eq!(counter("gpu.bytes_copied"), copied_gpu, "the GPU copied bytes");

    // A new write to the GPU buffer (a copy by the virtual GPU: the producer's own work) is seen by the
    // next inference, without re-creating the tensor.
    let second: Vec<u8> = varied_inputs(&m, 7)[0].bytes().unwrap().to_vec();
    buf.write(0, &second).unwrap();
    let copied_npu = counter("npu.bytes_copied");
    let copied_gpu = counter("gpu.bytes_copied");
    r.infer().unwrap();
    assert_eq!(counter("npu.graph_args.dma_buf"), direct + 2);
    let got2 = r.output_tensor(0).unwrap().bytes().unwrap().to_vec();
    let t2 = Tensor::from_bytes(d.element_type, d.shape.clone(), &second).unwrap();
    assert_same(&m, &cpu_outputs(&core, &m, &[t2]), &[got2]);

    assert_eq!(counter("npu.bytes_copied"), copied_npu, "the NPU copied bytes");
    assert_eq!(counter("gpu.bytes_copied"), copied_gpu, "the GPU copied bytes");
    drop(r);
    drop(remote);
}

#[test]
fn page_aligned_cpu_va_is_zero_copy_and_misaligned_is_refused() {
    let _g = counters_lock();
    let core = core();
    let m = models::u8_input();
    let d = &m.inputs[0];
    let bytes = d.byte_size();
    assert_eq!(bytes % 4096, 0, "the u8 model's input is one page");
    let npu = compile_npu(&core, &m);
    let ctx = core.default_context("NPU").unwrap();

    let mem = Arc::new(PageBuf::new(2 * 4096));
    let input = m.sample_input(0);
    mem.write(0, &input);
    let sysmem0 = counter("npu.imports.sysmem");
    let copied0 = counter("npu.bytes_copied");
    // SAFETY: page-aligned memory of a whole page, kept alive by keepalive.
    let made = unsafe {
        raw::openvino::remote_tensor(
            &ctx,
            d.element_type,
            d.shape.clone(),
            MemType::CpuVa,
            Some(mem.ptr.cast()),
            None,
            vec![mem.clone()],
        )
    };
    let Some(remote) = cpu_va_or_refusal(made) else {
        assert_eq!(counter("npu.imports.sysmem"), sysmem0, "nothing reached the driver");
        return;
    };
    assert_eq!(counter("npu.imports.sysmem"), sysmem0 + 1, "CPU_VA must be a sysmem import");
    assert_eq!(remote.params().unwrap().mem_handle, mem.ptr.cast(), "the import is the caller's memory itself");
    let direct = counter("npu.graph_args.sysmem");
    let mut r = npu.create_infer_request().unwrap();
    r.set_input_tensor(0, &remote).unwrap();
    r.infer().unwrap();
    assert_eq!(counter("npu.graph_args.sysmem"), direct + 1, "the graph must read the caller's pages themselves");
    let t = Tensor::from_bytes(d.element_type, d.shape.clone(), &input).unwrap();
    let got = r.output_tensor(0).unwrap().bytes().unwrap().to_vec();
    assert_same(&m, &cpu_outputs(&core, &m, &[t]), &[got]);
    // A later write to the caller's memory is seen without any rebinding.
    let input2: Vec<u8> = input.iter().map(|x| x.wrapping_mul(3)).collect();
    mem.write(0, &input2);
    r.infer().unwrap();
    let got2 = r.output_tensor(0).unwrap().bytes().unwrap().to_vec();
    let t2 = Tensor::from_bytes(d.element_type, d.shape.clone(), &input2).unwrap();
    assert_same(&m, &cpu_outputs(&core, &m, &[t2]), &[got2]);
    assert_eq!(counter("npu.bytes_copied"), copied0);

    // Misaligned: the plugin refuses before any import.
    let mis = Arc::new(PageBuf::new(3 * 4096));
    // SAFETY: the memory is valid; the call is expected to fail.
    let e = unsafe {
        raw::openvino::remote_tensor(
            &ctx,
            d.element_type,
            d.shape.clone(),
            MemType::CpuVa,
            Some(mis.ptr.add(64).cast()),
            None,
            vec![mis.clone()],
        )
    }
    .map(|_| ())
    .expect_err("a misaligned CPU_VA tensor must be refused");
    assert!(format!("{e:#}").contains("not aligned to standard page size"), "unexpected error: {e}");
    drop(r);
    drop(remote);
}

#[test]
fn cpu_va_output_and_l0_host_input_are_used_in_place() {
    let _g = counters_lock();
    let core = core();
    let m = models::fully_connected();
    let (di, dout) = (&m.inputs[0], &m.outputs[0]);
    assert_eq!(dout.byte_size() % 4096, 0, "the FC output is whole pages");
    let npu = compile_npu(&core, &m);
    let ctx = core.default_context("NPU").unwrap();

    // Input: the plugin's own host memory (L0_INTERNAL_BUF), written through the remote tensor's VA.
    let input = ctx.create_l0_host_tensor(di.element_type, di.shape.clone(), TensorType::Input).unwrap();
    let va = input.params().unwrap().mem_handle as *mut u8;
    assert!(!va.is_null());
    let sample = m.sample_input(0);
    // SAFETY: the tensor's memory is host-visible and at least its byte size; nothing else uses it now.
    unsafe { std::ptr::copy_nonoverlapping(sample.as_ptr(), va, sample.len()) };

    // Output: the caller's page-aligned memory (CPU_VA), written by the graph itself.
    let out = Arc::new(PageBuf::new(dout.byte_size()));
    // SAFETY: page-aligned whole pages, kept alive by keepalive.
    let made = unsafe {
        raw::openvino::remote_tensor(
            &ctx,
            dout.element_type,
            dout.shape.clone(),
            MemType::CpuVa,
            Some(out.ptr.cast()),
            None,
            vec![out.clone()],
        )
    };
    let Some(out_t) = cpu_va_or_refusal(made) else { return };
    let sysmem = counter("npu.graph_args.sysmem");
    let copied = counter("npu.bytes_copied");
    let mut r = npu.create_infer_request().unwrap();
    r.set_input_tensor(0, &input).unwrap();
    r.set_output_tensor(0, &out_t).unwrap();
    r.infer().unwrap();
    assert_eq!(counter("npu.graph_args.sysmem"), sysmem + 1, "the output must be written in place");
    assert_eq!(counter("npu.bytes_copied"), copied);
    // SAFETY: the inference finished; the mapping is valid for its length.
    let got = unsafe { std::slice::from_raw_parts(out.ptr, out.len) }.to_vec();
    let want = cpu_outputs(&core, &m, &[Tensor::from_bytes(di.element_type, di.shape.clone(), &sample).unwrap()]);
    assert_same(&m, &want, &[got]);
    drop(r);
}

#[test]
fn plain_page_aligned_tensors_are_imported_and_rebound() {
    let _g = counters_lock();
    let core = core();
    let m = models::u8_input();
    let d = &m.inputs[0];
    let npu = compile_npu(&core, &m);
    let mut r = npu.create_infer_request().unwrap();
    let before = counter("npu.graph_args.sysmem");
    // Without user-memory import (NPU 37xx) the plugin copies page-aligned tensors like any other.
    let in_place = u64::from(user_memory_import());
    for (k, seed) in [0u8, 9, 77].into_iter().enumerate() {
        // A fresh page-aligned buffer each round: the plugin imports it and patches the recorded
        // command through the mutable command list.
        let mem = Arc::new(PageBuf::new(d.byte_size()));
        let input: Vec<u8> = m.sample_input(0).iter().map(|x| x.wrapping_add(seed)).collect();
        mem.write(0, &input);
        // SAFETY: page-aligned memory of the tensor's size, kept alive by the tensor's keepalive.
        let t = unsafe { Tensor::from_host_ptr(d.element_type, d.shape.clone(), mem.ptr.cast(), Some(mem.clone())) }
            .unwrap();
        r.set_input_tensor(0, &t).unwrap();
        r.infer().unwrap();
        assert_eq!(
            counter("npu.graph_args.sysmem"),
            before + (k as u64 + 1) * in_place,
            "round {k}: read in place iff imported"
        );
        let got = r.output_tensor(0).unwrap().bytes().unwrap().to_vec();
        let want = cpu_outputs(&core, &m, &[Tensor::from_bytes(d.element_type, d.shape.clone(), &input).unwrap()]);
        assert_same(&m, &want, &[got]);
    }
}

#[test]
fn asynchronous_requests_run_on_the_plugin_threads() {
    // Its inferences move the graph-argument counters other tests compare.
    let _g = counters_lock();
    let core = core();
    let m = models::convolution();
    let npu = compile_npu(&core, &m);
    let inputs: Vec<Vec<Tensor>> = (0..4u8).map(|k| varied_inputs(&m, k)).collect();
    let mut reqs: Vec<_> = inputs
        .iter()
        .map(|ins| {
            let mut r = npu.create_infer_request().unwrap();
            for (i, t) in ins.iter().enumerate() {
                r.set_input_tensor(i, t).unwrap();
            }
            r
        })
        .collect();
    for _ in 0..5 {
        for r in reqs.iter_mut() {
            r.start_async().unwrap();
        }
        for (r, ins) in reqs.iter_mut().zip(&inputs) {
            r.wait().unwrap();
            let got: Vec<Vec<u8>> =
                (0..m.outputs.len()).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect();
            assert_same(&m, &cpu_outputs(&core, &m, ins), &got);
        }
    }
}

#[test]
fn export_and_import_round_trip() {
    // Its inferences move the graph-argument counters other tests compare.
    let _g = counters_lock();
    let core = core();
    for m in [models::convolution(), models::multi_io()] {
        // Default compiler type (PREFER_PLUGIN): the wheel ships no plugin-side compiler, so this also
        // ends on the driver path.
        let model = core.read_model_from_memory(&m.xml, &m.weights).unwrap();
        let npu = core.compile_model(&model, "NPU", &Properties::new()).unwrap();
        let blob = npu.export().unwrap();
        let imported = core.import_model(&blob, "NPU").unwrap_or_else(|e| panic!("{}: import: {e}", m.name));
        let inputs = sample_tensors(&m);
        let want = cpu_outputs(&core, &m, &inputs);
        let mut r = imported.create_infer_request().unwrap();
        for (i, t) in inputs.iter().enumerate() {
            r.set_input_tensor(i, t).unwrap();
        }
        r.infer().unwrap();
        let got: Vec<Vec<u8>> =
            (0..m.outputs.len()).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect();
        assert_same(&m, &want, &got);
        let names: Vec<String> = imported.outputs().unwrap().into_iter().map(|p| p.name).collect();
        assert_eq!(names, m.outputs.iter().map(|d| d.name.clone()).collect::<Vec<_>>());
    }
}

#[test]
fn four_requests_in_parallel_threads() {
    // Its inferences move the graph-argument counters other tests compare.
    let _g = counters_lock();
    let core = core();
    let m = models::multi_io();
    let npu = Arc::new(compile_npu(&core, &m));
    let expected: Vec<Vec<Vec<u8>>> = (0..4).map(|k| cpu_outputs(&core, &m, &varied_inputs(&m, k as u8 + 1))).collect();
    let expected = Arc::new(expected);
    let threads: Vec<_> = (0..4u8)
        .map(|k| {
            let npu = npu.clone();
            let m = m.clone();
            let expected = expected.clone();
            std::thread::spawn(move || {
                let mut r = npu.create_infer_request().unwrap();
                let inputs = varied_inputs(&m, k + 1);
                for round in 0..20 {
                    for (i, t) in inputs.iter().enumerate() {
                        r.set_input_tensor(i, t).unwrap();
                    }
                    r.infer().unwrap();
                    let got: Vec<Vec<u8>> =
                        (0..m.outputs.len()).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect();
                    for (i, (w, g)) in expected[k as usize].iter().zip(&got).enumerate() {
                        if let Err(e) = m.compare(i, w, g) {
                            panic!("thread {k} round {round}: {e}");
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn unsupported_models_fail_with_a_clear_message() {
    let core = core();
    // A stateful model: ReadValue/Assign.
    let xml = r#"<?xml version="1.0"?>
<net name="stateful" version="11">
  <layers>
    <layer id="0" name="x" type="Parameter" version="opset1">
      <data shape="1,4" element_type="f32" />
      <output><port id="0" precision="FP32" names="x"><dim>1</dim><dim>4</dim></port></output>
    </layer>
    <layer id="1" name="state" type="ReadValue" version="opset6">
      <data variable_id="v" variable_type="f32" variable_shape="1,4" />
      <input><port id="0" precision="FP32"><dim>1</dim><dim>4</dim></port></input>
      <output><port id="1" precision="FP32"><dim>1</dim><dim>4</dim></port></output>
    </layer>
    <layer id="2" name="sum" type="Add" version="opset1">
      <data auto_broadcast="numpy" />
      <input><port id="0" precision="FP32"><dim>1</dim><dim>4</dim></port><port id="1" precision="FP32"><dim>1</dim><dim>4</dim></port></input>
      <output><port id="2" precision="FP32" names="y"><dim>1</dim><dim>4</dim></port></output>
    </layer>
    <layer id="3" name="assign" type="Assign" version="opset6">
      <data variable_id="v" />
      <input><port id="0" precision="FP32"><dim>1</dim><dim>4</dim></port></input>
    </layer>
    <layer id="4" name="y/sink_port_0" type="Result" version="opset1">
      <input><port id="0" precision="FP32"><dim>1</dim><dim>4</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="1" to-port="0" />
    <edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
    <edge from-layer="1" from-port="1" to-layer="2" to-port="1" />
    <edge from-layer="2" from-port="2" to-layer="3" to-port="0" />
    <edge from-layer="2" from-port="2" to-layer="4" to-port="0" />
  </edges>
</net>"#;
    let model = core.read_model_from_memory(xml, &[]).unwrap();
    let e = core.compile_model(&model, "NPU", &npu_properties()).map(|_| ()).expect_err("stateful models are refused");
    let s = e.to_string();
    // The plugin appends the driver's build log to its error.
    assert!(s.contains("stateful models are not supported by the virtual NPU"), "{s}");
}

// ---------------------------------------------------------------------------------------------------
// The graph extension called directly (no plugin): the rules the plugin does not exercise
// ---------------------------------------------------------------------------------------------------

mod direct {
    use super::*;
    use level_zero_sys::npu::*;
    use level_zero_sys::*;
    use npu_sycl_bridge::level_zero::{HostMemFlags, L0Allocation};
    use npu_sycl_bridge::openvino::F16;

    macro_rules! ze {
        ($api:expr, $f:ident ( $($a:expr),* $(,)? )) => {{
            // SAFETY: a loader entry point called with valid arguments (each call site's contract).
            let r = unsafe { ($api.$f.as_ref().expect(stringify!($f)))($($a),*) };
            r
        }};
    }

    fn ngraph_lite(m: &ReferenceModel) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&7u16.to_le_bytes());
        b.extend_from_slice(&25u16.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&(m.xml.len() as u64).to_le_bytes());
        b.extend_from_slice(m.xml.as_bytes());
        b.extend_from_slice(&(m.weights.len() as u64).to_le_bytes());
        b.extend_from_slice(&m.weights);
        b
    }

    struct Npu {
        api: &'static ZeApi,
        driver: ze_driver_handle_t,
        device: ze_device_handle_t,
        ctx: Arc<L0Context>,
        graph: &'static ze_graph_dditable_ext_t,
        queue: ze_command_queue_handle_t,
        /// OpenVINO must be loaded in the process for the driver to compile graphs.
        _core: Core,
    }

    impl Npu {
        fn new() -> Npu {
            let core = core();
            let api = level_zero_sys::loader::api().unwrap();
            let drv = driver_of_type(DeviceType::Vpu);
            let device = drv.devices().unwrap()[0].as_raw();
            let ctx = Arc::new(L0Context::create(drv).unwrap());
            let mut table: *mut c_void = std::ptr::null_mut();
            let r =
                ze!(api, zeDriverGetExtensionFunctionAddress(drv.as_raw(), c"ZE_extension_graph".as_ptr(), &mut table));
            assert_eq!(r, ZE_RESULT_SUCCESS);
            // SAFETY: the driver returned its static graph table (1.16 layout).
            let graph = unsafe { &*(table as *const ze_graph_dditable_ext_t) };
            // SAFETY: zero is a valid bit pattern for this plain C struct.
            let mut qd: ze_command_queue_desc_t = unsafe { std::mem::zeroed() };
            qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
            let mut queue = std::ptr::null_mut();
            assert_eq!(ze!(api, zeCommandQueueCreate(ctx.as_raw(), device, &qd, &mut queue)), ZE_RESULT_SUCCESS);
            Npu { api, driver: drv.as_raw(), device, ctx, graph, queue, _core: core }
        }

        fn create(&self, format_: u32, input: &[u8], flags: &str) -> (ze_result_t, ze_graph_handle_t, String) {
            let flags = CString::new(flags).unwrap();
            let desc = ze_graph_desc_2_t {
                stype: ZE_STRUCTURE_TYPE_GRAPH_DESC_2,
                pNext: std::ptr::null_mut(),
                format: format_,
                inputSize: input.len(),
                pInput: input.as_ptr(),
                pBuildFlags: flags.as_ptr(),
                flags: 0,
            };
            let mut g = std::ptr::null_mut();
            let mut log = std::ptr::null_mut();
            // SAFETY: valid handles, descriptor and out-pointers.
            let r = unsafe { self.graph.pfnCreate3.unwrap()(self.ctx.as_raw(), self.device, &desc, &mut g, &mut log) };
            let mut n = 0u32;
            // SAFETY: a build-log handle returned by pfnCreate3.
            assert_eq!(unsafe { self.graph.pfnBuildLogGetString2.unwrap()(log, &mut n, std::ptr::null_mut()) }, 0);
            let mut text = vec![0u8; n as usize];
            // SAFETY: as above, with a buffer of n bytes.
            assert_eq!(unsafe { self.graph.pfnBuildLogGetString2.unwrap()(log, &mut n, text.as_mut_ptr().cast()) }, 0);
            // SAFETY: as above.
            assert_eq!(unsafe { self.graph.pfnBuildLogDestroy.unwrap()(log) }, 0);
            text.pop();
            (r, g, String::from_utf8(text).unwrap())
        }

        fn arg(&self, g: ze_graph_handle_t, i: u32) -> ze_graph_argument_properties_3_t {
            // SAFETY: zero is a valid bit pattern for this plain C struct.
            let mut p: ze_graph_argument_properties_3_t = unsafe { std::mem::zeroed() };
            p.stype = ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_PROPERTIES_3;
            // SAFETY: valid graph and out-pointer.
            assert_eq!(unsafe { self.graph.pfnGetArgumentProperties3.unwrap()(g, i, &mut p) }, 0);
            p
        }

        fn list(&self) -> ze_command_list_handle_t {
            // SAFETY: zero is a valid bit pattern for this plain C struct.
            let mut ld: ze_command_list_desc_t = unsafe { std::mem::zeroed() };
            ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
            let mut l = std::ptr::null_mut();
            assert_eq!(ze!(self.api, zeCommandListCreate(self.ctx.as_raw(), self.device, &ld, &mut l)), 0);
            l
        }

        fn append(&self, list: ze_command_list_handle_t, g: ze_graph_handle_t) -> ze_result_t {
            // SAFETY: valid list and graph; no events.
            unsafe {
                self.graph.pfnAppendGraphExecute.unwrap()(
                    list,
                    g,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                )
            }
        }

        fn run(&self, list: ze_command_list_handle_t) -> ze_result_t {
            let mut l = list;
            assert_eq!(ze!(self.api, zeCommandListClose(list)), 0);
            let r = ze!(self.api, zeCommandQueueExecuteCommandLists(self.queue, 1, &mut l, std::ptr::null_mut()));
            assert_eq!(ze!(self.api, zeCommandQueueSynchronize(self.queue, u64::MAX)), 0);
            r
        }

        fn set(&self, g: ze_graph_handle_t, i: u32, a: &L0Allocation) {
            // SAFETY: valid graph; the pointer is an allocation of this driver.
            assert_eq!(unsafe { self.graph.pfnSetArgumentValue.unwrap()(g, i, a.as_ptr()) }, 0);
        }
    }

    // SAFETY: Level Zero handles are free-threaded; the test shares them only for thread-safe calls
    // (graph and list creation, argument setting), never a command list across threads.
    unsafe impl Sync for Npu {}

    impl Drop for Npu {
        fn drop(&mut self) {
            ze!(self.api, zeCommandQueueDestroy(self.queue));
        }
    }

    fn f16_bytes(f32_bytes: &[u8]) -> Vec<u8> {
        f32_bytes
            .chunks_exact(4)
            .flat_map(|c| F16::from_f32(f32::from_le_bytes(c.try_into().unwrap())).0.to_le_bytes())
            .collect()
    }

    fn f32_from_f16(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(2).map(|c| F16(u16::from_le_bytes([c[0], c[1]])).to_f32()).collect()
    }

    /// Build-flag precisions that differ from the model become conversions: FP16 arguments over an f32
    /// model, reported as devicePrecision FP16 / networkPrecision FP32.
    #[test]
    fn build_flag_precisions_are_honoured_and_snapshots_are_per_thread() {
        let n = Npu::new();
        let m = models::fully_connected();
        let flags = "--inputs_precisions=\"0:FP16\" --inputs_layouts=\"0:NC\" --outputs_precisions=\"0:FP16\" \
                     --outputs_layouts=\"0:NC\" --config NPU_PLATFORM=\"4000\"";
        let (r, g, log) = n.create(ZE_GRAPH_FORMAT_NGRAPH_LITE, &ngraph_lite(&m), flags);
        assert_eq!(r, ZE_RESULT_SUCCESS, "{log}");
        let a0 = n.arg(g, 0);
        let a1 = n.arg(g, 1);
        assert_eq!(a0.type_, ZE_GRAPH_ARGUMENT_TYPE_INPUT);
        assert_eq!(a1.type_, ZE_GRAPH_ARGUMENT_TYPE_OUTPUT);
        assert_eq!(
            (a0.networkPrecision, a0.devicePrecision),
            (ZE_GRAPH_ARGUMENT_PRECISION_FP32, ZE_GRAPH_ARGUMENT_PRECISION_FP16)
        );
        assert_eq!(
            (a1.networkPrecision, a1.devicePrecision),
            (ZE_GRAPH_ARGUMENT_PRECISION_FP32, ZE_GRAPH_ARGUMENT_PRECISION_FP16)
        );
        assert_eq!(a0.networkLayout, ZE_GRAPH_ARGUMENT_LAYOUT_NC);
        assert_eq!(a0.dims_count as usize, m.inputs[0].shape.rank());
        assert!(a1.associated_tensor_names_count >= 1);

        let in_bytes = m.inputs[0].byte_size() / 2;
        let out_bytes = m.outputs[0].byte_size() / 2;
        let alloc = |len| n.ctx.alloc_host(len, 4096, HostMemFlags::NONE).unwrap();
        let (mut in_a, out_a, mut in_b, out_b) = (alloc(in_bytes), alloc(out_bytes), alloc(in_bytes), alloc(out_bytes));
        let sample_a = m.sample_input(0);
        let sample_b: Vec<u8> = varied_inputs(&m, 5)[0].bytes().unwrap().to_vec();
        in_a.write(0, &f16_bytes(&sample_a)).unwrap();
        in_b.write(0, &f16_bytes(&sample_b)).unwrap();

        // Main thread sets A; another thread sets B and records its own list; main then records: its
        // snapshot is A (per-thread pending values), although B's values were set last.
        n.set(g, 0, &in_a);
        n.set(g, 1, &out_a);
        let gh = g as usize;
        let nref = &n;
        let (in_b_ptr, out_b_ptr) = (in_b.as_ptr() as usize, out_b.as_ptr() as usize);
        let list_b = std::thread::scope(|s| {
            s.spawn(move || {
                let g = gh as ze_graph_handle_t;
                // SAFETY: valid graph; allocations of this driver.
                unsafe {
                    assert_eq!(nref.graph.pfnSetArgumentValue.unwrap()(g, 0, in_b_ptr as *const c_void), 0);
                    assert_eq!(nref.graph.pfnSetArgumentValue.unwrap()(g, 1, out_b_ptr as *const c_void), 0);
                }
                let l = nref.list();
                assert_eq!(nref.append(l, g), 0);
                l as usize
            })
            .join()
            .unwrap()
        }) as ze_command_list_handle_t;
        let list_a = n.list();
        assert_eq!(n.append(list_a, g), 0);
        // A later SetArgumentValue never changes a recorded command.
        n.set(g, 0, &in_b);
        assert_eq!(n.run(list_a), 0);
        assert_eq!(n.run(list_b), 0);

        for (sample, out) in [(&sample_a, &out_a), (&sample_b, &out_b)] {
            let want = m.reference(&[sample]).unwrap().remove(0);
            let want: Vec<f32> = want.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
            let mut got = vec![0u8; out_bytes];
            out.read(0, &mut got).unwrap();
            let got = f32_from_f16(&got);
            for (i, (w, g)) in want.iter().zip(&got).enumerate() {
                assert!((w - g).abs() <= 0.05 + 0.02 * w.abs(), "element {i}: {g} vs {w}");
            }
        }

        // The native blob: owned by the graph, self-delimiting (page padding ignored), and it keeps the
        // build flags (the imported graph has the same FP16 arguments).
        let mut size = 0usize;
        let mut p: *const u8 = std::ptr::null();
        // SAFETY: valid graph and out-pointers.
        assert_eq!(unsafe { n.graph.pfnGetNativeBinary2.unwrap()(g, &mut size, &mut p) }, 0);
        // SAFETY: the driver's blob is valid while the graph lives.
        let mut blob = unsafe { std::slice::from_raw_parts(p, size) }.to_vec();
        blob.resize(size.div_ceil(4096) * 4096 + 4096, 0xAB);
        let (r, g2, log) = n.create(ZE_GRAPH_FORMAT_NATIVE, &blob, "");
        assert_eq!(r, ZE_RESULT_SUCCESS, "{log}");
        assert_eq!(n.arg(g2, 0).devicePrecision, ZE_GRAPH_ARGUMENT_PRECISION_FP16);
        // SAFETY: zero is a valid bit pattern for this plain C struct.
        let mut props: ze_graph_properties_3_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid graph and out-pointer.
        assert_eq!(unsafe { n.graph.pfnGetProperties3.unwrap()(g2, &mut props) }, 0);
        assert_eq!(props.numGraphArgs, 2);
        // linux-npu-driver graph.cpp Graph::getProperties3: always INITIALIZE.
        assert_eq!(props.initStageRequired, ZE_GRAPH_STAGE_INITIALIZE);
        assert_ne!(props.flags & ZE_GRAPH_PROPERTIES_FLAG_NO_STANDARD_ALLOCATION, 0);

        // Memory the NPU driver does not know is refused when the execution is appended (the
        // driver resolves every argument to a buffer object there: UNINITIALIZED).
        let foreign = vec![0u8; in_bytes];
        // SAFETY: valid graph; the pointer value is only recorded.
        assert_eq!(unsafe { n.graph.pfnSetArgumentValue.unwrap()(g2, 0, foreign.as_ptr().cast()) }, 0);
        n.set(g2, 1, &out_a);
        let l3 = n.list();
        assert_eq!(n.append(l3, g2), ZE_RESULT_ERROR_UNINITIALIZED);

        // Strides on an argument the build flags did not make stride-capable are refused.
        let mut strides = ze_graph_argument_value_strides_t {
            stype: ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_STRIDES,
            pNext: std::ptr::null_mut(),
            userStrides: [0, 7, 0, 0, 0],
        };
        let t = ze_graph_argument_value_tensor_t {
            stype: ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_TENSOR,
            pNext: (&mut strides as *mut ze_graph_argument_value_strides_t).cast(),
            pTensor: in_a.as_ptr(),
        };
        // SAFETY: valid graph and descriptor chain.
        let r = unsafe {
            n.graph.pfnSetArgumentValue2.unwrap()(g2, 0, (&t as *const ze_graph_argument_value_tensor_t).cast())
        };
        assert_eq!(r, ZE_RESULT_ERROR_INVALID_ARGUMENT);

        for l in [list_a, list_b, l3] {
            ze!(n.api, zeCommandListDestroy(l));
        }
        for g in [g, g2] {
            // SAFETY: graphs we created, no longer used.
            assert_eq!(unsafe { n.graph.pfnDestroy.unwrap()(g) }, 0);
        }
        drop((in_a, in_b));
    }

    /// A profiling graph (`PERF_COUNT=YES`) needs a query at append and fills it with the layers of
    /// that execution; pools and queries keep the driver's slot rules.
    #[test]
    fn profiling_graphs_fill_their_query_with_the_executed_layers() {
        let n = Npu::new();
        let m = models::fully_connected();
        let (r, g, log) = n.create(ZE_GRAPH_FORMAT_NGRAPH_LITE, &ngraph_lite(&m), "--config PERF_COUNT=\"YES\"");
        assert_eq!(r, ZE_RESULT_SUCCESS, "{log}");
        // SAFETY: zero is a valid bit pattern for this plain C struct.
        let mut props: ze_graph_properties_3_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid graph and out-pointer.
        assert_eq!(unsafe { n.graph.pfnGetProperties3.unwrap()(g, &mut props) }, 0);
        assert_ne!(props.flags & ZE_GRAPH_PROPERTIES_FLAG_PROFILING_ENABLED, 0);

        let mut table: *mut c_void = std::ptr::null_mut();
        let name = c"ZE_extension_profiling_data";
        assert_eq!(ze!(n.api, zeDriverGetExtensionFunctionAddress(n.driver, name.as_ptr(), &mut table)), 0);
        // SAFETY: the driver's static profiling table.
        let prof = unsafe { &*(table as *const ze_graph_profiling_dditable_ext_t) };
        let (mut pool, mut q, mut q2) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid handles and out-pointers throughout.
        unsafe {
            assert_eq!(prof.pfnProfilingPoolCreate.unwrap()(g, 0, &mut pool), ZE_RESULT_ERROR_INVALID_SIZE);
            assert_eq!(prof.pfnProfilingPoolCreate.unwrap()(g, 1, &mut pool), 0);
            assert_eq!(prof.pfnProfilingQueryCreate.unwrap()(pool, 1, &mut q), ZE_RESULT_ERROR_INVALID_ARGUMENT);
            assert_eq!(prof.pfnProfilingQueryCreate.unwrap()(pool, 0, &mut q), 0);
            assert_eq!(prof.pfnProfilingQueryCreate.unwrap()(pool, 0, &mut q2), ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
        }

        let in_bytes = m.inputs[0].byte_size();
        let out_bytes = m.outputs[0].byte_size();
        let alloc = |len| n.ctx.alloc_host(len, 4096, HostMemFlags::NONE).unwrap();
        let (mut input, output) = (alloc(in_bytes), alloc(out_bytes));
        let sample = m.sample_input(0);
        input.write(0, &sample).unwrap();
        n.set(g, 0, &input);
        n.set(g, 1, &output);
        let l = n.list();
        assert_eq!(n.append(l, g), ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "a profiling graph needs a query");
        // SAFETY: valid list, graph and query; no events.
        let r =
            unsafe { n.graph.pfnAppendGraphExecute.unwrap()(l, g, q, std::ptr::null_mut(), 0, std::ptr::null_mut()) };
        assert_eq!(r, 0);
        assert_eq!(n.run(l), 0);
        let mut got = vec![0u8; out_bytes];
        output.read(0, &mut got).unwrap();
        assert_eq!(got, m.reference(&[&sample]).unwrap().remove(0), "profiling changes no result");

        let data = |kind: u32| -> Vec<u8> {
            let mut size = 0u32;
            // SAFETY: valid query; size query first, then a buffer of that size.
            assert_eq!(unsafe { prof.pfnProfilingQueryGetData.unwrap()(q, kind, &mut size, std::ptr::null_mut()) }, 0);
            let mut v = vec![0u8; size as usize];
            // SAFETY: as above.
            assert_eq!(unsafe { prof.pfnProfilingQueryGetData.unwrap()(q, kind, &mut size, v.as_mut_ptr()) }, 0);
            v
        };
        let layers = data(ZE_GRAPH_PROFILING_LAYER_LEVEL);
        let size = std::mem::size_of::<ze_profiling_layer_info>();
        assert!(!layers.is_empty() && layers.len() % size == 0, "{} bytes", layers.len());
        let executed = layers.chunks_exact(size).filter(|c| {
            // SAFETY: each chunk is one whole ze_profiling_layer_info written by the driver.
            let info = unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<ze_profiling_layer_info>()) };
            info.status == ZE_LAYER_STATUS_EXECUTED && info.name[0] != 0
        });
        assert!(executed.count() > 0, "the MatMul and Add ran");
        let tasks = data(ZE_GRAPH_PROFILING_TASK_LEVEL);
        assert!(!tasks.is_empty() && tasks.len() % std::mem::size_of::<ze_profiling_task_info>() == 0);
        assert!(!data(ZE_GRAPH_PROFILING_RAW).is_empty());

        // SAFETY: handles created above, destroyed once each.
        unsafe {
            assert_eq!(prof.pfnProfilingPoolDestroy.unwrap()(pool), ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
            assert_eq!(prof.pfnProfilingQueryDestroy.unwrap()(q), 0);
            assert_eq!(prof.pfnProfilingPoolDestroy.unwrap()(pool), 0);
            assert_eq!(n.graph.pfnDestroy.unwrap()(g), 0);
        }
        ze!(n.api, zeCommandListDestroy(l));
    }

    /// Many threads set arguments and record on one graph at the same time: every recorded command
    /// holds exactly the values its own thread set.
    #[test]
    fn concurrent_set_and_append_are_isolated_per_thread() {
        let n = Npu::new();
        let m = models::fully_connected();
        let (r, g, log) = n.create(ZE_GRAPH_FORMAT_NGRAPH_LITE, &ngraph_lite(&m), "");
        assert_eq!(r, ZE_RESULT_SUCCESS, "{log}");
        let gh = g as usize;
        let nref = &n;
        let mref = &m;
        std::thread::scope(|s| {
            for k in 0..8u8 {
                s.spawn(move || {
                    let g = gh as ze_graph_handle_t;
                    let mut input = nref.ctx.alloc_host(mref.inputs[0].byte_size(), 4096, HostMemFlags::NONE).unwrap();
                    let output = nref.ctx.alloc_host(mref.outputs[0].byte_size(), 4096, HostMemFlags::NONE).unwrap();
                    let sample = varied_inputs(mref, k)[0].bytes().unwrap().to_vec();
                    input.write(0, &sample).unwrap();
                    let want = mref.reference(&[&sample]).unwrap().remove(0);
                    // SAFETY: zero is a valid bit pattern for this plain C struct.
                    let mut qd: ze_command_queue_desc_t = unsafe { std::mem::zeroed() };
                    qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
                    let mut queue = std::ptr::null_mut();
                    assert_eq!(ze!(nref.api, zeCommandQueueCreate(nref.ctx.as_raw(), nref.device, &qd, &mut queue)), 0);
                    for _ in 0..10 {
                        nref.set(g, 0, &input);
                        nref.set(g, 1, &output);
                        let mut l = nref.list();
                        assert_eq!(nref.append(l, g), 0);
                        assert_eq!(ze!(nref.api, zeCommandListClose(l)), 0);
                        assert_eq!(
                            ze!(nref.api, zeCommandQueueExecuteCommandLists(queue, 1, &mut l, std::ptr::null_mut())),
                            0
                        );
                        assert_eq!(ze!(nref.api, zeCommandQueueSynchronize(queue, u64::MAX)), 0);
                        ze!(nref.api, zeCommandListDestroy(l));
                        let mut got = vec![0u8; want.len()];
                        output.read(0, &mut got).unwrap();
                        if let Err(e) = mref.compare(0, &want, &got) {
                            panic!("thread {k}: {e}");
                        }
                    }
                    ze!(nref.api, zeCommandQueueDestroy(queue));
                });
            }
        });
        // SAFETY: a graph we created, no longer used.
        assert_eq!(unsafe { n.graph.pfnDestroy.unwrap()(g) }, 0);
    }

    #[test]
    fn failures_are_explained_and_handles_validated() {
        let n = Npu::new();
        // Garbage input: the build log (handle, and the NULL-graph form the plugin uses) explains it.
        let (r, g, log) = n.create(ZE_GRAPH_FORMAT_NGRAPH_LITE, b"not an IR at all", "");
        assert_ne!(r, ZE_RESULT_SUCCESS);
        assert!(g.is_null());
        assert!(log.contains("virtual NPU") && log.contains("NGRAPH_LITE"), "{log}");
        let mut size = 0u32;
        assert_eq!(
            // SAFETY: NULL graph asks for the latest error; out-pointer valid.
            unsafe { n.graph.pfnBuildLogGetString.unwrap()(std::ptr::null_mut(), &mut size, std::ptr::null_mut()) },
            0
        );
        assert_eq!(size as usize, log.len() + 1);
        // A blob of another driver is not a native graph of ours.
        let (r, _, log) = n.create(ZE_GRAPH_FORMAT_NATIVE, &[0x7f, b'E', b'L', b'F', 0, 0, 0, 0], "");
        assert_eq!(r, ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);
        assert!(log.contains("magic"), "{log}");
        // Options the virtual compiler does not take (weights separation) are refused with a reason.
        let m = models::fully_connected();

        let (r, _, log) =
            n.create(ZE_GRAPH_FORMAT_NGRAPH_LITE, &ngraph_lite(&m), "--config NPU_SEPARATE_WEIGHTS_VERSION=\"1\"");
        assert_ne!(r, ZE_RESULT_SUCCESS);
        assert!(log.contains("NPU_SEPARATE_WEIGHTS_VERSION") && log.contains("not supported"), "{log}");
        // A layout that contradicts the model's declared layout would need a transposition: refused.
        let mut declared = models::convolution();
        declared.xml = declared.xml.replacen(
            "type=\"Parameter\" version=\"opset1\">",
            "type=\"Parameter\" version=\"opset1\"><rt_info><attribute name=\"layout\" version=\"0\" layout=\"[N,C,H,W]\" /></rt_info>",
            1,
        );
        let (r, _, log) = n.create(ZE_GRAPH_FORMAT_NGRAPH_LITE, &ngraph_lite(&declared), "--inputs_layouts=\"0:NHWC\"");
        assert_ne!(r, ZE_RESULT_SUCCESS);
        assert!(log.contains("layout conversion"), "{log}");
        let (r, g, log) = n.create(ZE_GRAPH_FORMAT_NGRAPH_LITE, &ngraph_lite(&declared), "--inputs_layouts=\"0:NCHW\"");
        assert_eq!(r, ZE_RESULT_SUCCESS, "{log}");
        assert_eq!(n.arg(g, 0).networkLayout, ZE_GRAPH_ARGUMENT_LAYOUT_NCHW);
        // SAFETY: a graph we created.
        assert_eq!(unsafe { n.graph.pfnDestroy.unwrap()(g) }, 0);
        // Dynamic shapes are refused with a reason.
        let mut dynamic = m.clone();
        dynamic.xml = m.xml.replace("shape=\"4,256\"", "shape=\"?,256\"").replace("<dim>4</dim>", "<dim>-1</dim>");
        let (r, _, log) = n.create(ZE_GRAPH_FORMAT_NGRAPH_LITE, &ngraph_lite(&dynamic), "");
        assert_ne!(r, ZE_RESULT_SUCCESS);
        assert!(log.contains("dynamic shapes"), "{log}");

        // Handles: NULL and foreign ones.
        let mut props = ze_graph_properties_t {
            stype: ZE_STRUCTURE_TYPE_GRAPH_PROPERTIES,
            pNext: std::ptr::null_mut(),
            numGraphArgs: 0,
        };
        assert_eq!(
            // SAFETY: NULL handle, valid out-pointer.
            unsafe { n.graph.pfnGetProperties.unwrap()(std::ptr::null_mut(), &mut props) },
            ZE_RESULT_ERROR_INVALID_NULL_HANDLE
        );
        let not_a_graph = [0u64; 8];
        // SAFETY: a readable pointer that is not a graph.
        let r = unsafe { n.graph.pfnGetProperties.unwrap()(not_a_graph.as_ptr() as ze_graph_handle_t, &mut props) };
        assert_eq!(r, ZE_RESULT_ERROR_INVALID_ARGUMENT);
        // A context of the GPU driver cannot create NPU graphs.
        let gpu_ctx = L0Context::create(driver_of_type(DeviceType::Gpu)).unwrap();
        let lite = ngraph_lite(&m);
        let desc = ze_graph_desc_2_t {
            stype: ZE_STRUCTURE_TYPE_GRAPH_DESC_2,
            pNext: std::ptr::null_mut(),
            format: ZE_GRAPH_FORMAT_NGRAPH_LITE,
            inputSize: lite.len(),
            pInput: lite.as_ptr(),
            pBuildFlags: std::ptr::null(),
            flags: 0,
        };
        let mut g = std::ptr::null_mut();
        // SAFETY: valid pointers; the context is of the wrong driver.
        let r = unsafe { n.graph.pfnCreate2.unwrap()(gpu_ctx.as_raw(), n.device, &desc, &mut g) };
        assert_eq!(r, ZE_RESULT_ERROR_INVALID_ARGUMENT);
        // linux-npu-driver 1.32.1 has no driver_npu gateway: an unknown name is INVALID_ARGUMENT
        // (api/ze_driver.cpp zeDriverGetExtensionFunctionAddress); any name containing
        // "ZE_extension_graph" (strstr), the legacy per-version names too, gets the one graph table.
        let mut t: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            ze!(n.api, zeDriverGetExtensionFunctionAddress(n.driver, c"ZE_extension_driver_npu".as_ptr(), &mut t)),
            ZE_RESULT_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            ze!(n.api, zeDriverGetExtensionFunctionAddress(n.driver, c"ZE_extension_graph_1_8".as_ptr(), &mut t)),
            0
        );
        assert_eq!(t as *const ze_graph_dditable_ext_t, n.graph as *const ze_graph_dditable_ext_t);
    }
}

/// The virtual NPU in a process that loaded OpenVINO's core but not its C library (Python): the driver
/// finds the loaded `libopenvino.so.*` with `dl_iterate_phdr` and opens `libopenvino_c` beside it.
#[test]
fn python_process_without_the_c_library() {
    let python = native_finder::provisioned_prefix().join("bin").join("python");
    if !python.exists() {
        eprintln!("skipped: no provisioned Python at {} (cargo xtask setup)", python.display());
        return;
    }
    let lib = activate().path().to_str().unwrap().to_string();
    let script = r#"
import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
import numpy as np
import openvino as ov
from openvino import opset13 as ops
assert "libopenvino_c" not in open("/proc/self/maps").read()
core = ov.Core()
assert "NPU" in core.available_devices, core.available_devices
x = ops.parameter([1, 8], ov.Type.f32, name="x")
w = np.arange(64, dtype=np.float32).reshape(8, 8) / 10
y = ops.relu(ops.matmul(x, ops.constant(w), False, False))
cm = core.compile_model(ov.Model([y], [x], "py"), "NPU")
inp = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
out = cm(inp)[0]
assert float(np.abs(out - np.maximum(inp @ w, 0)).max()) < 1e-5
assert "libopenvino_c" in open("/proc/self/maps").read()
print("ok")
"#;
    let out = std::process::Command::new(&python).arg("-c").arg(script).arg(&lib).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("ok"), "{text}");
}
