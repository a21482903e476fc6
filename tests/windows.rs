//! Windows: the NT-handle path and the other NPU paths with the real Windows OpenVINO NPU plugin
//! on the virtual platform (`ze_loader.dll`), against the CPU plugin. Run under Wine by
//! `cargo xtask test-windows` (one test at a time: they read process-wide counters and handle
//! values); on other OSes this file has no tests.
#![cfg(windows)]

use std::os::windows::io::{AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::sync::{Arc, Mutex, MutexGuard};

use npu_sycl_bridge::level_zero::{DeviceType, L0Allocation, L0Context, L0Device};
use npu_sycl_bridge::memory::{NtHandleMemory, PageAlignedBuffer};
use npu_sycl_bridge::openvino::{ElementType, MemType, TensorType};
use npu_sycl_bridge::pool::NpuPool;
use npu_sycl_bridge::{ErrorKind, Path, Reason};
use testkit::models;
use windows_sys::Win32::Foundation::GetHandleInformation;
use windows_sys::Win32::System::Threading::CreateEventW;

mod common;
#[path = "windows/ur.rs"]
mod ur;

use common::npu::{core, counter, imports_user_memory, l0_device, other_input, NpuAndCpu};

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `h` is an open handle of this process.
fn is_open(h: RawHandle) -> bool {
    let mut flags = 0u32;
    // SAFETY: GetHandleInformation only reads the handle table; any value is allowed.
    unsafe { GetHandleInformation(h, &mut flags) != 0 }
}

/// A new event: an open handle that is not shareable memory.
fn event() -> OwnedHandle {
    // SAFETY: creates a new unnamed event; the handle is ours.
    let h = unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) };
    assert!(!h.is_null());
    // SAFETY: a fresh handle nothing else owns.
    unsafe { OwnedHandle::from_raw_handle(h) }
}

/// The handle value the process gets next: Windows hands out the lowest free slot of its handle
/// table, so the same value before and after a loop means the loop left no handle open.
fn next_handle_value() -> usize {
    event().as_raw_handle() as usize
}

struct Gpu {
    ctx: Arc<L0Context>,
    device: L0Device,
}

fn gpu() -> Gpu {
    let (driver, device) = l0_device(DeviceType::Gpu);
    Gpu { ctx: Arc::new(L0Context::create(driver).unwrap()), device }
}

impl Gpu {
    /// Exportable GPU device memory holding `bytes`, and an NT handle exported from it.
    fn exported(&self, len: usize, bytes: Option<&[u8]>) -> (L0Allocation, NtHandleMemory) {
        let mut mem = self.ctx.alloc_device_exportable(self.device, len, 4096).unwrap();
        if let Some(b) = bytes {
            mem.write(0, b).unwrap();
        }
        let handle = mem.export_nt_handle().unwrap();
        (mem, NtHandleMemory::new(handle, len))
    }
}

fn read(m: &L0Allocation) -> Vec<u8> {
    let mut v = vec![0u8; m.len()];
    m.read(0, &mut v).unwrap();
    v
}

#[test]
fn the_windows_npu_plugin_runs_on_the_virtual_platform() {
    let _s = serial();
    let devices = core().available_devices().unwrap();
    assert!(devices.iter().any(|d| d == "NPU"), "devices: {devices:?}");
    let s = NpuAndCpu::new(core(), models::convolution());
    let caps = s.npu.capabilities();
    assert!(caps.nt_handle_import && !caps.fd_import, "the Windows NPU imports NT handles, not fds: {caps:?}");
    let before = counter("npu.inferences");
    let mut r = s.request();
    for (i, t) in testkit::reference::sample_tensors(&s.m).iter().enumerate() {
        r.set_input_tensor(i, t).unwrap();
    }
    r.infer().unwrap();
    let outs = testkit::reference::check_outputs(&s.m, &mut r);
    assert_eq!(counter("npu.inferences"), before + 1, "ran on the virtual NPU");
    s.assert_matches_cpu(&s.m.sample_inputs(), &outs);
}

