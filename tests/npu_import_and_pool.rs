//! The one import call (`NpuContext::import`) for the memory kinds that need no SYCL (Level Zero
//! allocations, raw memory), the NPU pool (`npu_sycl_bridge::pool`), and the rule that no two
//! running inferences share a tensor one of them writes. On the virtual platform, under the laptop
//! profile of `VL0_PROFILE`; every result is compared with the CPU plugin and every zero-copy claim
//! with the platform's counters.
use std::sync::{Arc, Mutex, MutexGuard};

use npu_sycl_bridge::level_zero::{DeviceType, L0Allocation, L0Context};
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::memory::{MemoryKind, NpuMemory, RawMemory};
use npu_sycl_bridge::npu::NpuTensor;
use npu_sycl_bridge::openvino::{ElementType, InferRequest, MemType, TensorType};
use npu_sycl_bridge::ownership::KeepAlive;
use npu_sycl_bridge::pool::{NpuPool, PoolLimits, Trimmed};
use npu_sycl_bridge::raw::AsRaw;
use npu_sycl_bridge::{ErrorKind, Path, Reason};
use testkit::models;

mod common;

use common::npu::{core, counter, imports_user_memory, l0_device, open_fds, NpuAndCpu};

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn gpu() -> (Arc<L0Context>, npu_sycl_bridge::level_zero::L0Device) {
    let (driver, device) = l0_device(DeviceType::Gpu);
    (Arc::new(L0Context::create(driver).unwrap()), device)
}

/// GPU device memory (exportable) holding `bytes`.
fn gpu_memory(ctx: &Arc<L0Context>, device: npu_sycl_bridge::level_zero::L0Device, bytes: &[u8]) -> L0Allocation {
    let mut mem = ctx.alloc_device_exportable(device, 4096, 4096).unwrap();
    mem.write(0, bytes).unwrap();
    mem
}

#[test]
fn level_zero_device_memory_is_imported_as_a_dma_buf_zero_copy() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::multi_io());
    let (ctx, device) = gpu();
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    let fds0 = open_fds();
    let (live0, imports0) = (counter("gpu.live_allocations"), counter("npu.imports.dma_buf"));
    {
        // The allocations move into the tensors: the GPU's memory is reached through them.
        let mem = [gpu_memory(&ctx, device, &a), gpu_memory(&ctx, device, &b)];
        assert_eq!(mem[0].memory_kind(), MemoryKind::LevelZero(npu_sycl_bridge::level_zero::MemoryType::Device));
        let [ma, mb] = mem;
        let ta = s.npu.import(ma, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let tb = s.npu.import(mb, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let tsum =
            s.npu.import(gpu_memory(&ctx, device, &[]), ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        let tprod =
            s.npu.import(gpu_memory(&ctx, device, &[]), ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        assert_eq!(counter("npu.imports.dma_buf"), imports0 + 4, "one import per allocation");
        assert_eq!(ta.remote().params().unwrap().mem_type, Some(MemType::SharedBuf));
        // Device memory reaches the NPU through an export the program could also make: no host views.
        let e = tsum.host_bytes().unwrap_err();
        assert_eq!(
            e.kind(),
            &ErrorKind::Unsupported { path: Path::HostView, reason: Reason::ExporterOwnsMemory },
            "{e}"
        );

        let mut r = s.request();
        r.set_input_tensor(0, &ta).unwrap();
        r.set_input_tensor(1, &tb).unwrap();
        r.set_output_tensor(0, &tsum).unwrap();
        r.set_output_tensor(1, &tprod).unwrap();
        let (args0, copied0) = (counter("npu.graph_args.dma_buf"), counter("npu.bytes_copied"));
        r.infer().unwrap();
        assert_eq!(counter("npu.graph_args.dma_buf"), args0 + 4, "the graph ran on the GPU's pages");
        assert_eq!(counter("npu.bytes_copied"), copied0, "no NPU copies");
        // The results, read through the NPU's mapping of the GPU memory (a second export of it would
        // be another way in; here the remote tensor's MEM_HANDLE is the driver's mapping).
        let out = |t: &npu_sycl_bridge::npu::NpuTensor| {
            let va = t.remote().params().unwrap().mem_handle as *const u8;
            // SAFETY: the inference finished; MEM_HANDLE is the driver's host mapping of the whole
            // 4096-byte buffer, alive while the tensor lives; nothing writes it now.
            unsafe { std::slice::from_raw_parts(va, 4096) }.to_vec()
        };
        s.assert_matches_cpu(&[a.clone(), b.clone()], &[out(&tsum), out(&tprod)]);
    }
    assert_eq!(counter("gpu.live_allocations"), live0, "every allocation freed with its tensor");
    assert_eq!(open_fds(), fds0, "every export's fd closed once");
}

#[test]
fn level_zero_host_memory_is_refused_with_the_reason_for_gpu_and_npu_contexts() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let (ctx, _device) = gpu();
    let live0 = counter("gpu.live_allocations");
    // GPU-driver host memory: the NPU cannot pin it (compute-runtime maps it from GPU buffer objects).
    let host = ctx.alloc_host(s.m.inputs[0].byte_size(), 4096, Default::default()).unwrap();
    let shape = s.m.inputs[0].shape.clone();
    let e = s.npu.import(host, ElementType::F32, shape.clone(), TensorType::Input).unwrap_err();
    let reason =
        if s.npu.capabilities().sysmem_import { Reason::GpuUsmNotPinnable } else { Reason::NoSystemMemoryImport };
    assert_eq!(e.kind(), &ErrorKind::Unsupported { path: Path::CpuVa, reason }, "{e:#}");
    assert!(format!("{e:#}").contains("dma-buf"), "names what works: {e:#}");
    assert_eq!(counter("gpu.live_allocations"), live0, "the refused allocation was freed");

    // Host memory the program allocated in the NPU's own context: the plugin reuses only
    // allocations it made itself, so this is refused before OpenVINO sees it.
    let own = s.npu.level_zero_context().alloc_host(s.m.inputs[0].byte_size(), 4096, Default::default()).unwrap();
    let (npu_live0, sysmem0) = (counter("npu.live_allocations"), counter("npu.imports.sysmem"));
    let e = s.npu.import(own, ElementType::F32, shape, TensorType::Input).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::PluginContextMemory }, "{e:#}");
    assert!(format!("{e:#}").contains("l0_host_tensor"), "names what works: {e:#}");
    assert_eq!(counter("npu.imports.sysmem"), sysmem0, "nothing imported");
    assert_eq!(counter("npu.live_allocations"), npu_live0 - 1, "the refused allocation was freed");
}

#[test]
fn raw_memory_is_imported_as_cpu_va_where_the_npu_imports_user_memory() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let bytes = s.m.inputs[0].byte_size();
    let buf = PageAlignedBuffer::from_slice(&s.m.sample_input(0)).unwrap();
    let ptr = buf.as_ptr().cast_mut().cast::<u8>();
    let keep: KeepAlive = Arc::new(buf);
    // SAFETY: `ptr` is `bytes` bytes of the buffer `keep` owns (the mapping does not move with it);
    // nothing else touches it.
    let raw = unsafe { RawMemory::new(ptr, bytes, Some(keep)) }.unwrap();
    // SAFETY: a null pointer is refused before anything else.
    let null = unsafe { RawMemory::new(std::ptr::null_mut(), 4096, None) }.unwrap_err();
    assert_eq!(null.kind(), &ErrorKind::InvalidArgument);
    if !imports_user_memory(&s.npu) {
        let e = s.npu.import(raw, ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input).unwrap_err();
        assert_eq!(
            e.kind(),
            &ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::NoSystemMemoryImport },
            "{e:#}"
        );
        return;
    }
    let sysmem0 = counter("npu.imports.sysmem");
    let t = s.npu.import(raw, ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input).unwrap();
    assert_eq!(t.remote().params().unwrap().mem_handle.cast::<u8>(), ptr, "the NPU uses the caller's address");
    assert_eq!(counter("npu.imports.sysmem"), sysmem0 + 1);
    let out = s.npu.l0_host_tensor(ElementType::F32, s.m.outputs[0].shape.clone(), TensorType::Output).unwrap();
    let mut r = s.request();
    r.set_input_tensor(0, &t).unwrap();
    r.set_output_tensor(0, &out).unwrap();
    let args0 = counter("npu.graph_args.sysmem");
    r.infer().unwrap();
    assert_eq!(counter("npu.graph_args.sysmem"), args0 + 1, "the graph read the caller's pages");
    s.assert_matches_cpu(&[s.m.sample_input(0)], &[out.host_bytes().unwrap().to_vec()]);
}