#[test]
fn nt_handles_from_the_virtual_gpu_reach_the_npu_without_a_copy() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::multi_io());
    let g = gpu();
    let (a, b) = (s.m.sample_input(0), s.m.sample_input(1));
    let (gpu_live, npu_live) = (counter("gpu.live_allocations"), counter("npu.live_allocations"));
    let (imports0, exports0, copied0) =
        (counter("npu.imports.nt_handle"), counter("gpu.exports.nt_handle"), counter("npu.bytes_copied"));
    let handles: Vec<RawHandle>;
    {
        let (mut mem_a, h_a) = g.exported(4096, Some(&a));
        let (_mem_b, h_b) = g.exported(4096, Some(&b));
        let (mem_sum, h_sum) = g.exported(4096, None);
        let (mem_prod, h_prod) = g.exported(4096, None);
        handles = [&h_a, &h_b, &h_sum, &h_prod].iter().map(|h| h.handle().as_raw_handle()).collect();
        assert_eq!(counter("gpu.exports.nt_handle"), exports0 + 4);
        let ta = s.npu.import(h_a, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let tb = s.npu.import(h_b, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let tsum = s.npu.import(h_sum, ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        let tprod = s.npu.import(h_prod, ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        assert_eq!(counter("npu.imports.nt_handle"), imports0 + 4);
        assert_eq!(ta.remote().params().unwrap().mem_type, Some(MemType::SharedBuf));
        assert!(handles.iter().all(|&h| is_open(h)), "the tensors keep the handles open");

        let mut r = s.request();
        r.set_input_tensor(0, &ta).unwrap();
        r.set_input_tensor(1, &tb).unwrap();
        r.set_output_tensor(0, &tsum).unwrap();
        r.set_output_tensor(1, &tprod).unwrap();
        let args0 = counter("npu.graph_args.nt_handle");
        r.infer().unwrap();
        assert_eq!(counter("npu.graph_args.nt_handle"), args0 + 4, "the graph ran on the GPU's pages themselves");
        s.assert_matches_cpu(&[a.clone(), b.clone()], &[read(&mem_sum), read(&mem_prod)]);

        // The GPU writes a new input after binding: the next inference sees it, nothing rebound.
        let a2 = other_input(&s.m, 0);
        mem_a.write(0, &a2).unwrap();
        r.infer().unwrap();
        s.assert_matches_cpu(&[a2, b.clone()], &[read(&mem_sum), read(&mem_prod)]);
        assert_eq!(counter("npu.bytes_copied"), copied0, "no byte went through an NPU copy");

        // Host views of memory the exporter still writes are refused.
        let e = ta.host_bytes().unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::Unsupported { path: Path::HostView, reason: Reason::ExporterOwnsMemory });
    }
    // Each handle was closed once, after OpenVINO freed its tensor; every allocation is gone.
    assert!(handles.iter().all(|&h| !is_open(h)), "every NT handle closed with its tensor");
    assert_eq!(counter("gpu.live_allocations"), gpu_live);
    assert_eq!(counter("npu.live_allocations"), npu_live);
}

#[test]
fn the_gpu_exports_nt_handles_only_for_device_memory_allocated_exportable() {
    let _s = serial();
    let g = gpu();
    let not_exportable = ErrorKind::Unsupported { path: Path::NtHandle, reason: Reason::NotExportable };
    let plain = g.ctx.alloc_device(g.device, 4096, 4096).unwrap();
    let e = plain.export_nt_handle().unwrap_err();
    assert_eq!(e.kind(), &not_exportable, "{e}");
    // compute-runtime's Context::allocHostMem never makes a shareable resource.
    let host = g.ctx.alloc_host_exportable(g.device, 4096, 4096).unwrap();
    assert_eq!(host.export_nt_handle().unwrap_err().kind(), &not_exportable);
    // Every export of exportable memory is the caller's own duplicate, open after zeMemFree.
    let mem = g.ctx.alloc_device_exportable(g.device, 4096, 4096).unwrap();
    let (h1, h2) = (mem.export_nt_handle().unwrap(), mem.export_nt_handle().unwrap());
    assert_ne!(h1.as_raw_handle(), h2.as_raw_handle());
    drop(mem);
    assert!(is_open(h1.as_raw_handle()) && is_open(h2.as_raw_handle()));
}

#[test]
fn bad_nt_handles_are_typed_errors_and_lose_nothing() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let npu_live = counter("npu.live_allocations");

    // An open handle that is no shareable memory: the NPU driver refuses it; the handle is closed.
    let ev = event();
    let raw = ev.as_raw_handle();
    let e = s
        .npu
        .import(NtHandleMemory::new(ev, 4096), ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input)
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "the driver's refusal: {e:#}");
    assert!(!is_open(raw), "the refused handle was closed once");

    // Shareable memory smaller than the tensor: refused before the driver sees it.
    let g = gpu();
    let (_mem, small) = g.exported(4096, None);
    let raw = small.handle().as_raw_handle();
    let e = s.npu.import(small, ElementType::F32, [1, 2048], TensorType::Input).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Size { .. }), "{e:#}");
    assert!(!is_open(raw));

    // A handle value that is not open: refused, and no one else's handle is closed.
    let stale = event();
    let stale_raw = stale.as_raw_handle();
    drop(stale);
    // SAFETY: deliberately a closed value; the import must only look at it, never close it.
    let not_open = unsafe { OwnedHandle::from_raw_handle(stale_raw) };
    let e = s.npu.import(
        NtHandleMemory::new(not_open, 4096),
        ElementType::F32,
        s.m.inputs[0].shape.clone(),
        TensorType::Input,
    );
    assert_eq!(e.unwrap_err().kind(), &ErrorKind::InvalidArgument);
    assert_eq!(counter("npu.live_allocations"), npu_live, "no import left behind");
}