// ------------------------------------------------------------------------------------------------
// The pool
// ------------------------------------------------------------------------------------------------

/// A pool of exportable GPU allocations made on demand: every profile imports dma-bufs.
fn gpu_pool(s: &NpuAndCpu, limits: PoolLimits) -> NpuPool<L0Allocation> {
    let (ctx, device) = gpu();
    NpuPool::with_allocator(&s.npu, limits, move |len| ctx.alloc_device_exportable(device, len, 4096))
}

#[test]
fn pooled_tensors_are_imported_once_and_reused_without_import() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let (din, dout) = (&s.m.inputs[0], &s.m.outputs[0]);
    let live0 = counter("gpu.live_allocations");
    let fds0 = open_fds();
    {
        let pool = gpu_pool(&s, PoolLimits::default());
        let mut requests = [s.request(), s.request()];
        let imports0 = counter("npu.imports.dma_buf");
        let mut after_warmup = None;
        for i in 0..40 {
            let r = &mut requests[i % 2];
            let input = pool.tensor(din.element_type, din.shape.clone()).unwrap();
            let output = pool.tensor(dout.element_type, dout.shape.clone()).unwrap();
            // The input is written through the NPU's mapping of the GPU memory: the pool's memory
            // is reachable only through its tensors.
            let data: Vec<u8> = if i % 3 == 0 { s.m.sample_input(0) } else { common::npu::other_input(&s.m, 0) };
            let va = input.remote().params().unwrap().mem_handle.cast::<u8>();
            // SAFETY: the driver's mapping of this pool buffer (at least the input's bytes); no
            // inference uses the tensor now (it was free when the pool handed it out).
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), va, data.len()) };
            r.set_input_tensor(0, &input).unwrap();
            r.set_output_tensor(0, &output).unwrap();
            r.infer().unwrap();
            let va = output.remote().params().unwrap().mem_handle.cast::<u8>();
            // SAFETY: as above; the inference finished.
            let got = unsafe { std::slice::from_raw_parts(va, dout.byte_size()) }.to_vec();
            s.assert_matches_cpu(&[data], &[got]);
            if i == 3 {
                after_warmup = Some((counter("npu.imports.dma_buf"), pool.stats()));
            }
        }
        let (imports_warm, stats_warm) = after_warmup.unwrap();
        let stats = pool.stats();
        println!("pool after 40 inferences on two requests: {stats}");
        assert_eq!(counter("npu.imports.dma_buf"), imports_warm, "no import after the warm-up");
        assert_eq!(stats.imports, stats_warm.imports, "{stats}");
        assert_eq!(stats.allocations, stats_warm.allocations, "no allocation after the warm-up: {stats}");
        assert_eq!(counter("npu.imports.dma_buf") - imports0, stats.imports, "the pool counts what the driver saw");
        assert_eq!(stats.hits + stats.misses, 80, "{stats}");
        assert!(stats.buffers <= 6, "bound tensors (2 per request) + the 2 being made: {stats}");
        drop(requests);
        assert_eq!(pool.stats().in_use, 0, "every tensor came back when the requests let go");
        let freed = pool.trim();
        assert_eq!(freed.bytes, stats.bytes, "trim frees every free buffer the pool allocated");
        assert_eq!((freed.buffers, freed.imports), (stats.buffers, stats.buffers), "each with its import");
        assert_eq!(pool.stats().buffers, 0);
        assert_eq!(counter("gpu.live_allocations"), live0, "trimmed memory is freed");
    }
    assert_eq!(counter("gpu.live_allocations"), live0);
    assert_eq!(open_fds(), fds0, "every export's fd closed once");
}