#[test]
fn import_cycles_leave_no_handle_open() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let g = gpu();
    let x = s.m.sample_input(0);
    let cycle = || {
        let (mem, h) = g.exported(4096, Some(&x));
        let (out, h_out) = g.exported(4096, None);
        let t = s.npu.import(h, ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input).unwrap();
        let o = s.npu.import(h_out, ElementType::F32, s.m.outputs[0].shape.clone(), TensorType::Output).unwrap();
        let mut r = s.request();
        r.set_input_tensor(0, &t).unwrap();
        r.set_output_tensor(0, &o).unwrap();
        r.infer().unwrap();
        drop((r, t, o, mem));
        read(&out)
    };
    let first = cycle();
    s.assert_matches_cpu(std::slice::from_ref(&x), &[first]);
    let (gpu_live, npu_live, before) =
        (counter("gpu.live_allocations"), counter("npu.live_allocations"), next_handle_value());
    for _ in 0..200 {
        cycle();
    }
    assert_eq!(next_handle_value(), before, "200 cycles left a handle open");
    assert_eq!((counter("gpu.live_allocations"), counter("npu.live_allocations")), (gpu_live, npu_live));
}

#[test]
fn page_aligned_buffers_and_l0_host_tensors_on_windows() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let x = s.m.sample_input(0);
    let out = s.npu.l0_host_tensor(ElementType::F32, s.m.outputs[0].shape.clone(), TensorType::Output).unwrap();
    let mut r = s.request();
    r.set_output_tensor(0, &out).unwrap();
    // L0 host tensors: the plugin's own memory, written in place.
    let mut input = s.npu.l0_host_tensor(ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input).unwrap();
    input.host_bytes_mut().unwrap().copy_from_slice(&x);
    r.set_input_tensor(0, &input).unwrap();
    r.infer().unwrap();
    s.assert_matches_cpu(std::slice::from_ref(&x), &[out.host_bytes().unwrap().to_vec()]);
    // CPU_VA: where the NPU imports user memory, in place (else refused with the reason).
    if imports_user_memory(&s.npu) {
        let sysmem0 = (counter("npu.imports.sysmem"), counter("npu.graph_args.sysmem"));
        let buf = PageAlignedBuffer::from_slice(&x).unwrap();
        let t = s.npu.import(buf, ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input).unwrap();
        r.set_input_tensor(0, &t).unwrap();
        r.infer().unwrap();
        assert_eq!(counter("npu.imports.sysmem"), sysmem0.0 + 1);
        assert_eq!(counter("npu.graph_args.sysmem"), sysmem0.1 + 1, "the graph read the buffer in place");
        s.assert_matches_cpu(&[x], &[out.host_bytes().unwrap().to_vec()]);
    }
}

#[test]
fn a_pool_of_nt_handle_memory_imports_each_buffer_once() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let g = gpu();
    let (keep, memories): (Vec<L0Allocation>, Vec<NtHandleMemory>) = (0..2).map(|_| g.exported(4096, None)).unzip();
    let pool = NpuPool::from_buffers(&s.npu, memories).unwrap();
    let imports0 = counter("npu.imports.nt_handle");
    let x = s.m.sample_input(0);
    let input = s.npu.l0_host_tensor(ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input).unwrap();
    input.clone().host_bytes_mut().unwrap().copy_from_slice(&x);
    let mut r = s.request();
    r.set_input_tensor(0, &input).unwrap();
    for _ in 0..10 {
        let out = pool.output_for(&r, 0).unwrap();
        r.set_output_tensor(0, &out).unwrap();
        r.infer().unwrap();
    }
    assert_eq!(counter("npu.imports.nt_handle"), imports0 + 1, "one buffer imported once, handed back every time");
    let outputs: Vec<Vec<u8>> = keep.iter().map(read).filter(|v| v.iter().any(|&b| b != 0)).collect();
    assert_eq!(outputs.len(), 1, "one buffer was used");
    s.assert_matches_cpu(&[x], &outputs);
}

#[test]
fn dpcpps_windows_level_zero_adapter_shares_nt_handles_with_the_npu() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    // Unified Runtime from the Windows wheels, on the virtual GPU (it opens ze_loader.dll by name).
    let bin = native_finder::provisioned_prefix().join("Library").join("bin");
    let ur = ur::Ur::load(&bin).unwrap();
    let gpus = ur.gpus().unwrap();
    let (_, l0_gpu) = l0_device(DeviceType::Gpu);
    let want = l0_gpu.properties().unwrap().name;
    let &(dev, ref name) = gpus.first().expect("Unified Runtime's Level Zero adapter lists the virtual GPU");
    assert_eq!(name, &want);
    let (mut ctx, mut queue) = (std::ptr::null_mut(), std::ptr::null_mut());
    let null = std::ptr::null_mut();
    // SAFETY: ur_api.h's contracts; every handle is released below.
    unsafe {
        ur::check((ur.urContextCreate)(1, &dev, std::ptr::null(), &mut ctx), "urContextCreate").unwrap();
        ur::check((ur.urQueueCreate)(ctx, dev, std::ptr::null(), &mut queue), "urQueueCreate").unwrap();
    }
    let x = s.m.sample_input(0);
    let copy = |dst: *mut std::ffi::c_void, src: *const std::ffi::c_void| {
        // SAFETY: both sides are 4096 bytes the test owns; a blocking copy.
        let r = unsafe { (ur.urEnqueueUSMMemcpy)(queue, true, dst, src, 4096, 0, std::ptr::null(), null) };
        ur::check(r, "urEnqueueUSMMemcpy").unwrap();
    };

    // SYCL's export (what export_device_mem_handle<win32_nt_handle> runs): exportable device memory
    // and its NT handle, which the NPU imports in place.
    let mut mem = std::ptr::null_mut();
    let mut handle: RawHandle = std::ptr::null_mut();
    // SAFETY: as above; the out-parameter is a HANDLE.
    unsafe {
        let r =
            (ur.urMemoryExportAllocExportableMemoryExp)(ctx, dev, 4096, 4096, ur::EXTERNAL_MEM_TYPE_WIN32_NT, &mut mem);
        ur::check(r, "urMemoryExportAllocExportableMemoryExp").unwrap();
        let r = (ur.urMemoryExportExportMemoryHandleExp)(
            ctx,
            dev,
            ur::EXTERNAL_MEM_TYPE_WIN32_NT,
            mem,
            std::ptr::addr_of_mut!(handle).cast(),
        );
        ur::check(r, "urMemoryExportExportMemoryHandleExp").unwrap();
    }
    assert!(!handle.is_null(), "Unified Runtime wrote the exported NT handle into the caller's out-parameter");
    copy(mem, x.as_ptr().cast());
    // The handle is the driver's (closed by zeMemFree): the NPU gets a duplicate.
    // SAFETY: the driver's open handle, valid while `mem` lives; only duplicated.
    let dup = unsafe { BorrowedHandle::borrow_raw(handle) }.try_clone_to_owned().unwrap();
    let (imports0, args0) = (counter("npu.imports.nt_handle"), counter("npu.graph_args.nt_handle"));
    let t = s
        .npu
        .import(NtHandleMemory::new(dup, 4096), ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input)
        .unwrap();
    let out = s.npu.l0_host_tensor(ElementType::F32, s.m.outputs[0].shape.clone(), TensorType::Output).unwrap();
    let mut r = s.request();
    r.set_input_tensor(0, &t).unwrap();
    r.set_output_tensor(0, &out).unwrap();
    r.infer().unwrap();
    assert_eq!(counter("npu.imports.nt_handle"), imports0 + 1);
    assert_eq!(counter("npu.graph_args.nt_handle"), args0 + 1, "the graph read SYCL's pages in place");
    s.assert_matches_cpu(std::slice::from_ref(&x), &[out.host_bytes().unwrap().to_vec()]);
    drop((r, t));

    // SYCL's import (import_external_memory + map_external_linear_memory) of the bridge's NT handle.
    let g = gpu();
    let (_l0_mem, nt) = g.exported(4096, Some(&x));
    let imports0 = counter("gpu.imports.nt_handle");
    let (ext, mapped) = ur.import_nt_handle(ctx, dev, nt.handle().as_raw_handle(), 4096).unwrap();
    assert_eq!(counter("gpu.imports.nt_handle"), imports0 + 1);
    let mut back = vec![0u8; 4096];
    copy(back.as_mut_ptr().cast(), mapped);
    assert_eq!(back, x, "SYCL reads the bridge's pages through the imported handle");
    assert!(is_open(nt.handle().as_raw_handle()), "Unified Runtime never closes an imported handle");

    // SAFETY: each handle released once, in reverse order of creation.
    unsafe {
        ur::check((ur.urBindlessImagesFreeMappedLinearMemoryExp)(ctx, dev, mapped), "free mapped").unwrap();
        ur::check((ur.urBindlessImagesReleaseExternalMemoryExp)(ctx, dev, ext), "release external").unwrap();
        ur::check((ur.urMemoryExportFreeExportableMemoryExp)(ctx, dev, mem), "free exportable").unwrap();
        ur::check((ur.urQueueRelease)(queue), "urQueueRelease").unwrap();
        ur::check((ur.urContextRelease)(ctx), "urContextRelease").unwrap();
    }
}