/// One inference of the fully connected model on `input` and `output` (pool tensors over GPU
/// memory, written and read through the NPU's mapping), checked against the CPU plugin.
fn infer_pooled(s: &NpuAndCpu, r: &mut InferRequest, input: &NpuTensor, output: &NpuTensor, i: usize) {
    let data: Vec<u8> = if i % 2 == 0 { s.m.sample_input(0) } else { common::npu::other_input(&s.m, 0) };
    let va = input.remote().params().unwrap().mem_handle.cast::<u8>();
    // SAFETY: the driver's mapping of this pool buffer (the input's bytes); no inference uses it now.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), va, data.len()) };
    r.set_input_tensor(0, input).unwrap();
    r.set_output_tensor(0, output).unwrap();
    r.infer().unwrap();
    let va = output.remote().params().unwrap().mem_handle.cast::<u8>();
    // SAFETY: as above; the inference finished.
    let got = unsafe { std::slice::from_raw_parts(va, s.m.outputs[0].byte_size()) }.to_vec();
    s.assert_matches_cpu(&[data], &[got]);
}

#[test]
fn a_request_gets_back_the_pool_tensors_it_has_bound_so_the_plugin_patches_nothing() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let (din, dout) = (&s.m.inputs[0], &s.m.outputs[0]);
    let pool = gpu_pool(&s, PoolLimits::default());
    let mut r = s.request();
    // Without affinity: the request still holds its tensors, so every take is another tensor and
    // every inference patches both graph arguments.
    let updates0 = counter("npu.graph_arg_updates");
    for i in 0..4 {
        let input = pool.tensor(din.element_type, din.shape.clone()).unwrap();
        let output = pool.tensor(dout.element_type, dout.shape.clone()).unwrap();
        infer_pooled(&s, &mut r, &input, &output, i);
    }
    assert!(counter("npu.graph_arg_updates") - updates0 >= 6, "plain takes alternate tensors: patched each time");
    // With affinity: the tensors the request has bound come back to it.
    let bound = (pool.input_for(&r, 0).unwrap(), pool.output_for(&r, 0).unwrap());
    let (imports, updates) = (pool.stats().imports, counter("npu.graph_arg_updates"));
    drop(bound);
    for i in 0..8 {
        let input = pool.input_for(&r, 0).unwrap();
        let output = pool.output_for(&r, 0).unwrap();
        infer_pooled(&s, &mut r, &input, &output, i);
    }
    assert_eq!(counter("npu.graph_arg_updates"), updates, "the same tensors rebound: nothing patched");
    assert_eq!(pool.stats().imports, imports, "no import");
    // A tensor the caller still holds is not handed out again: the next take is another one.
    let held = pool.input_for(&r, 0).unwrap();
    let other = pool.input_for(&r, 0).unwrap();
    assert!(!std::ptr::eq(held.remote().as_raw(), other.remote().as_raw()), "a held tensor is never handed out twice");
    drop((held, other));
    // A running request gets no tensor of its own back: the inference still uses it.
    let bound = pool.input_for(&r, 0).unwrap().remote().as_raw();
    r.start_async().unwrap();
    let during = pool.input_for(&r, 0).unwrap();
    assert!(!std::ptr::eq(bound, during.remote().as_raw()), "not while an inference runs");
    r.wait().unwrap();
    drop(during);
    assert!(std::ptr::eq(bound, pool.input_for(&r, 0).unwrap().remote().as_raw()), "and again once it finished");
    // Ports the model lacks, and a request of another model's shape, are the caller's errors.
    assert_eq!(pool.input_for(&r, 1).unwrap_err().kind(), &ErrorKind::InvalidArgument);
    assert_eq!(pool.output_for(&r, 3).unwrap_err().kind(), &ErrorKind::InvalidArgument);
}

#[test]
fn a_pool_never_hands_out_a_tensor_in_use_and_says_when_it_is_exhausted() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let din = &s.m.inputs[0];
    let pool = gpu_pool(&s, PoolLimits { max_buffers: 2, max_bytes: 1 << 30 });
    let a = pool.tensor(din.element_type, din.shape.clone()).unwrap();
    let b = pool.tensor(din.element_type, din.shape.clone()).unwrap();
    assert_ne!(
        a.remote().params().unwrap().mem_handle,
        b.remote().params().unwrap().mem_handle,
        "two tensors, two buffers"
    );
    let e = pool.tensor(din.element_type, din.shape.clone()).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Exhausted, "{e:#}");
    assert!(format!("{e:#}").contains("InferRequest"), "says how tensors come back: {e:#}");
    // A tensor bound to a request stays in use after the caller dropped it.
    let va_a = a.remote().params().unwrap().mem_handle;
    let mut r = s.request();
    r.set_input_tensor(0, &a).unwrap();
    drop(a);
    assert_eq!(pool.tensor(din.element_type, din.shape.clone()).unwrap_err().kind(), &ErrorKind::Exhausted);
    assert_eq!(pool.stats().in_use, 2);
    // Dropped and unbound: handed out again, same buffer, no import.
    let imports = pool.stats().imports;
    drop(r);
    let again = pool.tensor(din.element_type, din.shape.clone()).unwrap();
    assert_eq!(again.remote().params().unwrap().mem_handle, va_a);
    assert_eq!(pool.stats().imports, imports);
    // Another shape re-imports a free buffer only when nothing else is left.
    drop(b);
    let other = pool.tensor(ElementType::U8, [4096]).unwrap();
    assert_eq!(pool.stats().imports, imports + 1, "the free buffer was re-imported for the new shape");
    drop((again, other));
    // Limits in bytes: a tensor larger than the pool may hold is refused, nothing allocated.
    let small = gpu_pool(&s, PoolLimits { max_buffers: 8, max_bytes: 8192 });
    let e = small.tensor(ElementType::F32, [1, 4096]).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Exhausted, "{e:#}");
    assert_eq!(small.stats().allocations, 0);
}

#[test]
fn a_pool_of_the_programs_own_buffers_imports_each_once() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let (din, dout) = (&s.m.inputs[0], &s.m.outputs[0]);
    if !imports_user_memory(&s.npu) {
        let pool = NpuPool::from_buffers(&s.npu, vec![PageAlignedBuffer::new(din.byte_size()).unwrap()]).unwrap();
        let e = pool.tensor(din.element_type, din.shape.clone()).unwrap_err();
        assert_eq!(
            e.kind(),
            &ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::NoSystemMemoryImport },
            "{e:#}"
        );
        return;
    }
    let buffers: Vec<PageAlignedBuffer> = (0..4).map(|_| PageAlignedBuffer::new(din.byte_size()).unwrap()).collect();
    let pool = NpuPool::from_buffers(&s.npu, buffers).unwrap();
    let sysmem0 = counter("npu.imports.sysmem");
    let mut r = s.request();
    for i in 0..12 {
        let mut input = pool.tensor(din.element_type, din.shape.clone()).unwrap();
        let mut output = pool.tensor(dout.element_type, dout.shape.clone()).unwrap();
        let data = if i % 2 == 0 { s.m.sample_input(0) } else { common::npu::other_input(&s.m, 0) };
        input.host_bytes_mut().unwrap().copy_from_slice(&data);
        r.set_input_tensor(0, &input).unwrap();
        r.set_output_tensor(0, &output).unwrap();
        r.infer().unwrap();
        let got = output.host_bytes_mut().unwrap().to_vec();
        s.assert_matches_cpu(&[data], &[got]);
    }
    let stats = pool.stats();
    assert!(stats.imports <= 4, "each buffer imported at most once: {stats}");
    assert_eq!(counter("npu.imports.sysmem") - sysmem0, stats.imports, "{stats}");
    assert_eq!(stats.allocations, 0, "the program's buffers only");
    // The request still holds the last two tensors: trim drops the other two imports only.
    let trimmed = pool.trim();
    assert_eq!(trimmed, Trimmed { imports: 2, buffers: 0, bytes: 0 }, "trim keeps the program's buffers");
    drop(r);
    assert_eq!(pool.trim(), Trimmed { imports: 2, buffers: 0, bytes: 0 }, "and the rest once the request let go");
    let again = pool.tensor(din.element_type, din.shape.clone()).unwrap();
    assert_eq!(pool.stats().imports, stats.imports + 1, "the next tensor imports its buffer again");
    drop(again);
    assert!(NpuPool::<PageAlignedBuffer>::from_buffers(&s.npu, Vec::new()).is_err());
}