#[test]
fn injected_driver_failures_on_windows_are_typed_errors_and_lose_nothing() {
    let _s = serial();
    let s = NpuAndCpu::new(core(), models::fully_connected());
    let g = gpu();
    let vp = common::npu::vp();
    let (gpu_live, npu_live) = (counter("gpu.live_allocations"), counter("npu.live_allocations"));
    const OUT_OF_DEVICE_MEMORY: u32 = 0x7000_0003;
    // The GPU's allocation fails: the driver's error, nothing allocated.
    vp.inject_fault("zeMemAllocDevice", 1, OUT_OF_DEVICE_MEMORY).unwrap();
    let e = g.ctx.alloc_device_exportable(g.device, 4096, 4096).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LevelZero { .. }), "{e:#}");
    // The NPU's import of a good handle fails (whichever call the plugin imports with): a typed
    // error, and the handle is closed once.
    let (_mem, nt) = g.exported(4096, None);
    let raw = nt.handle().as_raw_handle();
    for f in ["zeMemAllocDevice", "zeMemAllocHost"] {
        vp.inject_fault(f, 1, OUT_OF_DEVICE_MEMORY).unwrap();
    }
    let e = s.npu.import(nt, ElementType::F32, s.m.inputs[0].shape.clone(), TensorType::Input).unwrap_err();
    vp.clear_faults();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "the plugin's import failed: {e:#}");
    assert!(!is_open(raw), "the handle of the failed import was closed");
    assert_eq!((counter("gpu.live_allocations") - 1, counter("npu.live_allocations")), (gpu_live, npu_live));
}

#[test]
fn the_virtual_gpu_answers_export_queries_as_compute_runtimes_wddm_code() {
    use npu_sycl_bridge::raw::level_zero::sys;
    use npu_sycl_bridge::raw::AsRaw;
    let _s = serial();
    let g = gpu();
    let mem = g.ctx.alloc_device_exportable(g.device, 4096, 4096).unwrap();
    let api = sys::loader::api().unwrap();
    let query = |first: *mut std::ffi::c_void| {
        let mut props = sys::ze_memory_allocation_properties_t {
            stype: sys::ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
            pNext: first,
            ..Default::default()
        };
        // SAFETY: a live context and allocation; the chain is the caller's structure, alive for the call.
        unsafe { api.zeMemGetAllocProperties(g.ctx.as_raw(), mem.as_ptr(), &mut props, std::ptr::null_mut()) }
    };
    let mut export = sys::ze_external_memory_export_win32_handle_t {
        stype: sys::ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_WIN32,
        pNext: std::ptr::null(),
        flags: sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32,
        handle: std::ptr::null_mut(),
    };
    assert_eq!(query(std::ptr::addr_of_mut!(export).cast()), sys::ZE_RESULT_SUCCESS);
    let first = export.handle;
    assert!(!first.is_null());
    assert_eq!(query(std::ptr::addr_of_mut!(export).cast()), sys::ZE_RESULT_SUCCESS);
    assert_eq!(export.handle, first, "the same driver-owned handle on every query");
    // `handleAllocationExtensions`: exactly OPAQUE_WIN32, and no other structure first.
    export.flags = sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_D3D12_HEAP;
    assert_eq!(query(std::ptr::addr_of_mut!(export).cast()), sys::ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION);
    let mut fd = sys::ze_external_memory_export_fd_t {
        stype: sys::ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_FD,
        pNext: std::ptr::null(),
        flags: sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF,
        fd: -1,
    };
    assert_eq!(query(std::ptr::addr_of_mut!(fd).cast()), sys::ZE_RESULT_ERROR_INVALID_ENUMERATION);
}