// ------------------------------------------------------------------------------------------------
// Running inferences and the memory they write
// ------------------------------------------------------------------------------------------------

#[test]
fn two_running_inferences_never_share_a_tensor_one_of_them_writes() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let (din, dout) = (&s.m.inputs[0], &s.m.outputs[0]);
    let pool = gpu_pool(&s, PoolLimits::default());
    let input = pool.tensor(din.element_type, din.shape.clone()).unwrap();
    let out1 = pool.tensor(dout.element_type, dout.shape.clone()).unwrap();
    let out2 = pool.tensor(dout.element_type, dout.shape.clone()).unwrap();
    let (mut r1, mut r2) = (s.request(), s.request());

    // One input read by two running inferences: allowed.
    r1.set_input_tensor(0, &input).unwrap();
    r1.set_output_tensor(0, &out1).unwrap();
    r2.set_input_tensor(0, &input).unwrap();
    r2.set_output_tensor(0, &out2).unwrap();
    r1.start_async().unwrap();
    r2.start_async().unwrap();
    r1.wait().unwrap();
    r2.wait().unwrap();

    // One output written by two running inferences: the second is refused, the first unharmed.
    r2.set_output_tensor(0, &out1).unwrap();
    r1.start_async().unwrap();
    let e = r2.start_async().unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Busy, "{e}");
    assert!(e.to_string().contains("race"), "{e}");
    assert!(!r2.is_running());
    r1.wait().unwrap();
    r2.infer().unwrap();

    // A tensor one running inference writes cannot be read by another, either way round (this
    // model's input and output have the same shape, so an output can be the next input).
    assert_eq!(din.shape, dout.shape);
    r2.set_input_tensor(0, &out1).unwrap();
    r2.set_output_tensor(0, &out2).unwrap();
    r1.start_async().unwrap();
    assert_eq!(r2.start_async().unwrap_err().kind(), &ErrorKind::Busy);
    r1.wait().unwrap();
    r2.start_async().unwrap();
    assert_eq!(r1.start_async().unwrap_err().kind(), &ErrorKind::Busy);
    r2.wait().unwrap();
    // Sequentially, chaining works: r1 writes out1, r2 reads it.
    r1.infer().unwrap();
    r2.infer().unwrap();
}

#[test]
fn an_output_of_one_model_is_the_input_of_another_without_crossing_the_host() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let (din, dout) = (&s.m.inputs[0], &s.m.outputs[0]);
    assert_eq!(din.shape, dout.shape);
    let model = core().read_model_from_memory(&s.m.xml, &s.m.weights).unwrap();
    let second = core().compile_model(&model, "NPU", &npu_sycl_bridge::openvino::Properties::new()).unwrap();
    let x = s.m.sample_input(0);
    let mut input = s.npu.l0_host_tensor(din.element_type, din.shape.clone(), TensorType::Input).unwrap();
    input.host_bytes_mut().unwrap().copy_from_slice(&x);
    // The link between the two models: NPU memory, written by the first, read by the second.
    let link = s.npu.l0_host_tensor(dout.element_type, dout.shape.clone(), TensorType::Binded).unwrap();
    let out = s.npu.l0_host_tensor(dout.element_type, dout.shape.clone(), TensorType::Output).unwrap();
    let (mut first, mut then) = (s.request(), second.create_infer_request().unwrap());
    first.set_input_tensor(0, &input).unwrap();
    first.set_output_tensor(0, &link).unwrap();
    then.set_input_tensor(0, &link).unwrap();
    then.set_output_tensor(0, &out).unwrap();
    let (copied0, inferences0) = (counter("npu.bytes_copied"), counter("npu.inferences"));
    first.infer().unwrap();
    then.infer().unwrap();
    assert_eq!(counter("npu.inferences"), inferences0 + 2);
    assert_eq!(counter("npu.bytes_copied"), copied0, "nothing crossed the host between the models");
    let mid = s.cpu(&[x]).remove(0);
    s.assert_matches_cpu(&[mid], &[out.host_bytes().unwrap().to_vec()]);
}
