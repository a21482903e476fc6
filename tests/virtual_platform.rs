//! The virtual Level Zero platform (`crates/virtual-l0`) through its C ABI, loaded with
//! `testkit::virtual_platform::activate()`: export surface, loader surface, driver and
//! device enumeration, the per-driver allocation registries, dma-buf export/import, sysmem import,
//! cross-driver handles, command execution, counters and fault injection.
//!
//! Tests that depend on process-wide state (zeInit visibility, `VL0_FAULTS`, what is loaded) run
//! in a child process (this binary re-executed with `--exact`); the others share one process and
//! take [`serial`] so that counter deltas are exact.
use std::ffi::{c_char, c_void, CString};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use level_zero_sys::*;
use npu_sycl_bridge::memory::PageAlignedBuffer;
use testkit::virtual_platform::{self, VirtualPlatform};

const CHILD_ENV: &str = "VL0_TEST_CHILD";

/// The 135 names `virtual-l0-platform.md` section 3 requires (5 loader + 47 getters + 50 called + 33 present).
const REQUIRED: &str = "
zeLoaderInit zelLoaderGetVersionsInternal zeLoaderGetTracingHandle zelLoaderTranslateHandleInternal zelLoaderGetVersions
zeGetGlobalProcAddrTable zeGetDriverProcAddrTable zeGetDeviceProcAddrTable zeGetContextProcAddrTable zeGetCommandQueueProcAddrTable
zeGetCommandListProcAddrTable zeGetEventProcAddrTable zeGetEventPoolProcAddrTable zeGetFenceProcAddrTable zeGetImageProcAddrTable
zeGetKernelProcAddrTable zeGetMemProcAddrTable zeGetModuleProcAddrTable zeGetModuleBuildLogProcAddrTable zeGetPhysicalMemProcAddrTable
zeGetSamplerProcAddrTable zeGetVirtualMemProcAddrTable
zetGetDeviceProcAddrTable zetGetContextProcAddrTable zetGetCommandListProcAddrTable zetGetKernelProcAddrTable zetGetModuleProcAddrTable
zetGetDebugProcAddrTable zetGetMetricProcAddrTable zetGetMetricGroupProcAddrTable zetGetMetricQueryProcAddrTable
zetGetMetricQueryPoolProcAddrTable zetGetMetricStreamerProcAddrTable zetGetTracerExpProcAddrTable
zesGetDeviceProcAddrTable zesGetDriverProcAddrTable zesGetDiagnosticsProcAddrTable zesGetEngineProcAddrTable zesGetFabricPortProcAddrTable
zesGetFanProcAddrTable zesGetFirmwareProcAddrTable zesGetFrequencyProcAddrTable zesGetLedProcAddrTable zesGetMemoryProcAddrTable
zesGetPerformanceFactorProcAddrTable zesGetPowerProcAddrTable zesGetPsuProcAddrTable zesGetRasProcAddrTable zesGetSchedulerProcAddrTable
zesGetStandbyProcAddrTable zesGetTemperatureProcAddrTable zelGetTracerApiProcAddrTable
zeInit zeCommandListAppendMemoryCopy zeCommandListAppendMemoryFill zeCommandListCreateImmediate zeCommandListHostSynchronize
zeCommandListReset zeCommandQueueSynchronize zeDeviceGetImageProperties zeDeviceGetMemoryAccessProperties zeDeviceGetModuleProperties
zeDeviceGetRootDevice zeDeviceGetSubDevices zeEventCreate zeEventDestroy zeEventHostReset zeEventHostSynchronize zeEventPoolCreate
zeEventPoolDestroy zeFenceQueryStatus
zeCommandListClose zeCommandListCreate zeCommandListDestroy zeCommandQueueCreate zeCommandQueueDestroy zeCommandQueueExecuteCommandLists
zeContextCreate zeContextDestroy zeDeviceGetCommandQueueGroupProperties zeDriverGetApiVersion zeDriverGetExtensionFunctionAddress
zeDriverGetProperties zeFenceCreate zeFenceDestroy zeFenceReset zeMemFree
zeContextMakeMemoryResident zeDriverGet zeMemAllocDevice zeMemAllocShared
zeDeviceGet zeDeviceGetProperties zeDriverGetExtensionProperties zeMemAllocHost zeMemGetAllocProperties
zeMemFreeExt
zeDeviceGetExternalMemoryProperties zeDevicePciGetPropertiesExt zeFenceHostSynchronize zeCommandListGetNextCommandIdExp
zeCommandListUpdateMutableCommandsExp
zeCommandListAppendBarrier zeCommandListAppendEventReset zeCommandListAppendImageCopy zeCommandListAppendImageCopyFromMemory
zeCommandListAppendImageCopyToMemory zeCommandListAppendLaunchKernel zeCommandListAppendSignalEvent zeCommandListAppendWaitOnEvents
zeCommandListAppendWriteGlobalTimestamp zeDeviceGetComputeProperties zeDeviceGetMemoryProperties zeDeviceGetStatus zeEventHostSignal
zeEventQueryKernelTimestamp zeEventQueryStatus zeImageCreate zeImageDestroy zeKernelCreate zeKernelDestroy zeKernelSetArgumentValue
zeKernelSetGroupSize zeMemGetAddressRange zeModuleBuildLogDestroy zeModuleBuildLogGetString zeModuleCreate zeModuleDestroy
zeModuleGetKernelNames zeModuleGetNativeBinary
zeDeviceGetCacheProperties
zeMemGetIpcHandle zeMemOpenIpcHandle zeMemCloseIpcHandle zeContextEvictMemory
";

/// Section 3.5's recommended optional names that the platform exports (the three
/// `zeDeviceGet/ValidateRuntimeRequirements*` are weak for the NPU plugin and deliberately absent).
const OPTIONAL: &str = "zeInitDrivers zelGetLoaderVersion zelSetDriverTeardown zesInit zesDriverGet zeMemPutIpcHandle
zeDriverGetDefaultContext zelLoaderTranslateHandle";

/// The control ABI (DEVELOPERS.md).
const CONTROL: &str = "vl0_counter vl0_fault_inject vl0_fault_clear";

static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises the in-process tests (counters are process-wide).
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn vp() -> &'static VirtualPlatform {
    virtual_platform::activate().expect("activate the virtual platform")
}

fn api() -> &'static ZeApi {
    vp();
    level_zero_sys::loader::api().expect("the loader resolves to the virtual platform")
}

fn zeroed<T>() -> T {
    // SAFETY: only used for the plain-C Level Zero structures (integers, pointers, arrays).
    unsafe { std::mem::zeroed() }
}

fn dlsym(name: &str) -> *mut c_void {
    vp();
    let so = CString::new("libze_loader.so.1").unwrap();
    let n = CString::new(name).unwrap();
    // SAFETY: RTLD_NOLOAD returns the already-loaded platform; dlsym only looks a name up.
    unsafe {
        let h = libc::dlopen(so.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
        assert!(!h.is_null(), "libze_loader.so.1 is loaded");
        libc::dlsym(h, n.as_ptr())
    }
}

/// Runs `inner::<name>` in a child process with `env`, asserting success and that it ran; returns
/// the child's stderr.
fn run_child(name: &str, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", &format!("inner::{name}"), "--nocapture", "--test-threads=1"]).env(CHILD_ENV, name);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("VL0-CHILD-DONE {name}")),
        "child {name} failed ({:?})\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(r: ze_result_t, what: &str) {
    assert_eq!(r, ZE_RESULT_SUCCESS, "{what} returned {r:#x}");
}

fn init_desc(flags: u32) -> ze_init_driver_type_desc_t {
    let mut desc: ze_init_driver_type_desc_t = zeroed();
    desc.stype = ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC;
    desc.flags = flags;
    desc
}

/// Both drivers via zeInitDrivers (does not touch zeInit visibility): (gpu, npu).
fn drivers() -> (ze_driver_handle_t, ze_driver_handle_t) {
    let a = api();
    let get = |flags| {
        let mut desc = init_desc(flags);
        let mut n = 1u32;
        let mut h: ze_driver_handle_t = std::ptr::null_mut();
        // SAFETY: valid descriptor, count and one-element array.
        ok(unsafe { a.zeInitDrivers(&mut n, &mut h, &mut desc) }, "zeInitDrivers");
        assert_eq!(n, 1);
        h
    };
    (get(ZE_INIT_DRIVER_TYPE_FLAG_GPU), get(ZE_INIT_DRIVER_TYPE_FLAG_NPU))
}

fn device_of(d: ze_driver_handle_t) -> ze_device_handle_t {
    let mut n = 1u32;
    let mut dev: ze_device_handle_t = std::ptr::null_mut();
    // SAFETY: count and one-element array.
    ok(unsafe { api().zeDeviceGet(d, &mut n, &mut dev) }, "zeDeviceGet");
    dev
}

fn context(d: ze_driver_handle_t) -> ze_context_handle_t {
    let mut desc: ze_context_desc_t = zeroed();
    desc.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
    let mut c: ze_context_handle_t = std::ptr::null_mut();
    // SAFETY: valid descriptor and out-parameter.
    ok(unsafe { api().zeContextCreate(d, &desc, &mut c) }, "zeContextCreate");
    c
}

fn free(ctx: ze_context_handle_t, p: *mut c_void) {
    // SAFETY: an allocation of `ctx`, no longer used.
    ok(unsafe { api().zeMemFree(ctx, p) }, "zeMemFree");
}

fn destroy_contexts(cs: &[ze_context_handle_t]) {
    for &c in cs {
        // SAFETY: a context of this test, no longer used.
        ok(unsafe { api().zeContextDestroy(c) }, "zeContextDestroy");
    }
}

fn host_desc(p_next: *const c_void) -> ze_host_mem_alloc_desc_t {
    let mut d: ze_host_mem_alloc_desc_t = zeroed();
    d.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
    d.pNext = p_next;
    d
}

fn dev_desc(p_next: *const c_void) -> ze_device_mem_alloc_desc_t {
    let mut d: ze_device_mem_alloc_desc_t = zeroed();
    d.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
    d.pNext = p_next;
    d
}

/// `zeMemGetAllocProperties` with the result; the out-parameters start as sentinels (type
/// FORCE_UINT32, id and device all ones) so a test can tell what was written.
fn try_alloc_props(
    ctx: ze_context_handle_t,
    p: *const c_void,
) -> (ze_result_t, ze_memory_allocation_properties_t, ze_device_handle_t) {
    let mut props: ze_memory_allocation_properties_t = zeroed();
    props.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    (props.type_, props.id) = (ZE_MEMORY_TYPE_FORCE_UINT32, u64::MAX);
    let mut dev = usize::MAX as ze_device_handle_t;
    // SAFETY: valid out-parameters.
    let r = unsafe { api().zeMemGetAllocProperties(ctx, p, &mut props, &mut dev) };
    (r, props, dev)
}

fn alloc_props(ctx: ze_context_handle_t, p: *const c_void) -> (ze_memory_allocation_properties_t, ze_device_handle_t) {
    let (r, props, dev) = try_alloc_props(ctx, p);
    ok(r, "zeMemGetAllocProperties");
    (props, dev)
}

/// linux-npu-driver `memory.cpp` `Context::getMemAllocProperties`: a pointer the NPU context does not
/// know is `ZE_RESULT_ERROR_NOT_AVAILABLE` and nothing is written.
fn assert_npu_unknown(nctx: ze_context_handle_t, p: *const c_void) {
    let (r, props, dev) = try_alloc_props(nctx, p);
    assert_eq!(r, ZE_RESULT_ERROR_NOT_AVAILABLE, "{p:?}");
    assert_eq!((props.type_, props.id, dev as usize), (ZE_MEMORY_TYPE_FORCE_UINT32, u64::MAX, usize::MAX), "written");
}

/// `zeDeviceGetProperties` (stype DEVICE_PROPERTIES) with `p_next` as its chain.
fn device_props(dev: ze_device_handle_t, p_next: *mut c_void) -> (ze_result_t, ze_device_properties_t) {
    let mut p: ze_device_properties_t = zeroed();
    p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    p.pNext = p_next;
    // SAFETY: valid handle, out-parameter and chain.
    (unsafe { api().zeDeviceGetProperties(dev, &mut p) }, p)
}

/// The device's `ze_device_ip_version_ext_t::ipVersion`.
fn ip_version(dev: ze_device_handle_t) -> u32 {
    let mut ip: ze_device_ip_version_ext_t = zeroed();
    ip.stype = ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT;
    ok(device_props(dev, (&mut ip as *mut ze_device_ip_version_ext_t).cast()).0, "zeDeviceGetProperties(ip)");
    ip.ipVersion
}

/// The driver's extension names.
fn extension_names(d: ze_driver_handle_t) -> Vec<String> {
    let a = api();
    let mut n = 0u32;
    // SAFETY: valid handle; count query, then an array of n entries.
    unsafe {
        ok(a.zeDriverGetExtensionProperties(d, &mut n, std::ptr::null_mut()), "extensions");
        let mut v: Vec<ze_driver_extension_properties_t> = (0..n).map(|_| zeroed()).collect();
        ok(a.zeDriverGetExtensionProperties(d, &mut n, v.as_mut_ptr()), "extensions");
        v.iter().map(|e| std::ffi::CStr::from_ptr(e.name.as_ptr()).to_string_lossy().into_owned()).collect()
    }
}

/// `zeMemAllocHost` of `size` bytes, page-aligned, with `p_next` as the descriptor's chain: the
/// result and the pointer.
fn try_alloc_host(ctx: ze_context_handle_t, p_next: *const c_void, size: usize) -> (ze_result_t, *mut c_void) {
    let hd = host_desc(p_next);
    let mut out: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid descriptor and out-parameter; what the chain points to outlives the call.
    (unsafe { api().zeMemAllocHost(ctx, &hd, size, 4096, &mut out) }, out)
}

fn alloc_host(ctx: ze_context_handle_t, p_next: *const c_void, size: usize) -> *mut c_void {
    let (r, p) = try_alloc_host(ctx, p_next, size);
    ok(r, "zeMemAllocHost");
    p
}

/// A sysmem (userptr) import of `[p, p + len)` into `ctx`: the result and the pointer.
fn sysmem_import(ctx: ze_context_handle_t, p: *const c_void, len: usize) -> (ze_result_t, *mut c_void) {
    let d = Sysmem { stype: 0x0002_0037, p_next: std::ptr::null(), p_system_memory: p, size: len as u64 };
    try_alloc_host(ctx, (&d as *const Sysmem).cast(), len)
}

fn export_desc() -> ze_external_memory_export_desc_t {
    let mut e: ze_external_memory_export_desc_t = zeroed();
    e.stype = ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC;
    e.flags = ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF;
    e
}

fn import_desc(fd: i32, flags: u32) -> ze_external_memory_import_fd_t {
    let mut imp: ze_external_memory_import_fd_t = zeroed();
    imp.stype = ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMPORT_FD;
    imp.flags = flags;
    imp.fd = fd;
    imp
}

/// The dma-buf export fd of `p` (an exportable allocation of `ctx`'s driver).
fn export_fd(ctx: ze_context_handle_t, p: *const c_void) -> i32 {
    let (r, fd) = try_export_fd(ctx, p);
    ok(r, "export query");
    assert!(fd >= 0);
    fd
}

/// A dma-buf export query of `p`: the result and the fd.
fn try_export_fd(ctx: ze_context_handle_t, p: *const c_void) -> (ze_result_t, i32) {
    let mut x: ze_external_memory_export_fd_t = zeroed();
    x.stype = ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_FD;
    x.flags = ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF;
    x.fd = -1;
    let mut props: ze_memory_allocation_properties_t = zeroed();
    props.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    props.pNext = (&mut x as *mut ze_external_memory_export_fd_t).cast();
    // SAFETY: valid out-parameters.
    let r = unsafe { api().zeMemGetAllocProperties(ctx, p, &mut props, std::ptr::null_mut()) };
    (r, x.fd)
}

/// What `fd` refers to (device, inode), or None once it is closed. Comparing identities, not
/// `F_GETFD`, keeps the check right when another test thread reuses the number.
fn fd_identity(fd: i32) -> Option<(u64, u64)> {
    let mut st: libc::stat = zeroed();
    // SAFETY: a valid out-parameter.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// Imports a new NPU dma-buf export into the GPU and answers whether the import closed the fd
/// handed to it (compute-runtime context.cpp allocDeviceMem: `closeExternalHandle` after a
/// successful import, from 26.14.37833.4 on). Closes the fd itself where the driver did not.
fn gpu_import_closes_fd() -> bool {
    let a = api();
    let (gpu, npu) = drivers();
    let (gctx, nctx, gdev) = (context(gpu), context(npu), device_of(gpu));
    let e = export_desc();
    let n = alloc_host(nctx, (&e as *const ze_external_memory_export_desc_t).cast(), 4096);
    // SAFETY: valid handles, descriptors and out-parameters; the NPU export fd is ours.
    unsafe {
        let fd = export_fd(nctx, n);
        let id = fd_identity(fd);
        let imp = import_desc(fd, ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF);
        let dd = dev_desc((&imp as *const ze_external_memory_import_fd_t).cast());
        let mut g: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocDevice(gctx, &dd, 4096, 4096, gdev, &mut g), "GPU dma-buf import");
        let closed = fd_identity(fd) != id;
        if !closed {
            libc::close(fd);
        }
        free(gctx, g);
        free(nctx, n);
        destroy_contexts(&[gctx, nctx]);
        closed
    }
}

#[test]
fn exports_every_required_name() {
    let mut missing = Vec::new();
    for n in REQUIRED.split_whitespace().chain(OPTIONAL.split_whitespace()).chain(CONTROL.split_whitespace()) {
        if dlsym(n).is_null() {
            missing.push(n);
        }
    }
    assert_eq!(REQUIRED.split_whitespace().count(), 135);
    assert!(missing.is_empty(), "not exported: {missing:?}");
    // The loader 1.32.0 exports it and answers UNSUPPORTED_FEATURE when the driver's DDI table has
    // no entry (level-zero `ze_libapi.cpp`), as neither driver here has: the NPU plugin binds it
    // weakly and must see that answer.
    let f = dlsym("zeDeviceGetRuntimeRequirements");
    assert!(!f.is_null(), "the 1.32.0 loader exports zeDeviceGetRuntimeRequirements");
    type GetRequirements = unsafe extern "C" fn(*mut c_void, *const c_void, *mut usize, *mut c_char) -> ze_result_t;
    // SAFETY: the exported symbol has this signature; the stub reads none of its arguments.
    let get: GetRequirements = unsafe { std::mem::transmute(f) };
    let mut size = 0usize;
    // SAFETY: as above; valid out-pointer.
    let r = unsafe { get(std::ptr::null_mut(), std::ptr::null(), &mut size, std::ptr::null_mut()) };
    assert_eq!(r, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
}

#[test]
fn loader_surface() {
    let _s = serial();
    let a = api();
    // SAFETY: plain calls with valid out-parameters, per the loader ABI.
    unsafe {
        let init: unsafe extern "C" fn() -> ze_result_t = std::mem::transmute(dlsym("zeLoaderInit"));
        ok(init(), "zeLoaderInit");
        ok(init(), "zeLoaderInit (again)");
        let mut n = 0usize;
        ok(a.zelLoaderGetVersions(&mut n, std::ptr::null_mut()), "zelLoaderGetVersions");
        assert_eq!(n, 1);
        let mut v: zel_component_version_t = zeroed();
        ok(a.zelLoaderGetVersions(&mut n, &mut v), "zelLoaderGetVersions");
        let name = std::ffi::CStr::from_ptr(v.component_name.as_ptr()).to_str().unwrap();
        assert_eq!(name, "loader");
        assert_eq!(
            (v.component_lib_version.major, v.component_lib_version.minor, v.component_lib_version.patch),
            (1, 32, 0)
        );
        assert_eq!(v.spec_version, ze_make_version(1, 17));
        let get_ver: unsafe extern "C" fn(*mut zel_component_version_t) -> ze_result_t =
            std::mem::transmute(dlsym("zelGetLoaderVersion"));
        let mut w: zel_component_version_t = zeroed();
        ok(get_ver(&mut w), "zelGetLoaderVersion");
        assert!((w.component_lib_version.major, w.component_lib_version.minor) >= (1, 18));
        let tracing: unsafe extern "C" fn() -> *mut c_void = std::mem::transmute(dlsym("zeLoaderGetTracingHandle"));
        assert!(tracing().is_null());
        let mut out: *mut c_void = std::ptr::null_mut();
        let x = 0x1234usize as *mut c_void;
        ok(a.zelLoaderTranslateHandle(ZEL_HANDLE_DRIVER, x, &mut out), "zelLoaderTranslateHandle");
        assert_eq!(out, x);
        // A getter writes nothing (a table of 4 slots stays as it was).
        let mut table = [0x55usize; 4];
        let getter: unsafe extern "C" fn(ze_api_version_t, *mut c_void) -> ze_result_t =
            std::mem::transmute(dlsym("zeGetDriverProcAddrTable"));
        ok(getter(ZE_API_VERSION_1_0, table.as_mut_ptr().cast()), "zeGetDriverProcAddrTable");
        assert_eq!(table, [0x55; 4]);
        let default_ctx: unsafe extern "C" fn(ze_driver_handle_t) -> ze_context_handle_t =
            std::mem::transmute(dlsym("zeDriverGetDefaultContext"));
        // compute-runtime: the driver's one default context; linux-npu-driver 1.32.1: none (NULL).
        let (gpu, npu) = drivers();
        assert!(!default_ctx(gpu).is_null());
        assert_eq!(default_ctx(gpu), default_ctx(gpu), "one per driver");
        assert!(default_ctx(npu).is_null());
        assert!(default_ctx(std::ptr::null_mut()).is_null());
    }
}

#[test]
fn init_visibility_accumulates_per_flags() {
    run_child("init_visibility", &[]);
}

#[test]
fn environment_faults_fire() {
    run_child("env_faults", &[("VL0_FAULTS", "zeContextGetStatus:2:0x78000004, garbage")]);
}

#[test]
fn refuses_when_another_loader_is_already_loaded() {
    // Build a stand-in "real" loader (SONAME libze_loader.so.1, no vl0_counter) with the C compiler.
    let dir = std::env::temp_dir().join(format!("vl0-foreign-loader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("foreign.c");
    std::fs::write(&src, "int zeInit(int flags) { (void)flags; return 0; }\n").unwrap();
    let lib = dir.join("libze_loader.so.1");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wl,-soname,libze_loader.so.1", "-o"])
        .arg(&lib)
        .arg(&src)
        .status();
    match built {
        Ok(s) if s.success() => {}
        other => {
            eprintln!("skipped: no C compiler to build a foreign loader ({other:?})");
            return;
        }
    }
    run_child("foreign_loader", &[("VL0_TEST_FOREIGN_LOADER", lib.to_str().unwrap())]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn drivers_and_devices() {
    let _s = serial();
    let a = api();
    let (gpu, npu) = drivers();
    assert_ne!(gpu, npu);
    // SAFETY: valid handles and out-parameters throughout.
    unsafe {
        let mut desc = init_desc(u32::MAX);
        let mut n = 0u32;
        ok(a.zeInitDrivers(&mut n, std::ptr::null_mut(), &mut desc), "zeInitDrivers(query)");
        assert_eq!(n, 2);
        desc.flags = 0;
        assert_eq!(a.zeInitDrivers(&mut n, std::ptr::null_mut(), &mut desc), ZE_RESULT_ERROR_UNINITIALIZED);

        let mut dp: ze_driver_properties_t = zeroed();
        dp.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
        ok(a.zeDriverGetProperties(npu, &mut dp), "zeDriverGetProperties(npu)");
        assert_eq!(
            dp.uuid.id,
            [0x01, 0x7d, 0xe9, 0x31, 0x6b, 0x4d, 0x4f, 0xd4, 0xaa, 0x9b, 0x5b, 0xed, 0x77, 0xfc, 0x8e, 0x89]
        );
        let npu_version = dp.driverVersion;
        ok(a.zeDriverGetProperties(gpu, &mut dp), "zeDriverGetProperties(gpu)");
        assert_ne!(dp.driverVersion, npu_version);
        let mut v = 0;
        ok(a.zeDriverGetApiVersion(npu, &mut v), "zeDriverGetApiVersion");
        assert_eq!(v >> 16, 1);

        let (gdev, ndev) = (device_of(gpu), device_of(npu));
        let mut ip: ze_device_ip_version_ext_t = zeroed();
        ip.stype = ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT;
        // An unknown entry first: it must be skipped.
        let mut unknown = [0u64; 4];
        unknown[0] = 0x7fff_0001;
        unknown[1] = &mut ip as *mut _ as u64;
        let mut p: ze_device_properties_t = zeroed();
        p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
        p.pNext = unknown.as_mut_ptr().cast();
        // The GPU skips entries it does not know (compute-runtime device.cpp Device::getProperties).
        ok(a.zeDeviceGetProperties(gdev, &mut p), "zeDeviceGetProperties(gpu)");
        // DEVICE_PROPERTIES_1_2: the timer in cycles per second (compute-runtime device.cpp
        // Device::getProperties, outProfilingTimerClock).
        assert_eq!((p.type_, p.vendorId, p.timerResolution), (ZE_DEVICE_TYPE_GPU, 0x8086, 19_200_000));
        // The profile's iGPU IP version (e.g. Lunar Lake: LNL_B0 20.4.4, compute-runtime aot
        // platforms.h, so UR picks its v2 adapter: isBMGorNewer, ipVersion >= 0x05004000).
        let (_, npu_id, _, gpu_ip, userptr, npu_timer_ns) = this_profile();
        assert_eq!(ip.ipVersion, gpu_ip);
        p = zeroed();
        p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
        ok(a.zeDeviceGetProperties(ndev, &mut p), "zeDeviceGetProperties(npu)");
        // DEVICE_PROPERTIES: nanoseconds, 1e9 / the NPU's timer frequency (linux-npu-driver device.cpp
        // Device::getProperties).
        assert_eq!((p.type_, p.deviceId, p.timerResolution), (ZE_DEVICE_TYPE_VPU, npu_id, npu_timer_ns));
        assert_ne!(p.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED, 0);

        let mut ext: ze_device_external_memory_properties_t = zeroed();
        ext.stype = ZE_STRUCTURE_TYPE_DEVICE_EXTERNAL_MEMORY_PROPERTIES;
        ok(a.zeDeviceGetExternalMemoryProperties(ndev, &mut ext), "zeDeviceGetExternalMemoryProperties");
        // DMA_BUF, and STANDARD_ALLOCATION where the NPU imports user memory (device.cpp
        // getGetExternalMemoryProperties).
        assert_eq!(ext.memoryAllocationImportTypes & 0x102, if userptr { 0x102 } else { 0x2 });

        // Exact groups per profile: `gpu_queues_copy_engine_default_context_and_usm_per_profile`.
        let mut n = 0u32;
        ok(a.zeDeviceGetCommandQueueGroupProperties(gdev, &mut n, std::ptr::null_mut()), "queue groups");
        assert!(n >= 2, "compute and copy groups");
        let mut g: ze_command_queue_group_properties_t = zeroed();
        g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
        n = 1;
        ok(a.zeDeviceGetCommandQueueGroupProperties(gdev, &mut n, &mut g), "queue groups");
        assert_eq!(n, 1, "as many as asked for");
        assert_eq!(g.flags & 3, 3, "ordinal 0 computes and copies");

        let mut subs = 7u32;
        ok(a.zeDeviceGetSubDevices(gdev, &mut subs, std::ptr::null_mut()), "zeDeviceGetSubDevices");
        assert_eq!(subs, 0);
        let mut root: ze_device_handle_t = gdev;
        ok(a.zeDeviceGetRootDevice(gdev, &mut root), "zeDeviceGetRootDevice");
        assert!(root.is_null());
        let mut mp: ze_device_memory_access_properties_t = zeroed();
        ok(a.zeDeviceGetMemoryAccessProperties(gdev, &mut mp), "memory access");
        // compute-runtime product_helper.inl: RW|ATOMIC, no concurrent access, on every iGPU here.
        assert_eq!(
            (mp.hostAllocCapabilities, mp.deviceAllocCapabilities, mp.sharedSingleDeviceAllocCapabilities),
            (0x3, 0x3, 0x3)
        );
        assert_eq!(mp.sharedCrossDeviceAllocCapabilities, 0);

        let mut n = 0u32;
        ok(a.zeDriverGetExtensionProperties(gpu, &mut n, std::ptr::null_mut()), "gpu extensions");
        let mut f: *mut c_void = std::ptr::null_mut();
        let name = CString::new("zexDriverImportExternalPointer").unwrap();
        assert_eq!(a.zeDriverGetExtensionFunctionAddress(gpu, name.as_ptr(), &mut f), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        assert!(f.is_null());
    }
}

#[test]
fn allocation_registry() {
    let _s = serial();
    let a = api();
    let (gpu, npu) = drivers();
    let (gctx, nctx) = (context(gpu), context(npu));
    let gdev = device_of(gpu);
    let live0 = vp().counter("gpu.live_allocations");
    // SAFETY: valid handles, descriptors and out-parameters; memory used within its size.
    unsafe {
        let hd = host_desc(std::ptr::null());
        let dd = dev_desc(std::ptr::null());
        let mut ids = std::collections::HashSet::new();
        let mut ptrs = Vec::new();
        for (kind, want) in [(0, ZE_MEMORY_TYPE_HOST), (1, ZE_MEMORY_TYPE_DEVICE), (2, ZE_MEMORY_TYPE_SHARED)] {
            let mut p: *mut c_void = std::ptr::null_mut();
            let r = match kind {
                0 => a.zeMemAllocHost(gctx, &hd, 10_000, 64, &mut p),
                1 => a.zeMemAllocDevice(gctx, &dd, 10_000, 256, gdev, &mut p),
                _ => a.zeMemAllocShared(gctx, &dd, &hd, 10_000, 0, gdev, &mut p),
            };
            ok(r, "zeMemAlloc*");
            assert_eq!(p as usize % 64, 0);
            std::ptr::write_bytes(p as *mut u8, 0xab, 10_000);
            let (props, dev) = alloc_props(gctx, p);
            assert_eq!(props.type_, want);
            assert_eq!(props.pageSize, 4096);
            assert_ne!(props.id, 0);
            assert!(ids.insert(props.id), "ids are unique");
            if kind != 0 {
                assert_eq!(dev, gdev);
            }
            // Interior pointers resolve to the same allocation.
            let (inner, _) = alloc_props(gctx, (p as *const u8).add(9_999).cast());
            assert_eq!((inner.id, inner.type_), (props.id, want));
            let mut base: *mut c_void = std::ptr::null_mut();
            let mut size = 0usize;
            ok(
                a.zeMemGetAddressRange(gctx, (p as *const u8).add(5).cast(), &mut base, &mut size),
                "zeMemGetAddressRange",
            );
            assert_eq!((base, size), (p, 10_000));
            // The NPU does not know it.
            assert_npu_unknown(nctx, p);
            ptrs.push(p);
        }
        assert_eq!(vp().counter("gpu.live_allocations"), live0 + 3);
        // A pointer the GPU does not know is SUCCESS with type UNKNOWN and nothing else written
        // (compute-runtime context.cpp ContextImp::getMemAllocProperties).
        let x = 5u64;
        let (stack, _) = alloc_props(gctx, (&x as *const u64).cast());
        assert_eq!((stack.type_, stack.id), (ZE_MEMORY_TYPE_UNKNOWN, u64::MAX));
        // zeMemFree of a foreign pointer fails; with the owner it works once.
        assert_eq!(a.zeMemFree(nctx, ptrs[0]), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        let mut fd: ze_memory_free_ext_desc_t = zeroed();
        fd.stype = ZE_STRUCTURE_TYPE_MEMORY_FREE_EXT_DESC;
        fd.freePolicy = ZE_DRIVER_MEMORY_FREE_POLICY_EXT_FLAG_BLOCKING_FREE;
        ok(a.zeMemFreeExt(gctx, &fd, ptrs[2]), "zeMemFreeExt");
        for p in &ptrs[..2] {
            ok(a.zeMemFree(gctx, *p), "zeMemFree");
        }
        assert_eq!(a.zeMemFree(gctx, ptrs[0]), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        assert_eq!(alloc_props(gctx, ptrs[1]).0.type_, ZE_MEMORY_TYPE_UNKNOWN);
        assert_eq!(vp().counter("gpu.live_allocations"), live0, "no leaks after free");
        // Zero size and bad alignment.
        let mut p: *mut c_void = std::ptr::null_mut();
        assert_eq!(a.zeMemAllocHost(gctx, &hd, 0, 0, &mut p), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        // The NPU refuses an alignment that is not a power of two; compute-runtime checks none.
        assert_eq!(a.zeMemAllocHost(nctx, &hd, 16, 3, &mut p), ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        ok(a.zeMemAllocHost(gctx, &hd, 16, 3, &mut p), "GPU, alignment 3");
        assert_eq!(p as usize % 4, 0);
        free(gctx, p);
        destroy_contexts(&[gctx, nctx]);
    }
}

#[test]
fn dma_buf_export_and_import_share_pages() {
    let _s = serial();
    let a = api();
    let (gpu, npu) = drivers();
    let (gctx, nctx) = (context(gpu), context(npu));
    let gdev = device_of(gpu);
    let exports0 = vp().counter("gpu.exports.dma_buf");
    let imports0 = vp().counter("npu.imports.dma_buf");
    let nlive0 = vp().counter("npu.live_allocations");
    const N: usize = 3 * 4096 + 100;
    // SAFETY: valid handles and descriptors; mappings used within their sizes; fds owned as documented.
    unsafe {
        let export = export_desc();
        let dd = dev_desc((&export as *const ze_external_memory_export_desc_t).cast());
        let mut g: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocDevice(gctx, &dd, N, 4096, gdev, &mut g), "exportable zeMemAllocDevice");
        let gb = std::slice::from_raw_parts_mut(g as *mut u8, N);
        for (i, b) in gb.iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        // Export: the driver's one fd for the allocation, the same number on every query
        // (compute-runtime DrmAllocation::peekInternalHandle caches it); its own mmap sees the bytes.
        let fd = export_fd(gctx, g);
        assert_eq!(export_fd(gctx, g), fd, "one cached fd per allocation");
        let fd_id = fd_identity(fd);
        assert_eq!(vp().counter("gpu.exports.dma_buf"), exports0 + 2);
        let m = libc::mmap(std::ptr::null_mut(), N, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0);
        assert_ne!(m, libc::MAP_FAILED);
        let mb = std::slice::from_raw_parts_mut(m as *mut u8, N);
        assert_eq!(mb[..], gb[..]);

        // Import into the NPU: the whole buffer, a second mapping of the same pages.
        let imp = import_desc(fd, ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF);
        let hd = host_desc((&imp as *const ze_external_memory_import_fd_t).cast());
        let mut n: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocHost(nctx, &hd, N, 4096, &mut n), "import zeMemAllocHost(npu)");
        assert_ne!(n, g);
        assert_eq!(vp().counter("npu.imports.dma_buf"), imports0 + 1);
        let nb = std::slice::from_raw_parts_mut(n as *mut u8, N);
        assert_eq!(nb[..], gb[..]);
        gb[17] = 0xee;
        assert_eq!((nb[17], mb[17]), (0xee, 0xee), "one set of pages");
        nb[N - 1] = 0x11;
        assert_eq!(gb[N - 1], 0x11);
        let (np, _) = alloc_props(nctx, n);
        assert_eq!(np.type_, ZE_MEMORY_TYPE_HOST);
        assert_eq!(vp().counter("npu.live_allocations"), nlive0 + 1);

        // Freeing the import unmaps only the NPU's mapping; the fd stays open and valid.
        ok(a.zeMemFree(nctx, n), "zeMemFree(import)");
        assert_eq!(vp().counter("npu.live_allocations"), nlive0);
        assert_eq!(fd_identity(fd), fd_id, "the NPU import leaves the fd open");
        assert_eq!(mb[17], 0xee);
        // zeMemFree closes the export fd (compute-runtime Context::freeMem); the pages live on while
        // our own mapping exists.
        ok(a.zeMemFree(gctx, g), "zeMemFree(export)");
        assert_ne!(fd_identity(fd), fd_id, "zeMemFree closed the export fd");
        assert_eq!(mb[N - 1], 0x11);
        libc::munmap(m, N);

        // compute-runtime exports device memory allocated without the export descriptor too
        // (`Context::getMemAllocProperties` checks none), and no shared USM.
        let plain = dev_desc(std::ptr::null());
        let mut p: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocDevice(gctx, &plain, 64, 0, gdev, &mut p), "plain zeMemAllocDevice");
        let (r, pfd) = try_export_fd(gctx, p);
        assert_eq!(r, ZE_RESULT_SUCCESS, "plain device memory exports");
        assert!(pfd >= 0);
        ok(a.zeMemFree(gctx, p), "zeMemFree");
        let e = export_desc();
        let sd = dev_desc((&e as *const ze_external_memory_export_desc_t).cast());
        let sh = host_desc(std::ptr::null());
        let mut s: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocShared(gctx, &sd, &sh, 64, 0, gdev, &mut s), "exportable zeMemAllocShared");
        assert_eq!(try_export_fd(gctx, s).0, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, "shared USM never exports");
        ok(a.zeMemFree(gctx, s), "zeMemFree");
        // An unknown pointer: SUCCESS, type UNKNOWN, no fd and phDevice untouched.
        let mut probe = [0u8; 64];
        let (r, ufd) = try_export_fd(gctx, probe.as_mut_ptr().cast());
        assert_eq!((r, ufd), (ZE_RESULT_SUCCESS, -1), "unknown pointer: no fd");

        // The NPU exports only buffer objects allocated exportable, and its imports.
        let hd = host_desc(std::ptr::null());
        let mut np: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocHost(nctx, &hd, 4096, 0, &mut np), "plain NPU zeMemAllocHost");
        assert_eq!(try_export_fd(nctx, np), (ZE_RESULT_ERROR_NOT_AVAILABLE, -1), "plain NPU memory: fd untouched");
        let ed = host_desc((&e as *const ze_external_memory_export_desc_t).cast());
        let mut xp: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocHost(nctx, &ed, 4096, 0, &mut xp), "exportable NPU zeMemAllocHost");
        let (r, xfd) = try_export_fd(nctx, xp);
        assert_eq!(r, ZE_RESULT_SUCCESS);
        let (r, xfd2) = try_export_fd(nctx, xp);
        assert!(r == ZE_RESULT_SUCCESS && xfd2 != xfd, "a new fd per NPU export");
        let imp = import_desc(xfd, ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF);
        let ih = host_desc((&imp as *const ze_external_memory_import_fd_t).cast());
        let nctx2 = context(npu);
        let mut ip: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocHost(nctx2, &ih, 4096, 0, &mut ip), "import into another NPU context");
        let (r, rfd) = try_export_fd(nctx2, ip);
        assert!(r == ZE_RESULT_SUCCESS && rfd >= 0, "an NPU import exports again");
        for f in [pfd, xfd, xfd2, rfd] {
            if f != pfd {
                libc::close(f);
            }
        }
        for (c, q) in [(nctx, np), (nctx, xp), (nctx2, ip)] {
            ok(a.zeMemFree(c, q), "zeMemFree");
        }
        destroy_contexts(&[gctx, nctx, nctx2]);
    }
}

/// `ze_external_memmap_sysmem_ext_desc_t` (spec 1.13).
#[repr(C)]
struct Sysmem {
    stype: u32,
    p_next: *const c_void,
    p_system_memory: *const c_void,
    size: u64,
}

#[test]
fn sysmem_import_is_zero_copy() {
    let _s = serial();
    let a = api();
    let (_, npu) = drivers();
    let ctx = context(npu);
    if !imports_user_memory(ctx) {
        // SAFETY: a context of ours, destroyed once.
        ok(unsafe { a.zeContextDestroy(ctx) }, "zeContextDestroy");
        return;
    }
    let sysmem0 = vp().counter("npu.imports.sysmem");
    let layout = std::alloc::Layout::from_size_align(8192, 4096).unwrap();
    // SAFETY: the caller memory outlives the import; valid descriptors and out-parameters.
    unsafe {
        let mem = std::alloc::alloc_zeroed(layout);
        let (r, p) = sysmem_import(ctx, mem.cast(), 8192);
        ok(r, "sysmem import");
        assert_eq!(p, mem.cast());
        assert_eq!(vp().counter("npu.imports.sysmem"), sysmem0 + 1);
        let (props, _) = alloc_props(ctx, mem.add(8191).cast());
        assert_eq!(props.type_, ZE_MEMORY_TYPE_HOST);
        ok(a.zeMemFree(ctx, p), "zeMemFree(sysmem)");
        *mem.add(100) = 7; // still the caller's
        assert_npu_unknown(ctx, mem.cast());
        // A pointer or size off page boundaries is taken: the driver rounds them to pages itself
        // (linux-npu-driver vpu_device_context.cpp createBufferObjectFromUserPtr) and returns the
        // caller's pointer (memory.cpp Context::importUserPtr).
        for (off, len) in [(64, 4096), (0, 4000)] {
            let (r, p) = sysmem_import(ctx, mem.add(off).cast(), len);
            ok(r, "unaligned sysmem import");
            assert_eq!(p, mem.add(off).cast());
            ok(a.zeMemFree(ctx, p), "zeMemFree(sysmem)");
        }
        std::alloc::dealloc(mem, layout);
        ok(a.zeContextDestroy(ctx), "zeContextDestroy");
    }
}

#[test]
fn cross_driver_handles_are_invalid_arguments() {
    let _s = serial();
    let a = api();
    let (gpu, npu) = drivers();
    let (gdev, nctx) = (device_of(gpu), context(npu));
    // SAFETY: valid handles (of the wrong driver) and out-parameters.
    unsafe {
        let dd = dev_desc(std::ptr::null());
        let hd = host_desc(std::ptr::null());
        let mut p: *mut c_void = std::ptr::null_mut();
        assert_eq!(a.zeMemAllocDevice(nctx, &dd, 64, 0, gdev, &mut p), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        assert_eq!(a.zeMemAllocShared(nctx, &dd, &hd, 64, 0, gdev, &mut p), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        assert!(p.is_null());
        assert_eq!(
            a.zeContextMakeMemoryResident(nctx, gdev, std::ptr::null_mut(), 0),
            ZE_RESULT_ERROR_INVALID_ARGUMENT
        );
        let mut ld: ze_command_list_desc_t = zeroed();
        ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
        let mut l: ze_command_list_handle_t = std::ptr::null_mut();
        assert_eq!(a.zeCommandListCreate(nctx, gdev, &ld, &mut l), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        let mut qd: ze_command_queue_desc_t = zeroed();
        qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
        assert_eq!(a.zeCommandListCreateImmediate(nctx, gdev, &qd, &mut l), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        // A handle of the wrong kind, and NULL.
        let mut props: ze_device_properties_t = zeroed();
        assert_eq!(a.zeDeviceGetProperties(nctx.cast(), &mut props), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        assert_eq!(a.zeDeviceGetProperties(std::ptr::null_mut(), &mut props), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        ok(a.zeContextDestroy(nctx), "zeContextDestroy");
    }
}

#[test]
fn queues_lists_fences_events_and_copy_counters() {
    let _s = serial();
    let a = api();
    let (gpu, _) = drivers();
    let (ctx, dev) = (context(gpu), device_of(gpu));
    let copied0 = vp().counter("gpu.bytes_copied");
    // SAFETY: valid handles, descriptors and buffers throughout.
    unsafe {
        let mut qd: ze_command_queue_desc_t = zeroed();
        qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
        qd.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
        let mut q: ze_command_queue_handle_t = std::ptr::null_mut();
        ok(a.zeCommandQueueCreate(ctx, dev, &qd, &mut q), "zeCommandQueueCreate");
        let mut ld: ze_command_list_desc_t = zeroed();
        ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
        let mut l: ze_command_list_handle_t = std::ptr::null_mut();
        ok(a.zeCommandListCreate(ctx, dev, &ld, &mut l), "zeCommandListCreate");
        let mut fdsc: ze_fence_desc_t = zeroed();
        fdsc.stype = ZE_STRUCTURE_TYPE_FENCE_DESC;
        let mut f: ze_fence_handle_t = std::ptr::null_mut();
        ok(a.zeFenceCreate(q, &fdsc, &mut f), "zeFenceCreate");
        let mut pd: ze_event_pool_desc_t = zeroed();
        pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
        pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
        pd.count = 4;
        let mut pool: ze_event_pool_handle_t = std::ptr::null_mut();
        ok(a.zeEventPoolCreate(ctx, &pd, 1, &mut { dev }, &mut pool), "zeEventPoolCreate");
        let mut ed: ze_event_desc_t = zeroed();
        ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
        let mut e: ze_event_handle_t = std::ptr::null_mut();
        ok(a.zeEventCreate(pool, &ed, &mut e), "zeEventCreate");

        let src: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let mut dst = vec![0u8; 1000];
        let mut filled = vec![0u8; 10];
        let mut id = 99u64;
        let mut idd: ze_mutable_command_id_exp_desc_t = zeroed();
        idd.stype = ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_ID_EXP_DESC;
        ok(a.zeCommandListGetNextCommandIdExp(l, &idd, &mut id), "zeCommandListGetNextCommandIdExp");
        assert_eq!(id, 0);
        ok(
            a.zeCommandListAppendMemoryCopy(
                l,
                dst.as_mut_ptr().cast(),
                src.as_ptr().cast(),
                1000,
                e,
                0,
                std::ptr::null_mut(),
            ),
            "copy",
        );
        let pat = [1u8, 2, 3, 4];
        ok(
            a.zeCommandListAppendMemoryFill(
                l,
                filled.as_mut_ptr().cast(),
                pat.as_ptr().cast(),
                4,
                10,
                std::ptr::null_mut(),
                1,
                &mut { e },
            ),
            "fill",
        );
        ok(a.zeCommandListAppendBarrier(l, std::ptr::null_mut(), 0, std::ptr::null_mut()), "barrier");
        ok(a.zeCommandListGetNextCommandIdExp(l, &idd, &mut id), "zeCommandListGetNextCommandIdExp");
        assert_eq!(id, 3);
        ok(a.zeCommandListClose(l), "close");
        assert_eq!(dst[999], 0, "nothing runs before execution");
        assert_eq!(a.zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
        assert_eq!(a.zeEventQueryStatus(e), ZE_RESULT_NOT_READY);
        assert_eq!(a.zeEventHostSynchronize(e, 1000), ZE_RESULT_NOT_READY);
        ok(a.zeCommandQueueExecuteCommandLists(q, 1, &mut { l }, f), "execute");
        ok(a.zeFenceHostSynchronize(f, u64::MAX), "fence sync");
        ok(a.zeEventQueryStatus(e), "event signalled");
        assert_eq!(dst, src);
        assert_eq!(filled, [1, 2, 3, 4, 1, 2, 3, 4, 1, 2]);
        assert_eq!(vp().counter("gpu.bytes_copied"), copied0 + 1010);
        let mut ts: ze_kernel_timestamp_result_t = zeroed();
        ok(a.zeEventQueryKernelTimestamp(e, &mut ts), "timestamps");
        assert!(ts.global.kernelEnd >= ts.global.kernelStart);
        ok(a.zeFenceReset(f), "fence reset");
        ok(a.zeEventHostReset(e), "event reset");
        assert_eq!(a.zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
        // Re-execution of the closed list.
        dst.fill(0);
        ok(a.zeCommandQueueExecuteCommandLists(q, 1, &mut { l }, f), "execute again");
        ok(a.zeFenceHostSynchronize(f, u64::MAX), "fence sync");
        assert_eq!(dst, src);

        // Immediate list: runs at append time; host signal from the host.
        let mut il: ze_command_list_handle_t = std::ptr::null_mut();
        ok(a.zeCommandListCreateImmediate(ctx, dev, &qd, &mut il), "immediate");
        ok(a.zeEventHostReset(e), "event reset");
        ok(a.zeEventHostSignal(e), "host signal");
        dst.fill(0);
        ok(
            a.zeCommandListAppendMemoryCopy(
                il,
                dst.as_mut_ptr().cast(),
                src.as_ptr().cast(),
                1000,
                std::ptr::null_mut(),
                1,
                &mut { e },
            ),
            "copy",
        );
        assert_eq!(dst, src);
        ok(a.zeCommandListHostSynchronize(il, u64::MAX), "host sync");
        ok(a.zeCommandListAppendEventReset(il, e), "append reset");
        assert_eq!(a.zeEventQueryStatus(e), ZE_RESULT_NOT_READY);
        let mut t = 0u64;
        ok(
            a.zeCommandListAppendWriteGlobalTimestamp(il, &mut t, std::ptr::null_mut(), 0, std::ptr::null_mut()),
            "timestamp",
        );
        assert_ne!(t, 0);
        assert_eq!(
            a.zeCommandQueueExecuteCommandLists(q, 1, &mut { il }, std::ptr::null_mut()),
            ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE
        );

        // 2D region copy: a 4×3 block from (2, 1) of a 10-wide source to (0, 0) of a 4-wide destination.
        let grid: Vec<u8> = (0..50u8).collect();
        let mut block = [0u8; 12];
        let mut sr: ze_copy_region_t = zeroed();
        (sr.originX, sr.originY, sr.width, sr.height) = (2, 1, 4, 3);
        let mut dr: ze_copy_region_t = zeroed();
        (dr.width, dr.height) = (4, 3);
        ok(
            a.zeCommandListAppendMemoryCopyRegion(
                il,
                block.as_mut_ptr().cast(),
                &dr,
                4,
                0,
                grid.as_ptr().cast(),
                &sr,
                10,
                0,
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
            ),
            "copy region",
        );
        assert_eq!(block, [12, 13, 14, 15, 22, 23, 24, 25, 32, 33, 34, 35]);

        // Kernels are not supported.
        let mut m: ze_module_handle_t = std::ptr::null_mut();
        let md: ze_module_desc_t = zeroed();
        assert_eq!(a.zeModuleCreate(ctx, dev, &md, &mut m, std::ptr::null_mut()), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);

        for r in [
            a.zeCommandListDestroy(il),
            a.zeCommandListDestroy(l),
            a.zeEventDestroy(e),
            a.zeEventPoolDestroy(pool),
            a.zeFenceDestroy(f),
            a.zeCommandQueueDestroy(q),
            a.zeContextDestroy(ctx),
        ] {
            ok(r, "destroy");
        }
    }
}

#[test]
fn fault_injection_and_counters_api() {
    let _s = serial();
    let a = api();
    let vp = vp();
    let (gpu, _) = drivers();
    let ctx = context(gpu);
    // SAFETY: valid handle.
    unsafe {
        vp.inject_fault("zeContextGetStatus", 2, ZE_RESULT_ERROR_DEVICE_LOST).unwrap();
        ok(a.zeContextGetStatus(ctx), "first call");
        assert_eq!(a.zeContextGetStatus(ctx), ZE_RESULT_ERROR_DEVICE_LOST);
        ok(a.zeContextGetStatus(ctx), "fires once");
        vp.inject_fault("zeContextGetStatus", 1, ZE_RESULT_ERROR_UNKNOWN).unwrap();
        vp.clear_faults();
        ok(a.zeContextGetStatus(ctx), "cleared");
        ok(a.zeContextDestroy(ctx), "zeContextDestroy");
    }
    for n in [
        "gpu.bytes_copied",
        "npu.bytes_copied",
        "gpu.live_allocations",
        "npu.live_allocations",
        "gpu.exports.dma_buf",
        "gpu.imports.dma_buf",
        "npu.imports.dma_buf",
        "npu.imports.sysmem",
        "npu.graphs",
        "npu.inferences",
    ] {
        vp.try_counter(n).unwrap_or_else(|e| panic!("counter {n}: {e}"));
    }
    assert!(vp.try_counter("no.such.counter").is_err());
    assert!(vp.path().exists());
    assert!(std::ptr::eq(vp, virtual_platform::activate().unwrap()), "activate is idempotent");
}

#[test]
fn concurrent_threads_and_cross_thread_event_waits() {
    let _s = serial();
    let a = api();
    let (gpu, _) = drivers();
    let (ctx, dev) = (context(gpu), device_of(gpu));
    let live0 = vp().counter("gpu.live_allocations");
    let (ctx_u, dev_u) = (ctx as usize, dev as usize);
    // SAFETY (whole test): valid handles, descriptors and buffers; each thread uses its own list.
    let workers: Vec<_> = (0..6)
        .map(|t| {
            // SAFETY: as above (whole test).
            std::thread::spawn(move || unsafe {
                let (ctx, dev) = (ctx_u as ze_context_handle_t, dev_u as ze_device_handle_t);
                let mut qd: ze_command_queue_desc_t = zeroed();
                qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
                let mut l: ze_command_list_handle_t = std::ptr::null_mut();
                ok(a.zeCommandListCreateImmediate(ctx, dev, &qd, &mut l), "immediate");
                let hd = host_desc(std::ptr::null());
                for i in 0..200usize {
                    let mut p: *mut c_void = std::ptr::null_mut();
                    ok(a.zeMemAllocHost(ctx, &hd, 4096 + i, 0, &mut p), "alloc");
                    let src = vec![(t * 31 + i) as u8; 4096 + i];
                    ok(
                        a.zeCommandListAppendMemoryCopy(
                            l,
                            p,
                            src.as_ptr().cast(),
                            src.len(),
                            std::ptr::null_mut(),
                            0,
                            std::ptr::null_mut(),
                        ),
                        "copy",
                    );
                    assert_eq!(std::slice::from_raw_parts(p as *const u8, src.len()), &src[..]);
                    assert_eq!(alloc_props(ctx, (p as *const u8).add(i).cast()).0.type_, ZE_MEMORY_TYPE_HOST);
                    ok(a.zeMemFree(ctx, p), "free");
                }
                ok(a.zeCommandListDestroy(l), "destroy");
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    assert_eq!(vp().counter("gpu.live_allocations"), live0);

    // A list that waits on an event blocks its executing thread until the host signals it.
    // SAFETY: valid handles and descriptors.
    unsafe {
        let mut pd: ze_event_pool_desc_t = zeroed();
        pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
        pd.count = 1;
        let mut pool: ze_event_pool_handle_t = std::ptr::null_mut();
        ok(a.zeEventPoolCreate(ctx, &pd, 0, std::ptr::null_mut(), &mut pool), "pool");
        let mut ed: ze_event_desc_t = zeroed();
        ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
        let mut e: ze_event_handle_t = std::ptr::null_mut();
        ok(a.zeEventCreate(pool, &ed, &mut e), "event");
        let mut qd: ze_command_queue_desc_t = zeroed();
        qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
        let mut q: ze_command_queue_handle_t = std::ptr::null_mut();
        ok(a.zeCommandQueueCreate(ctx, dev, &qd, &mut q), "queue");
        let mut ld: ze_command_list_desc_t = zeroed();
        ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
        let mut l: ze_command_list_handle_t = std::ptr::null_mut();
        ok(a.zeCommandListCreate(ctx, dev, &ld, &mut l), "list");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut flag = Box::new([0u8; 1]);
        let one = [1u8];
        ok(a.zeCommandListAppendWaitOnEvents(l, 1, &mut { e }), "wait");
        ok(
            a.zeCommandListAppendMemoryCopy(
                l,
                flag.as_mut_ptr().cast(),
                one.as_ptr().cast(),
                1,
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
            ),
            "copy",
        );
        ok(a.zeCommandListClose(l), "close");
        let (q_u, l_u, done_r) = (q as usize, l as usize, done.clone());
        let runner = std::thread::spawn(move || {
            let mut l = l_u as ze_command_list_handle_t;
            ok(
                a.zeCommandQueueExecuteCommandLists(q_u as ze_command_queue_handle_t, 1, &mut l, std::ptr::null_mut()),
                "execute",
            );
            done_r.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        // As on hardware, submission does not block on the event; the work waits, and so does
        // zeCommandQueueSynchronize on any thread.
        runner.join().unwrap();
        assert!(done.load(std::sync::atomic::Ordering::SeqCst), "execute returned");
        assert_eq!(a.zeCommandQueueSynchronize(q, 1_000_000), ZE_RESULT_NOT_READY, "the list waits for the event");
        assert_eq!(std::ptr::read_volatile(&flag[0]), 0);
        ok(a.zeEventHostSignal(e), "host signal");
        ok(a.zeCommandQueueSynchronize(q, u64::MAX), "queue sync");
        assert_eq!(std::ptr::read_volatile(&flag[0]), 1);
        for r in [
            a.zeCommandListDestroy(l),
            a.zeCommandQueueDestroy(q),
            a.zeEventDestroy(e),
            a.zeEventPoolDestroy(pool),
            a.zeContextDestroy(ctx),
        ] {
            ok(r, "destroy");
        }
    }
}

/// Per profile (`crates/virtual-l0/src/profile.rs`): NPU device id (linux-npu-driver
/// `vpu_hw_*.hpp`), iGPU device id and IP version (compute-runtime `devices_base.inl`, AOT
/// `platforms.h`), whether the NPU imports user memory (NPU 40xx+, `vpu_device.cpp`), and the NPU's
/// `timerResolution` in ns (1e9 / 38.4 MHz on 37xx, / 19.2 MHz on 40xx+: `vpu_hw_*.cpp`).
const PROFILES: [(&str, u32, u32, u32, bool, u64); 4] = [
    ("lnl", 0x643E, 0x64A0, 0x0501_0004, true, 52),
    ("mtl", 0x7D1D, 0x7D55, 0x0311_C004, false, 26),
    ("arl", 0xAD1D, 0x7D51, 0x0312_8004, false, 26),
    ("ptl", 0xB03E, 0xB080, 0x0780_0004, true, 52),
];

/// The entry of [`PROFILES`] this process runs under (`VL0_PROFILE`, default `lnl`), with user-memory
/// import off under `VL0_NPU_USERPTR=0`.
fn this_profile() -> (&'static str, u32, u32, u32, bool, u64) {
    let name = std::env::var("VL0_PROFILE").unwrap_or_else(|_| "lnl".into());
    let mut p = *PROFILES.iter().find(|p| p.0 == name).unwrap_or_else(|| panic!("profile {name}"));
    p.4 &= std::env::var("VL0_NPU_USERPTR").as_deref() != Ok("0");
    p
}

/// Whether this profile's NPU imports user memory; where it does not, checks that answer instead
/// (a sysmem import is UNSUPPORTED_FEATURE: linux-npu-driver `memory.cpp` `Context::importUserPtr`)
/// and says so, so a test about sysmem import that stops there does not pass silently.
fn imports_user_memory(ctx: ze_context_handle_t) -> bool {
    if this_profile().4 {
        return true;
    }
    let m = PageAlignedBuffer::new(4096).unwrap();
    assert_eq!(sysmem_import(ctx, m.as_ptr(), 4096).0, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    eprintln!("profile {}: the NPU imports no user memory; checked that sysmem import is refused", this_profile().0);
    false
}

fn total_ram() -> u64 {
    // SAFETY: plain-old-data out-parameter, written by sysinfo.
    let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: si is a valid out-parameter.
    assert_eq!(unsafe { libc::sysinfo(&mut si) }, 0);
    si.totalram as u64 * si.mem_unit as u64
}

/// Each laptop profile, and Lunar Lake on a kernel without the userptr ioctl, in its own process
/// (the profile is read once per process).
#[test]
fn profiles_present_the_real_laptops() {
    for (name, ..) in PROFILES {
        run_child("profile", &[("VL0_PROFILE", name)]);
    }
    run_child("profile", &[("VL0_PROFILE", "lnl"), ("VL0_NPU_USERPTR", "0")]);
    // The kernel's scheduling mode, not the generation, decides the command-queue extension; the
    // GPU's answers follow its compute-runtime build.
    run_child("profile", &[("VL0_PROFILE", "mtl"), ("VL0_NPU_HWS", "0")]);
    run_child("profile", &[("VL0_PROFILE", "lnl"), ("VL0_NPU_HWS", "0"), ("VL0_GPU_DRIVER_BUILD", "38646")]);
}

/// The iGPU's queue groups (a copy-only blitter group among them, with its fill-pattern limit),
/// copies and fills on the copy queue, the default context and the USM access capabilities, as
/// compute-runtime reports them on each laptop (`crates/virtual-l0/src/api/device.rs`
/// `queue_groups`, `driver.rs` `gpu_default_context`), each profile in its own process; plus
/// Lunar Lake with shared-system USM (`VL0_GPU_SHARED_SYSTEM=1`).
#[test]
fn gpu_queues_copy_engine_default_context_and_usm_per_profile() {
    for (name, ..) in PROFILES {
        run_child("gpu_queues", &[("VL0_PROFILE", name)]);
    }
    run_child("gpu_queues", &[("VL0_PROFILE", "lnl"), ("VL0_GPU_SHARED_SYSTEM", "1")]);
}

#[test]
fn an_unknown_profile_fails_every_init() {
    let stderr = run_child("bad_profile", &[("VL0_PROFILE", "kbl")]);
    assert!(stderr.contains("VL0_PROFILE=\"kbl\""), "stderr names the bad value: {stderr}");
}

/// linux-npu-driver `memory.cpp`: the NPU answers only for buffers of the queried context
/// (`findBufferObject`), with NOT_AVAILABLE otherwise, never writes `phDevice`, and reports the
/// buffer's NPU virtual address from `zeMemGetAddressRange` (`bo->getVPUAddr()`). The GPU answers
/// SUCCESS with UNKNOWN for memory it does not know (compute-runtime `ContextImp::getMemAllocProperties`).
#[test]
fn npu_memory_queries_are_per_context_in_npu_addresses() {
    let _s = serial();
    let a = api();
    let (gpu, npu) = drivers();
    let (gctx, nctx, other) = (context(gpu), context(npu), context(npu));
    let heap = Box::new([0u8; 64]);
    assert_npu_unknown(nctx, heap.as_ptr().cast());
    assert_eq!(alloc_props(gctx, heap.as_ptr().cast()).0.type_, ZE_MEMORY_TYPE_UNKNOWN);
    // SAFETY: valid handles, descriptors and out-parameters.
    unsafe {
        let p = alloc_host(nctx, std::ptr::null(), 8192);
        let (r, props, dev) = try_alloc_props(nctx, p);
        ok(r, "zeMemGetAllocProperties(npu)");
        assert_eq!((props.type_, dev as usize), (ZE_MEMORY_TYPE_HOST, usize::MAX), "phDevice is never written");
        let (mut base, mut size) = (std::ptr::null_mut(), 0usize);
        ok(a.zeMemGetAddressRange(nctx, (p as *const u8).add(100).cast(), &mut base, &mut size), "address range");
        assert_ne!(base, p, "the NPU's own address, not the CPU pointer");
        assert_eq!(size, 8192);
        assert_npu_unknown(other, p);
        assert_eq!(a.zeMemGetAddressRange(other, p, &mut base, &mut size), ZE_RESULT_ERROR_NOT_AVAILABLE);
        free(nctx, p);
        destroy_contexts(&[gctx, nctx, other]);
    }
}

/// linux-npu-driver `device.cpp` `handleExtensionProperty`: the NPU takes the IP-version entry
/// (its platform type: 0 on silicon) and refuses any stype it does not know (the GPU skips them,
/// see `drivers_and_devices`).
#[test]
fn npu_device_properties_refuse_unknown_chain_entries() {
    let ndev = device_of(drivers().1);
    let mut unknown = [0u64; 4];
    unknown[0] = 0x7fff_0001;
    assert_eq!(device_props(ndev, unknown.as_mut_ptr().cast()).0, ZE_RESULT_ERROR_INVALID_ARGUMENT);
    assert_eq!(ip_version(ndev), 0);
}

/// The default profile's compute-runtime (26.14.37833) closes a dma-buf fd it imported; 26.09.37435
/// leaves it to the caller.
#[test]
fn gpu_import_closes_the_fd_from_build_37833() {
    {
        let _s = serial();
        assert!(gpu_import_closes_fd());
    }
    run_child("gpu_import_keeps_fd", &[("VL0_GPU_DRIVER_BUILD", "37435")]);
}

/// linux-npu-driver `api/ze_memory.cpp`: import flags exactly DMA_BUF, else INVALID_ENUMERATION;
/// `Context::importMemory`: a failed PRIME import (a memfd is no dma-buf) is OUT_OF_DEVICE_MEMORY.
#[test]
fn npu_dma_buf_import_takes_exact_flags_and_only_dma_bufs() {
    let nctx = context(drivers().1);
    // SAFETY: our own memfd; valid descriptors and out-parameters.
    unsafe {
        let m = libc::memfd_create(c"vl0-plain".as_ptr(), libc::MFD_CLOEXEC);
        assert_eq!(libc::ftruncate(m, 4096), 0);
        for (flags, want) in [
            (ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD, ZE_RESULT_ERROR_INVALID_ENUMERATION),
            (ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF, ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY),
        ] {
            let imp = import_desc(m, flags);
            let r = try_alloc_host(nctx, (&imp as *const ze_external_memory_import_fd_t).cast(), 4096).0;
            assert_eq!(r, want, "flags {flags:#x}");
        }
        libc::close(m);
        destroy_contexts(&[nctx]);
    }
}

/// The kernel pins userptr pages long-term (`ivpu_bo_create_from_userptr_ioctl`:
/// `pin_user_pages_fast(FOLL_LONGTERM)`), which refuses driver mappings: compute-runtime host USM is
/// a GEM-object mmap (`drm_memory_manager.cpp` `createAllocWithAlignment`), so importing it is
/// OUT_OF_DEVICE_MEMORY. linux-npu-driver `memory.cpp` `Context::importUserPtr` refuses a pointer
/// that already lies in a buffer of the context (INVALID_ARGUMENT).
#[test]
fn sysmem_import_pins_like_the_kernel() {
    let _s = serial();
    let (gpu, npu) = drivers();
    let (gctx, nctx) = (context(gpu), context(npu));
    if !imports_user_memory(nctx) {
        destroy_contexts(&[gctx, nctx]);
        return;
    }
    let usm = alloc_host(gctx, std::ptr::null(), 8192);
    assert_eq!(sysmem_import(nctx, usm, 8192).0, ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, "GPU host USM");
    free(gctx, usm);
    let m = PageAlignedBuffer::new(8192).unwrap();
    let (r, p) = sysmem_import(nctx, m.as_ptr(), 8192);
    ok(r, "sysmem import");
    assert_eq!(sysmem_import(nctx, m.as_ptr(), 8192).0, ZE_RESULT_ERROR_INVALID_ARGUMENT, "imported twice");
    free(nctx, p);
    destroy_contexts(&[gctx, nctx]);
}

/// Child-process bodies (return at once unless started by `run_child`).
/// compute-runtime's driver extensions that have entry points, with them: exported ones (the UR
/// adapters find them with `dlsym` on the loader, `ur_loader::LibLoader::getFunctionPtr`) and, after
/// `@`, those found through `zeDriverGetExtensionFunctionAddress` (compute-runtime
/// `extension_function_address.cpp`). From `driver_handle_helper.cpp` `extensionsSupported` and
/// `driver_handle.cpp` `getExtensionProperties`.
const GPU_EXTENSION_ENTRY_POINTS: &[(&str, &[&str])] = &[
    ("ZE_extension_event_query_kernel_timestamps", &["zeEventQueryKernelTimestampsExt"]),
    (
        "ZE_extension_external_semaphores",
        &[
            "zeDeviceImportExternalSemaphoreExt",
            "zeDeviceReleaseExternalSemaphoreExt",
            "zeCommandListAppendSignalExternalSemaphoreExt",
            "zeCommandListAppendWaitExternalSemaphoreExt",
        ],
    ),
    (
        "ZE_extension_image_copy",
        &["zeCommandListAppendImageCopyToMemoryExt", "zeCommandListAppendImageCopyFromMemoryExt"],
    ),
    ("ZE_extension_image_query_alloc_properties", &["zeImageGetAllocPropertiesExt"]),
    ("ZE_extension_image_view", &["zeImageViewCreateExt"]),
    ("ZE_extension_linkage_inspection", &["zeModuleInspectLinkageExt"]),
    ("ZE_extension_memory_free_policies", &["zeMemFreeExt"]),
    ("ZE_extension_pci_properties", &["zeDevicePciGetPropertiesExt"]),
    ("ZE_extension_rtas", &["zeRTASBuilderCreateExt"]),
    ("ZE_extension_cache_reservation", &["zeDeviceReserveCacheExt", "zeDeviceSetCacheAdviceExt"]),
    ("ZE_experimental_event_query_timestamps", &["zeEventQueryTimestampsExp"]),
    ("ZE_experimental_fabric", &["zeFabricVertexGetExp"]),
    ("ZE_extension_kernel_binary_exp", &["zeKernelGetBinaryExp"]),
    ("ZE_experimental_global_offset", &["zeKernelSetGlobalOffsetExp"]),
    ("ZE_experimental_image_memory_properties", &["zeImageGetMemoryPropertiesExp"]),
    ("ZE_experimental_immediate_command_list_append", &["zeCommandListImmediateAppendCommandListsExp"]),
    ("ZE_experimental_scheduling_hints", &["zeKernelSchedulingHintExp"]),
    (
        "ZE_experimental_mutable_command_list",
        &[
            "zeCommandListGetNextCommandIdExp",
            "zeCommandListUpdateMutableCommandsExp",
            "zeCommandListGetNextCommandIdWithKernelsExp",
            "zeCommandListUpdateMutableCommandKernelsExp",
            "zeCommandListUpdateMutableCommandSignalEventExp",
            "zeCommandListUpdateMutableCommandWaitEventsExp",
        ],
    ),
    ("ZE_experimental_rtas_builder", &["zeRTASBuilderCreateExp"]),
    ("ZE_experimental_bindless_image", &["@zeMemGetPitchFor2dImage", "@zeImageGetDeviceOffsetExp"]),
    ("ZEX_counter_based_event", &["@zexCounterBasedEventCreate2"]),
    ("ZEX_mem_ipc_handles", &["@zexMemGetIpcHandles", "@zexMemOpenIpcHandles"]),
    ("ZEX_driver_import_host_pointer", &["@zexDriverImportExternalPointer", "@zexDriverReleaseImportedPointer"]),
    ("ZEX_extension_memory_free_callback", &["@zexMemFreeRegisterCallbackExt"]),
    ("ZE_intel_get_driver_version_string", &["@zeIntelGetDriverVersionString"]),
    ("ZE_extension_command_visit", &["@zeCommandListVisitExt"]),
    ("ZE_experimental_record_replay_graph", &["@zeGraphCreateExp", "@zeCommandListBeginGraphCaptureExp"]),
    ("ZE_intel_experimental_kernel_get_program_binary", &["@zeIntelKernelGetBinaryExp"]),
    ("ZET_experimental_metrics_runtime_enable_disable", &["@zetDeviceEnableMetricsExp"]),
];

/// GPU extensions without entry points of their own (structures chained into other calls), each
/// checked by [`check_gpu_extensions`].
const GPU_STRUCTURE_EXTENSIONS: &[&str] = &[
    "ZE_extension_device_ip_version",
    "ZE_extension_eu_count",
    "ZE_extension_external_memmap_sysmem",
    "ZE_extension_float_atomics",
    "ZE_experimental_event_pool_counter_based",
    "ZE_experimental_relaxed_allocation_limits",
    "ZEX_intel_experimental_queue_copy_operations_offload_hint",
];

/// The entry point `name` as the UR adapters find it (`@name`: through the driver's
/// `zeDriverGetExtensionFunctionAddress`, else `dlsym`), NULL if missing.
fn resolve(driver: ze_driver_handle_t, name: &str) -> *mut c_void {
    match name.strip_prefix('@') {
        Some(n) => {
            let c = CString::new(n).unwrap();
            let mut f: *mut c_void = std::ptr::null_mut();
            // SAFETY: valid driver, name and out-parameter.
            let r = unsafe { api().zeDriverGetExtensionFunctionAddress(driver, c.as_ptr(), &mut f) };
            assert_eq!(r == ZE_RESULT_SUCCESS, !f.is_null(), "{n}: {r:#x} with {f:?}");
            f
        }
        None => dlsym(name),
    }
}

/// Whether `f` (a Level Zero entry point of this platform) is only a stub: called with every
/// argument 0, a real entry point answers a parameter error (NULL handle or pointer), a stub
/// `UNSUPPORTED_FEATURE`.
fn is_stub(f: *mut c_void) -> bool {
    // SAFETY: every Level Zero entry point takes integer-class arguments and returns ze_result_t;
    // under the x86-64 SysV ABI extra zero arguments are ignored, and the platform validates
    // handles and pointers before use.
    let f: unsafe extern "C" fn(usize, usize, usize, usize, usize, usize, usize, usize) -> ze_result_t =
        unsafe { std::mem::transmute(f) };
    // SAFETY: as above.
    unsafe { f(0, 0, 0, 0, 0, 0, 0, 0) == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE }
}

/// Every extension the GPU driver advertises is backed: its entry points resolve as the adapters
/// resolve them and are not stubs, its structures are filled or taken. An extension compute-runtime
/// reports whose entry points are stubs here is not advertised. Every NPU extension's table resolves.
fn check_gpu_extensions() {
    let a = api();
    let (gpu, npu) = drivers();
    let names = extension_names(gpu);
    for n in &names {
        assert!(
            GPU_STRUCTURE_EXTENSIONS.contains(&n.as_str()) || GPU_EXTENSION_ENTRY_POINTS.iter().any(|(e, _)| e == n),
            "{n} is advertised but this test does not know what backs it"
        );
    }
    for (ext, fns) in GPU_EXTENSION_ENTRY_POINTS {
        let backed = fns.iter().all(|f| {
            let p = resolve(gpu, f);
            !p.is_null() && !is_stub(p)
        });
        assert!(backed || !names.iter().any(|n| n == ext), "{ext} advertised, entry points missing ({fns:?})");
    }
    let has = |e: &str| names.iter().any(|n| n == e);
    let (ctx, dev) = (context(gpu), device_of(gpu));
    // SAFETY: valid handles, descriptors and out-parameters throughout.
    unsafe {
        if has("ZE_extension_device_ip_version") {
            assert_ne!(ip_version(dev), 0);
        }
        if has("ZE_extension_eu_count") {
            let mut eu: ze_eu_count_ext_t = zeroed();
            eu.stype = ZE_STRUCTURE_TYPE_EU_COUNT_EXT;
            let (r, p) = device_props(dev, (&mut eu as *mut ze_eu_count_ext_t).cast());
            ok(r, "eu count");
            assert_eq!(eu.numTotalEUs, p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice);
        }
        if has("ZE_extension_external_memmap_sysmem") {
            let m = PageAlignedBuffer::new(4096).unwrap();
            let (r, p) = sysmem_import(ctx, m.as_ptr(), 4096);
            ok(r, "GPU sysmem import");
            assert_eq!(p as *const c_void, m.as_ptr());
            free(ctx, p);
        }
        if has("ZE_extension_float_atomics") {
            let mut fa: ze_float_atomic_ext_properties_t = zeroed();
            fa.stype = ZE_STRUCTURE_TYPE_FLOAT_ATOMIC_EXT_PROPERTIES;
            let mut mp: ze_device_module_properties_t = zeroed();
            mp.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
            mp.pNext = (&mut fa as *mut ze_float_atomic_ext_properties_t).cast();
            ok(a.zeDeviceGetModuleProperties(dev, &mut mp), "module properties");
            assert_ne!(fa.fp32Flags, 0, "float atomics reported");
        }
        if has("ZE_experimental_event_pool_counter_based") {
            let mut cb: ze_event_pool_counter_based_exp_desc_t = zeroed();
            cb.stype = ZE_STRUCTURE_TYPE_COUNTER_BASED_EVENT_POOL_EXP_DESC;
            cb.flags = ZE_EVENT_POOL_COUNTER_BASED_EXP_FLAG_IMMEDIATE;
            let mut pd: ze_event_pool_desc_t = zeroed();
            pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
            pd.pNext = (&cb as *const ze_event_pool_counter_based_exp_desc_t).cast();
            pd.count = 4;
            let mut pool = std::ptr::null_mut();
            ok(a.zeEventPoolCreate(ctx, &pd, 0, std::ptr::null_mut(), &mut pool), "counter-based pool");
            ok(a.zeEventPoolDestroy(pool), "destroy");
        }
        if has("ZE_experimental_relaxed_allocation_limits") {
            let mut rl: ze_relaxed_allocation_limits_exp_desc_t = zeroed();
            rl.stype = ZE_STRUCTURE_TYPE_RELAXED_ALLOCATION_LIMITS_EXP_DESC;
            let (r, _) = try_alloc_host(ctx, (&rl as *const ze_relaxed_allocation_limits_exp_desc_t).cast(), 64);
            assert_eq!(r, ZE_RESULT_ERROR_INVALID_ARGUMENT, "relaxed limits without MAX_SIZE");
            rl.flags = ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE;
            let p = alloc_host(ctx, (&rl as *const ze_relaxed_allocation_limits_exp_desc_t).cast(), 64);
            free(ctx, p);
        }
        if has("ZEX_intel_experimental_queue_copy_operations_offload_hint") {
            // zex_intel_queue_copy_operations_offload_hint_exp_desc_t {stype 0x3001b, pNext, copyOffloadEnabled}.
            #[repr(C)]
            struct Hint {
                stype: u32,
                p_next: *const c_void,
                enabled: ze_bool_t,
            }
            let hint = Hint { stype: 0x0003_001b, p_next: std::ptr::null(), enabled: 1 };
            let mut qd: ze_command_queue_desc_t = zeroed();
            qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
            qd.pNext = (&hint as *const Hint).cast();
            let mut l = std::ptr::null_mut();
            ok(a.zeCommandListCreateImmediate(ctx, dev, &qd, &mut l), "immediate list with the offload hint");
            ok(a.zeCommandListDestroy(l), "destroy");
        }
        // The GPU's extension-function table answers the getters compute-runtime puts there, from
        // 26.18.38308 on (commit 509f37b275); the default build 26.14.37833 knows none of them.
        let build: u32 = std::env::var("VL0_GPU_DRIVER_BUILD").map_or(37833, |b| b.parse().unwrap());
        for n in [
            "@zeCommandQueueGetOrdinal",
            "@zeCommandQueueGetPriority",
            "@zeCommandListGetOrdinal",
            "@zeCommandListIsImmediate",
            "@zeCommandListImmediateGetPriority",
        ] {
            let f = resolve(gpu, n);
            if build >= 38308 {
                assert!(!f.is_null() && !is_stub(f), "{n}");
            } else {
                assert!(f.is_null(), "{n} is not in build {build}'s table");
            }
        }
        destroy_contexts(&[ctx]);
    }
    // The NPU: every table-bearing extension resolves through zeDriverGetExtensionFunctionAddress.
    for n in extension_names(npu) {
        if n.contains("graph") || n.contains("_npu") || n.contains("profiling") {
            assert!(!resolve(npu, &format!("@{n}")).is_null(), "NPU {n}");
        } else if n == "ZE_experimental_mutable_command_list" {
            for f in ["zeCommandListGetNextCommandIdExp", "zeCommandListUpdateMutableCommandsExp"] {
                let p = dlsym(f);
                assert!(!p.is_null() && !is_stub(p), "NPU {n}: {f}");
            }
        }
    }
}

/// Module properties as compute-runtime reports them for these iGPUs (device.cpp
/// getKernelProperties), though no module loads here; images reported as absent everywhere, and
/// consistently: no image dimensions, no image import or export, no image extension, zeImageCreate
/// unsupported.
#[test]
fn gpu_module_properties_and_no_images_consistently() {
    let _s = serial();
    let a = api();
    let (gpu, npu) = drivers();
    let dev = device_of(gpu);
    // SAFETY: valid handles, chains and out-parameters.
    unsafe {
        let mut fa: ze_float_atomic_ext_properties_t = zeroed();
        fa.stype = ZE_STRUCTURE_TYPE_FLOAT_ATOMIC_EXT_PROPERTIES;
        let mut mp: ze_device_module_properties_t = zeroed();
        mp.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
        mp.pNext = (&mut fa as *mut ze_float_atomic_ext_properties_t).cast();
        ok(a.zeDeviceGetModuleProperties(dev, &mut mp), "module properties");
        assert_eq!(mp.spirvVersionSupported, (1 << 16) | 5, "SPIR-V 1.5");
        assert_eq!(
            mp.flags,
            ZE_DEVICE_MODULE_FLAG_FP16
                | ZE_DEVICE_MODULE_FLAG_FP64
                | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS
                | ZE_DEVICE_MODULE_FLAG_DP4A
        );
        assert_eq!(mp.fp16flags, 0x3f & !ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT | ZE_DEVICE_FP_FLAG_FMA);
        assert_eq!(mp.fp32flags & ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT, ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT);
        assert_eq!(mp.fp64flags, mp.fp32flags);
        assert_eq!((mp.maxArgumentsSize, mp.printfBufferSize), (2048, 4 << 20));
        assert_eq!((fa.fp16Flags, fa.fp32Flags, fa.fp64Flags), (0x5_0005, 0x7_0007, 0x7_0007));
        assert!(extension_names(gpu).iter().any(|e| e == "ZE_extension_float_atomics"));

        for d in [dev, device_of(npu)] {
            let mut ip: ze_device_image_properties_t = zeroed();
            ip.stype = ZE_STRUCTURE_TYPE_DEVICE_IMAGE_PROPERTIES;
            ok(a.zeDeviceGetImageProperties(d, &mut ip), "image properties");
            assert_eq!(
                (ip.maxImageDims1D, ip.maxImageDims2D, ip.maxImageDims3D, ip.maxImageBufferSize, ip.maxSamplers),
                (0, 0, 0, 0, 0)
            );
            let mut xp: ze_device_external_memory_properties_t = zeroed();
            xp.stype = ZE_STRUCTURE_TYPE_DEVICE_EXTERNAL_MEMORY_PROPERTIES;
            ok(a.zeDeviceGetExternalMemoryProperties(d, &mut xp), "external memory properties");
            assert_eq!((xp.imageImportTypes, xp.imageExportTypes), (0, 0));
        }
        for d in [gpu, npu] {
            assert!(!extension_names(d).iter().any(|e| e.contains("image")), "no image extension");
        }
        let ctx = context(gpu);
        let mut desc: ze_image_desc_t = zeroed();
        desc.stype = ZE_STRUCTURE_TYPE_IMAGE_DESC;
        let mut img = std::ptr::null_mut();
        assert_eq!(a.zeImageCreate(ctx, dev, &desc, &mut img), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        destroy_contexts(&[ctx]);
    }
}

/// The GPU's virtual-memory API and the atomic-access attributes of shared allocations, as
/// compute-runtime's context.cpp implements them; the NPU has neither (UNSUPPORTED_FEATURE).
#[test]
fn gpu_virtual_memory_and_atomic_access_attributes() {
    let _s = serial();
    let a = api();
    let (gpu, npu) = drivers();
    let (ctx, dev, nctx) = (context(gpu), device_of(gpu), context(npu));
    const K64: usize = 64 << 10;
    const M2: usize = 2 << 20;
    // SAFETY: valid handles, descriptors and out-parameters; mapped memory is touched only while mapped RW.
    unsafe {
        let mut page = 0usize;
        ok(a.zeVirtualMemQueryPageSize(ctx, dev, 4096, &mut page), "page size");
        assert_eq!(page, K64);
        ok(a.zeVirtualMemQueryPageSize(ctx, dev, 3 * M2, &mut page), "page size");
        assert_eq!(page, M2);
        assert_eq!(
            a.zeVirtualMemQueryPageSize(nctx, device_of(npu), 4096, &mut page),
            ZE_RESULT_ERROR_UNSUPPORTED_FEATURE
        );

        // Reserve: sizes in 4 KiB multiples, 2 MiB-aligned start, access NONE.
        let mut va: *mut c_void = std::ptr::null_mut();
        assert_eq!(a.zeVirtualMemReserve(ctx, std::ptr::null(), 1000, &mut va), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        ok(a.zeVirtualMemReserve(ctx, std::ptr::null(), 4 * K64, &mut va), "reserve");
        assert_eq!(va as usize % M2, 0);
        let (mut access, mut size) = (ZE_MEMORY_ACCESS_ATTRIBUTE_FORCE_UINT32, 0usize);
        ok(a.zeVirtualMemGetAccessAttribute(ctx, va, K64, &mut access, &mut size), "get access");
        assert_eq!((access, size), (ZE_MEMORY_ACCESS_ATTRIBUTE_NONE, 4 * K64));

        // Physical memory: device memory in page multiples, host memory in 4 KiB multiples.
        let mut pd: ze_physical_mem_desc_t = zeroed();
        pd.stype = ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC;
        pd.size = 4096;
        let mut phys = std::ptr::null_mut();
        assert_eq!(a.zePhysicalMemCreate(ctx, dev, &mut pd, &mut phys), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        pd.flags = ZE_PHYSICAL_MEM_FLAG_ALLOCATE_ON_HOST;
        pd.size = 4096 + 1;
        let mut host_phys = std::ptr::null_mut();
        assert_eq!(a.zePhysicalMemCreate(ctx, dev, &mut pd, &mut host_phys), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        pd.size = 17 * 4096;
        ok(a.zePhysicalMemCreate(ctx, dev, &mut pd, &mut host_phys), "host physical memory (4 KiB multiple)");
        let mut no_dev = std::ptr::null_mut();
        ok(
            a.zePhysicalMemCreate(ctx, std::ptr::null_mut(), &mut pd, &mut no_dev),
            "host physical memory needs no device",
        );
        ok(a.zePhysicalMemDestroy(ctx, no_dev), "destroy");
        pd.flags = 0;
        pd.size = 2 * K64;
        ok(a.zePhysicalMemCreate(ctx, dev, &mut pd, &mut phys), "device physical memory");

        // Map: alignment, size and range rules, then the memory is usable by GPU copies.
        let rw = ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE;
        assert_eq!(a.zeVirtualMemMap(ctx, va, 1000, phys, 0, rw), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        assert_eq!(
            a.zeVirtualMemMap(ctx, va.cast::<u8>().add(4096).cast(), K64, phys, 0, rw),
            ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT
        );
        assert_eq!(a.zeVirtualMemMap(ctx, va, K64, phys, 4096, rw), ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        assert_eq!(
            a.zeVirtualMemMap(ctx, va, 4 * K64, phys, 0, rw),
            ZE_RESULT_ERROR_INVALID_ARGUMENT,
            "past the physical memory"
        );
        assert_eq!(a.zeVirtualMemMap(ctx, va, K64, phys, 0, 7), ZE_RESULT_ERROR_INVALID_ENUMERATION);
        ok(a.zeVirtualMemMap(ctx, va, 2 * K64, phys, 0, rw), "map");
        let second = va.cast::<u8>().add(2 * K64).cast::<c_void>();
        assert_eq!(
            a.zeVirtualMemMap(ctx, second, 2 * K64, phys, 0, rw),
            ZE_RESULT_ERROR_INVALID_ARGUMENT,
            "device memory maps once"
        );
        ok(a.zeVirtualMemGetAccessAttribute(ctx, va, K64, &mut access, &mut size), "get access");
        assert_eq!(access, rw);
        let (props, _) = alloc_props(ctx, va.cast::<u8>().add(100).cast());
        assert_eq!(props.type_, ZE_MEMORY_TYPE_DEVICE, "a mapping is device memory");

        // A GPU copy into the mapped range, read back through the host.
        let src = vec![0x5au8; 2 * K64];
        let mut qd: ze_command_queue_desc_t = zeroed();
        qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
        qd.mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
        let mut il = std::ptr::null_mut();
        ok(a.zeCommandListCreateImmediate(ctx, dev, &qd, &mut il), "immediate");
        ok(
            a.zeCommandListAppendMemoryCopy(
                il,
                va,
                src.as_ptr().cast(),
                2 * K64,
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
            ),
            "copy into the mapping",
        );
        assert_eq!(std::ptr::read_volatile(va.cast::<u8>().add(2 * K64 - 1)), 0x5a);

        // Access attributes belong to the reservation; an unknown range is INVALID_ARGUMENT.
        ok(a.zeVirtualMemSetAccessAttribute(ctx, va, 2 * K64, ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY), "read-only");
        ok(a.zeVirtualMemGetAccessAttribute(ctx, second, K64, &mut access, &mut size), "get access");
        assert_eq!(access, ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY);
        assert_eq!(std::ptr::read_volatile(va.cast::<u8>()), 0x5a, "still readable");
        // A GPU write into the read-only range faults on the device, never in the process.
        let into_read_only = a.zeCommandListAppendMemoryCopy(
            il,
            va,
            src.as_ptr().cast(),
            K64,
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        );
        assert_eq!(into_read_only, ZE_RESULT_ERROR_DEVICE_LOST, "a GPU write into a read-only range");
        assert_eq!(
            a.zeVirtualMemSetAccessAttribute(ctx, va, 8 * K64, rw),
            ZE_RESULT_ERROR_INVALID_ARGUMENT,
            "beyond the reservation"
        );

        // Unmap, then the physical memory maps again (the host one too, twice); free needs the size.
        assert_eq!(a.zeVirtualMemUnmap(ctx, va, 1000), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        ok(a.zeVirtualMemUnmap(ctx, va, 2 * K64), "unmap");
        assert_eq!(alloc_props(ctx, va).0.type_, ZE_MEMORY_TYPE_UNKNOWN);
        ok(a.zeVirtualMemMap(ctx, second, 2 * K64, phys, 0, rw), "map again");
        assert_eq!(std::ptr::read_volatile(second.cast::<u8>()), 0x5a, "the same physical pages");
        ok(a.zeVirtualMemMap(ctx, va, K64, host_phys, 0, rw), "host physical memory");
        ok(a.zeVirtualMemUnmap(ctx, va, K64), "unmap");
        ok(a.zeVirtualMemMap(ctx, va, K64, host_phys, 0, rw), "host physical memory maps again");
        assert_eq!(a.zeVirtualMemFree(ctx, va, K64), ZE_RESULT_ERROR_INVALID_ARGUMENT, "another size");
        ok(a.zeVirtualMemFree(ctx, va, 4 * K64), "free");
        assert_eq!(
            a.zeVirtualMemGetAccessAttribute(ctx, va, K64, &mut access, &mut size),
            ZE_RESULT_ERROR_INVALID_ARGUMENT
        );
        ok(a.zePhysicalMemDestroy(ctx, phys), "destroy");
        ok(a.zePhysicalMemDestroy(ctx, host_phys), "destroy");
        ok(a.zePhysicalMemDestroy(ctx, phys), "an unknown handle is SUCCESS, as compute-runtime");
        ok(a.zeCommandListDestroy(il), "destroy");
        let mut nva: *mut c_void = std::ptr::null_mut();
        assert_eq!(a.zeVirtualMemReserve(nctx, std::ptr::null(), K64, &mut nva), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);

        // Atomic-access attributes: shared allocations only, device and host atomics, no system
        // atomics without shared-system USM; what was set is read back.
        let dd = dev_desc(std::ptr::null());
        let hd = host_desc(std::ptr::null());
        let mut shared: *mut c_void = std::ptr::null_mut();
        ok(a.zeMemAllocShared(ctx, &dd, &hd, 4096, 64, dev, &mut shared), "shared");
        let host = alloc_host(ctx, std::ptr::null(), 4096);
        let mut attr = 0u32;
        assert_eq!(
            a.zeMemGetAtomicAccessAttributeExp(ctx, dev, shared, 4096, &mut attr),
            ZE_RESULT_ERROR_INVALID_ARGUMENT,
            "never set"
        );
        let set = |p, f| a.zeMemSetAtomicAccessAttributeExp(ctx, dev, p, 4096, f);
        assert_eq!(
            set(host, ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_DEVICE_ATOMICS),
            ZE_RESULT_ERROR_INVALID_ARGUMENT,
            "host memory"
        );
        assert_eq!(
            a.zeMemSetAtomicAccessAttributeExp(
                ctx,
                std::ptr::null_mut(),
                shared,
                4096,
                ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_DEVICE_ATOMICS
            ),
            ZE_RESULT_ERROR_INVALID_ARGUMENT,
            "no device"
        );
        let system = std::env::var("VL0_GPU_SHARED_SYSTEM").as_deref() == Ok("1");
        let stack = [0u8; 16];
        let unknown = set(stack.as_ptr().cast(), ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_DEVICE_ATOMICS);
        assert_eq!(unknown == ZE_RESULT_SUCCESS, system, "plain memory takes it only with shared-system USM");
        assert_eq!(set(shared, ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_SYSTEM_ATOMICS), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        assert_eq!(set(shared, 1 << 10), ZE_RESULT_ERROR_INVALID_ARGUMENT, "no known flag");
        ok(set(shared, ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_DEVICE_ATOMICS), "device atomics");
        ok(a.zeMemGetAtomicAccessAttributeExp(ctx, dev, shared, 4096, &mut attr), "get");
        assert_eq!(attr, ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_DEVICE_ATOMICS);
        ok(set(shared, ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_NO_ATOMICS), "none");
        ok(a.zeMemGetAtomicAccessAttributeExp(ctx, dev, shared, 4096, &mut attr), "get");
        assert_eq!(attr, ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_NO_ATOMICS);
        free(ctx, shared);
        free(ctx, host);
    }
    destroy_contexts(&[ctx, nctx]);
}

#[test]
fn every_advertised_extension_is_backed() {
    let _s = serial();
    check_gpu_extensions();
}

/// Command semantics as compute-runtime's: immediate append of regular lists (from the build that
/// has it), SYNCHRONOUS queues, appends to a closed list, `zeMemAllocDevice` alignments. Per build:
/// the default (26.14.37833), one that has the entry point but does not advertise it (24.22..24.52)
/// and one before it.
#[test]
fn gpu_command_semantics_follow_compute_runtime() {
    for build in ["38308", "37833", "30000", "29000"] {
        run_child("command_semantics", &[("VL0_GPU_DRIVER_BUILD", build)]);
    }
}

/// A process that exits with work still pending on events nobody will signal (GPU queue, GPU
/// immediate list, NPU queue) exits cleanly: status 0, no signal, and the platform's exit handler
/// ended its queue threads and dropped the pending work (its `VL0_TRACE` report).
#[test]
fn exit_with_pending_work_is_clean() {
    let err = run_child("exit_pending", &[("VL0_TRACE", "1")]);
    let report =
        err.lines().find(|l| l.starts_with("virtual-l0: exit: ")).unwrap_or_else(|| panic!("no exit report:\n{err}"));
    assert!(report.contains(" 0 still running"), "{report}");
    let threads: u32 = report.trim_start_matches("virtual-l0: exit: ").split(' ').next().unwrap().parse().unwrap();
    assert!(threads >= 3, "{report}");
    assert!(!err.contains("panicked") && !err.contains("Aborted"), "{err}");
}

mod inner {
    use super::*;

    /// Runs `body` only in the child process `run_child(name, ..)` started, then prints the marker
    /// the parent looks for.
    fn in_child(name: &str, body: impl FnOnce()) {
        if std::env::var(CHILD_ENV).ok().as_deref() == Some(name) {
            body();
            println!("VL0-CHILD-DONE {name}");
        }
    }

    #[test]
    fn init_visibility() {
        in_child("init_visibility", || {
            let a = api();
            // OpenVINO is never linked into the platform.
            for lib in ["libopenvino.so.2641", "libopenvino_c.so.2641"] {
                let c = CString::new(lib).unwrap();
                assert!(
                    // SAFETY: RTLD_NOLOAD never loads anything.
                    unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) }.is_null(),
                    "{lib} loaded"
                );
            }
            let count = || {
                let mut n = 0u32;
                // SAFETY: a valid count pointer.
                let r = unsafe { a.zeDriverGet(&mut n, std::ptr::null_mut()) };
                (r, n)
            };
            let types = || {
                let mut n = 4u32;
                let mut hs = [std::ptr::null_mut(); 4];
                // SAFETY: a four-element array.
                ok(unsafe { a.zeDriverGet(&mut n, hs.as_mut_ptr()) }, "zeDriverGet");
                hs[..n as usize]
                    .iter()
                    .map(|&d| {
                        let dev = device_of(d);
                        let mut p: ze_device_properties_t = zeroed();
                        p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
                        // SAFETY: valid handle and out-parameter.
                        ok(unsafe { a.zeDeviceGetProperties(dev, &mut p) }, "props");
                        p.type_
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(count().0, ZE_RESULT_ERROR_UNINITIALIZED, "nothing visible before zeInit");
            // zeInitDrivers does not change zeInit visibility.
            drivers();
            assert_eq!(count().0, ZE_RESULT_ERROR_UNINITIALIZED);
            // SAFETY: plain calls.
            unsafe {
                ok(a.zeInit(ZE_INIT_FLAG_VPU_ONLY), "zeInit(VPU)");
                assert_eq!(types(), [ZE_DEVICE_TYPE_VPU]);
                ok(a.zeInit(ZE_INIT_FLAG_GPU_ONLY), "zeInit(GPU)");
                assert_eq!(types(), [ZE_DEVICE_TYPE_GPU, ZE_DEVICE_TYPE_VPU]);
                ok(a.zeInit(ZE_INIT_FLAG_VPU_ONLY), "zeInit(VPU) again never hides the GPU");
                assert_eq!(count(), (ZE_RESULT_SUCCESS, 2));
            }
        });
    }

    /// One profile's identity and memory rules (expectations from [`PROFILES`] and the knobs).
    #[test]
    fn profile() {
        in_child("profile", || {
            let (name, npu_id, gpu_id, gpu_ip, userptr, _) = this_profile();
            let (gpu, npu) = drivers();
            let (gdev, ndev) = (device_of(gpu), device_of(npu));
            // NPU: INTEGRATED only (linux-npu-driver device.cpp Device::getProperties); iGPU: INTEGRATED,
            // and ONDEMANDPAGING on Xe2+ (compute-runtime hw_info_{mtl,arl,lnl,ptl}.cpp).
            let (r, np) = device_props(ndev, std::ptr::null_mut());
            ok(r, "zeDeviceGetProperties(npu)");
            assert_eq!((np.deviceId, np.flags), (npu_id, ZE_DEVICE_PROPERTY_FLAG_INTEGRATED), "{name}");
            let (r, gp) = device_props(gdev, std::ptr::null_mut());
            ok(r, "zeDeviceGetProperties(gpu)");
            let paging = if gpu_ip >= 0x0500_4000 { ZE_DEVICE_PROPERTY_FLAG_ONDEMANDPAGING } else { 0 };
            assert_eq!((gp.deviceId, gp.flags), (gpu_id, ZE_DEVICE_PROPERTY_FLAG_INTEGRATED | paging), "{name}");
            assert_eq!(ip_version(gdev), gpu_ip, "{name}");
            // DMA_BUF, and STANDARD_ALLOCATION only with userptr (device.cpp getGetExternalMemoryProperties).
            let mut ext: ze_device_external_memory_properties_t = zeroed();
            ext.stype = ZE_STRUCTURE_TYPE_DEVICE_EXTERNAL_MEMORY_PROPERTIES;
            // SAFETY: valid handle and out-parameter.
            ok(unsafe { api().zeDeviceGetExternalMemoryProperties(ndev, &mut ext) }, "external memory");
            assert_eq!(ext.memoryAllocationImportTypes, if userptr { 0x102 } else { 0x2 }, "{name}");
            // The GPU (compute-runtime device_imp_drm.cpp): DMA_BUF only before 26.22.38646,
            // DMA_BUF|OPAQUE_FD in both masks from it; driverVersion 0x01030000 + build
            // (driver_handle.cpp getProperties).
            let build: u32 = std::env::var("VL0_GPU_DRIVER_BUILD").map_or(37833, |b| b.parse().unwrap());
            let mut gext: ze_device_external_memory_properties_t = zeroed();
            gext.stype = ZE_STRUCTURE_TYPE_DEVICE_EXTERNAL_MEMORY_PROPERTIES;
            // SAFETY: valid handle and out-parameter.
            ok(unsafe { api().zeDeviceGetExternalMemoryProperties(gdev, &mut gext) }, "GPU external memory");
            let types = if build >= 38646 { 0x3 } else { 0x2 };
            assert_eq!((gext.memoryAllocationImportTypes, gext.memoryAllocationExportTypes), (types, types), "{name}");
            let mut dp: ze_driver_properties_t = zeroed();
            dp.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
            // SAFETY: valid handle and out-parameter.
            ok(unsafe { api().zeDriverGetProperties(gpu, &mut dp) }, "zeDriverGetProperties(gpu)");
            assert_eq!(dp.driverVersion, 0x0103_0000 + build, "{name}: decodes as 1.3.<build>");
            // maxMemAllocSize: 4 GiB - 8 KiB on Xe-LPG; no 4 GiB cap on Xe2+ (compiler_product_helper).
            let xe2 = gpu_ip >= 0x0500_4000;
            if xe2 {
                assert!(gp.maxMemAllocSize > 4 << 30 || total_ram() <= 5 << 30, "{name}: {}", gp.maxMemAllocSize);
            } else {
                assert_eq!(gp.maxMemAllocSize, 0xFFFF_E000, "{name}");
            }
            // The NPU driver has no zeDeviceGetRootDevice: the loader answers UNINITIALIZED.
            let mut root: ze_device_handle_t = ndev;
            assert_eq!(
                // SAFETY: valid handle and out-parameter.
                unsafe { api().zeDeviceGetRootDevice(ndev, &mut root) },
                ZE_RESULT_ERROR_UNINITIALIZED,
                "{name}"
            );
            // ZE_extension_command_queue_npu: 1.1 under hardware scheduling (the default: a current
            // kernel on every generation), 1.0 with VL0_NPU_HWS=0 (linux-npu-driver
            // getSupportedCmdQueueExtVersion).
            let hws = std::env::var("VL0_NPU_HWS").as_deref() != Ok("0");
            let mut n = 0u32;
            // SAFETY: count query, then an array of n entries.
            let versions: Vec<ze_driver_extension_properties_t> = unsafe {
                ok(api().zeDriverGetExtensionProperties(npu, &mut n, std::ptr::null_mut()), "extensions");
                let mut v: Vec<ze_driver_extension_properties_t> = (0..n).map(|_| zeroed()).collect();
                ok(api().zeDriverGetExtensionProperties(npu, &mut n, v.as_mut_ptr()), "extensions");
                v
            };
            let queue_ext = versions
                .iter()
                .find(|e| {
                    // SAFETY: NUL-terminated names written by the driver.
                    unsafe { std::ffi::CStr::from_ptr(e.name.as_ptr()) }.to_bytes() == b"ZE_extension_command_queue_npu"
                })
                .expect("ZE_extension_command_queue_npu");
            assert_eq!(queue_ext.version & 0xffff, u32::from(hws), "{name}: minor version");
            // driver_handle.cpp getSupportedExtensions (1.32.1): memmap_sysmem only with userptr, the
            // legacy per-version graph names, no driver_npu.
            let names = extension_names(npu);
            let has = |n: &str| names.iter().any(|x| x == n);
            assert_eq!(has("ZE_extension_external_memmap_sysmem"), userptr, "{name}: {names:?}");
            assert!(has("ZE_extension_graph_1_8") && !has("ZE_extension_driver_npu"), "{name}: {names:?}");
            // memory.cpp Context::importUserPtr: UNSUPPORTED_FEATURE without userptr.
            let ctx = context(npu);
            let m = PageAlignedBuffer::new(4096).unwrap();
            let (r, p) = sysmem_import(ctx, m.as_ptr(), 4096);
            assert_eq!(r, if userptr { ZE_RESULT_SUCCESS } else { ZE_RESULT_ERROR_UNSUPPORTED_FEATURE }, "{name}");
            if userptr {
                free(ctx, p);
            }
            destroy_contexts(&[ctx]);
        });
    }

    /// One profile's iGPU queues, copy engine, default context and USM capabilities.
    #[test]
    fn gpu_queues() {
        in_child("gpu_queues", || {
            let a = api();
            let name = this_profile().0;
            let xe_lpg = matches!(name, "mtl" | "arl");
            let (gpu, npu) = drivers();
            let (gdev, ndev) = (device_of(gpu), device_of(npu));
            // compute-runtime device.cpp getCommandQueueGroupProperties: CCS (compute), RCS
            // (render, Xe-LPG only), BCS (copy; 16-byte patterns on Xe-LPG, 1 byte on Xe2/Xe3).
            const COMPUTE: u32 = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE
                | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY
                | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS;
            const RENDER: u32 = COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_METRICS;
            const COPY: u32 = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
            let want: Vec<(u32, usize, u32)> = if xe_lpg {
                vec![(COMPUTE, usize::MAX, 1), (RENDER, usize::MAX, 1), (COPY, 16, 1)]
            } else {
                vec![(COMPUTE, usize::MAX, 1), (COPY, 1, 1)]
            };
            let groups = |dev| {
                let mut n = 0u32;
                // SAFETY: valid handle and count.
                ok(unsafe { a.zeDeviceGetCommandQueueGroupProperties(dev, &mut n, std::ptr::null_mut()) }, "count");
                let mut gs: Vec<ze_command_queue_group_properties_t> = (0..n + 2)
                    .map(|_| {
                        let mut g: ze_command_queue_group_properties_t = zeroed();
                        g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
                        g
                    })
                    .collect();
                let mut m = n + 2;
                // SAFETY: an array of m entries.
                ok(unsafe { a.zeDeviceGetCommandQueueGroupProperties(dev, &mut m, gs.as_mut_ptr()) }, "groups");
                assert_eq!(m, n, "a larger count is cut to the real one");
                gs.truncate(n as usize);
                gs.iter().map(|g| (g.flags, g.maxMemoryFillPatternSize, g.numQueues)).collect::<Vec<_>>()
            };
            assert_eq!(groups(gdev), want, "{name}");
            assert_eq!(groups(ndev), [(3, 4, 1)], "{name}: the NPU's one group");
            let copy = want.len() as u32 - 1;
            let fill_max = want[copy as usize].1;

            // USM: RW|ATOMIC for host, device and shared single-device; no cross-device; shared
            // system all four flags only with VL0_GPU_SHARED_SYSTEM=1 (compute-runtime
            // product_helper.inl, hw_info_extra_lnl.cpp).
            let system = std::env::var("VL0_GPU_SHARED_SYSTEM").as_deref() == Ok("1");
            let mut mp: ze_device_memory_access_properties_t = zeroed();
            mp.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES;
            // SAFETY: valid handle and out-parameter.
            ok(unsafe { a.zeDeviceGetMemoryAccessProperties(gdev, &mut mp) }, "memory access");
            let got = (
                mp.hostAllocCapabilities,
                mp.deviceAllocCapabilities,
                mp.sharedSingleDeviceAllocCapabilities,
                mp.sharedCrossDeviceAllocCapabilities,
                mp.sharedSystemAllocCapabilities,
            );
            assert_eq!(got, (0x3, 0x3, 0x3, 0, if system { 0xF } else { 0 }), "{name}");

            // The default context: one per GPU driver, usable; none on the NPU.
            // SAFETY: the platform's export of that name has this signature.
            let default_ctx: unsafe extern "C" fn(ze_driver_handle_t) -> ze_context_handle_t =
                unsafe { std::mem::transmute(dlsym("zeDriverGetDefaultContext")) };
            // SAFETY: valid driver handles.
            let (dctx, nctx) = unsafe { (default_ctx(gpu), default_ctx(npu)) };
            assert!(!dctx.is_null() && nctx.is_null(), "{name}");
            // SAFETY: valid handle.
            assert_eq!(unsafe { default_ctx(gpu) }, dctx, "the same context each time");
            // SAFETY: valid handle.
            ok(unsafe { a.zeContextGetStatus(dctx) }, "the default context is live");

            // A copy and a fill on the copy-only queue of the default context, device memory.
            let ctx = dctx;
            let n = 4096usize;
            // SAFETY: valid handles, descriptors and out-parameters; buffers outlive the work.
            unsafe {
                let dd = dev_desc(std::ptr::null());
                let mut dev_mem: *mut c_void = std::ptr::null_mut();
                ok(a.zeMemAllocDevice(ctx, &dd, n, 64, gdev, &mut dev_mem), "zeMemAllocDevice");
                let host = alloc_host(ctx, std::ptr::null(), n);
                let src: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
                let mut back = vec![0u8; n];
                let mut qd: ze_command_queue_desc_t = zeroed();
                qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
                qd.ordinal = copy;
                let mut q: ze_command_queue_handle_t = std::ptr::null_mut();
                ok(a.zeCommandQueueCreate(ctx, gdev, &qd, &mut q), "copy queue");
                let mut ord = 99u32;
                ok(a.zeCommandQueueGetOrdinal(q, &mut ord), "zeCommandQueueGetOrdinal");
                assert_eq!(ord, copy);
                let mut ld: ze_command_list_desc_t = zeroed();
                ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
                ld.commandQueueGroupOrdinal = copy;
                let mut l: ze_command_list_handle_t = std::ptr::null_mut();
                ok(a.zeCommandListCreate(ctx, gdev, &ld, &mut l), "copy list");
                let copied0 = vp().counter("gpu.bytes_copied");
                ok(
                    a.zeCommandListAppendMemoryCopy(
                        l,
                        dev_mem,
                        src.as_ptr().cast(),
                        n,
                        std::ptr::null_mut(),
                        0,
                        std::ptr::null_mut(),
                    ),
                    "h2d",
                );
                ok(a.zeCommandListAppendBarrier(l, std::ptr::null_mut(), 0, std::ptr::null_mut()), "barrier");
                ok(
                    a.zeCommandListAppendMemoryCopy(
                        l,
                        back.as_mut_ptr().cast(),
                        dev_mem,
                        n,
                        std::ptr::null_mut(),
                        0,
                        std::ptr::null_mut(),
                    ),
                    "d2h",
                );
                let pattern: Vec<u8> = (0..fill_max as u8).map(|i| 0xC0 | i).collect();
                let too_big = vec![0x5Au8; fill_max * 2];
                assert_eq!(
                    a.zeCommandListAppendMemoryFill(
                        l,
                        host,
                        too_big.as_ptr().cast(),
                        fill_max * 2,
                        n,
                        std::ptr::null_mut(),
                        0,
                        std::ptr::null_mut()
                    ),
                    ZE_RESULT_ERROR_INVALID_SIZE,
                    "{name}: a pattern over the blitter's {fill_max} bytes"
                );
                ok(
                    a.zeCommandListAppendMemoryFill(
                        l,
                        host,
                        pattern.as_ptr().cast(),
                        fill_max,
                        n,
                        std::ptr::null_mut(),
                        0,
                        std::ptr::null_mut(),
                    ),
                    "fill",
                );
                ok(a.zeCommandListClose(l), "close");
                assert_eq!(back[1], 0, "nothing ran yet");
                ok(
                    a.zeCommandQueueExecuteCommandLists(q, 1, &mut { l }, std::ptr::null_mut()),
                    "execute on the copy queue",
                );
                ok(a.zeCommandQueueSynchronize(q, u64::MAX), "synchronize");
                assert_eq!(back, src, "{name}: the copy engine moved the bytes through device memory");
                let filled = std::slice::from_raw_parts(host as *const u8, n);
                assert!(filled.iter().enumerate().all(|(i, &b)| b == pattern[i % fill_max]), "{name}: fill");
                assert_eq!(vp().counter("gpu.bytes_copied"), copied0 + 2 * n as u64 + n as u64);

                // An immediate list of the copy group.
                let mut iqd = qd;
                iqd.mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
                let mut il: ze_command_list_handle_t = std::ptr::null_mut();
                ok(a.zeCommandListCreateImmediate(ctx, gdev, &iqd, &mut il), "immediate copy list");
                let mut again = vec![0u8; n];
                ok(
                    a.zeCommandListAppendMemoryCopy(
                        il,
                        again.as_mut_ptr().cast(),
                        dev_mem,
                        n,
                        std::ptr::null_mut(),
                        0,
                        std::ptr::null_mut(),
                    ),
                    "immediate d2h",
                );
                assert_eq!(again, src);
                assert_eq!(
                    a.zeCommandListAppendMemoryFill(
                        il,
                        host,
                        too_big.as_ptr().cast(),
                        fill_max * 2,
                        n,
                        std::ptr::null_mut(),
                        0,
                        std::ptr::null_mut()
                    ),
                    ZE_RESULT_ERROR_INVALID_SIZE
                );
                // Ordinals and indexes out of range.
                let mut bad = qd;
                bad.index = 1;
                let mut x: ze_command_queue_handle_t = std::ptr::null_mut();
                assert_eq!(
                    a.zeCommandQueueCreate(ctx, gdev, &bad, &mut x),
                    ZE_RESULT_ERROR_INVALID_ARGUMENT,
                    "one BCS"
                );
                let mut xl: ze_command_list_handle_t = std::ptr::null_mut();
                assert_eq!(a.zeCommandListCreateImmediate(ctx, gdev, &bad, &mut xl), ZE_RESULT_ERROR_INVALID_ARGUMENT);
                bad.index = 0;
                bad.ordinal = copy + 1;
                assert_eq!(
                    a.zeCommandQueueCreate(ctx, gdev, &bad, &mut x),
                    ZE_RESULT_ERROR_INVALID_ARGUMENT,
                    "no such group"
                );
                let mut bld = ld;
                bld.commandQueueGroupOrdinal = copy + 1;
                let mut bl: ze_command_list_handle_t = std::ptr::null_mut();
                assert_eq!(a.zeCommandListCreate(ctx, gdev, &bld, &mut bl), ZE_RESULT_ERROR_INVALID_ARGUMENT);
                for r in [
                    a.zeCommandListDestroy(il),
                    a.zeCommandListDestroy(l),
                    a.zeCommandQueueDestroy(q),
                    a.zeMemFree(ctx, host),
                    a.zeMemFree(ctx, dev_mem),
                ] {
                    ok(r, "destroy");
                }
            }
            // zeContextDestroy destroys the default context like any other (compute-runtime
            // Context::destroy); the driver keeps answering the dead handle.
            // SAFETY: valid handle, no longer used but for the checks below.
            unsafe {
                ok(a.zeContextDestroy(dctx), "zeContextDestroy(default)");
                assert_eq!(default_ctx(gpu), dctx);
                assert_eq!(a.zeContextGetStatus(dctx), ZE_RESULT_ERROR_INVALID_ARGUMENT, "dead");
            }
        });
    }

    #[test]
    fn bad_profile() {
        in_child("bad_profile", || {
            let a = api();
            let mut desc = init_desc(ZE_INIT_DRIVER_TYPE_FLAG_GPU | ZE_INIT_DRIVER_TYPE_FLAG_NPU);
            let mut n = 0u32;
            // SAFETY: valid count and descriptor.
            unsafe {
                assert_eq!(a.zeInitDrivers(&mut n, std::ptr::null_mut(), &mut desc), ZE_RESULT_ERROR_UNINITIALIZED);
                assert_eq!(a.zeInit(0), ZE_RESULT_ERROR_UNINITIALIZED);
            }
        });
    }

    #[test]
    fn gpu_import_keeps_fd() {
        in_child("gpu_import_keeps_fd", || {
            assert!(!gpu_import_closes_fd(), "26.09.37435 leaves the imported fd open");
        });
    }

    #[test]
    fn foreign_loader() {
        in_child("foreign_loader", || {
            let path = CString::new(std::env::var("VL0_TEST_FOREIGN_LOADER").unwrap()).unwrap();
            // SAFETY: a trivial library without initialisers; the handle stays loaded on purpose.
            assert!(!unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) }.is_null());
            let err = virtual_platform::activate().expect_err("a foreign loader is already loaded");
            assert_eq!(err.kind(), &npu_sycl_bridge::ErrorKind::Library);
            assert!(err.to_string().contains("already loaded"), "{err}");
            assert!(virtual_platform::active().is_none());
        });
    }

    #[test]
    fn env_faults() {
        in_child("env_faults", || {
            let a = api();
            let ctx = context(drivers().0);
            // SAFETY: valid handle.
            unsafe {
                ok(a.zeContextGetStatus(ctx), "first");
                assert_eq!(a.zeContextGetStatus(ctx), ZE_RESULT_ERROR_INVALID_ARGUMENT);
                ok(a.zeContextGetStatus(ctx), "third");
            }
        });
    }

    /// A GPU context, device, regular and immediate lists and queues for the command tests.
    struct Gpu {
        ctx: ze_context_handle_t,
        dev: ze_device_handle_t,
    }

    impl Gpu {
        fn new() -> Gpu {
            let gpu = drivers().0;
            Gpu { ctx: context(gpu), dev: device_of(gpu) }
        }
        fn list(&self) -> ze_command_list_handle_t {
            let mut d: ze_command_list_desc_t = zeroed();
            d.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
            let mut l = std::ptr::null_mut();
            // SAFETY: valid handles, descriptor and out-parameter.
            ok(unsafe { api().zeCommandListCreate(self.ctx, self.dev, &d, &mut l) }, "zeCommandListCreate");
            l
        }
        fn queue_desc(mode: ze_command_queue_mode_t) -> ze_command_queue_desc_t {
            let mut d: ze_command_queue_desc_t = zeroed();
            d.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
            d.mode = mode;
            d
        }
        fn immediate(&self) -> ze_command_list_handle_t {
            let d = Self::queue_desc(ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
            let mut l = std::ptr::null_mut();
            // SAFETY: valid handles, descriptor and out-parameter.
            ok(unsafe { api().zeCommandListCreateImmediate(self.ctx, self.dev, &d, &mut l) }, "immediate");
            l
        }
        fn queue(&self, mode: ze_command_queue_mode_t) -> ze_command_queue_handle_t {
            let d = Self::queue_desc(mode);
            let mut q = std::ptr::null_mut();
            // SAFETY: valid handles, descriptor and out-parameter.
            ok(unsafe { api().zeCommandQueueCreate(self.ctx, self.dev, &d, &mut q) }, "zeCommandQueueCreate");
            q
        }
    }

    /// `count` host-visible events of one pool of `ctx`.
    fn events(ctx: ze_context_handle_t, count: u32) -> Vec<ze_event_handle_t> {
        let a = api();
        let mut pd: ze_event_pool_desc_t = zeroed();
        pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
        pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
        pd.count = count;
        let mut pool = std::ptr::null_mut();
        // SAFETY: valid handles, descriptors and out-parameters.
        unsafe {
            ok(a.zeEventPoolCreate(ctx, &pd, 0, std::ptr::null_mut(), &mut pool), "zeEventPoolCreate");
            (0..count)
                .map(|i| {
                    let mut ed: ze_event_desc_t = zeroed();
                    ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
                    ed.index = i;
                    let mut e = std::ptr::null_mut();
                    ok(a.zeEventCreate(pool, &ed, &mut e), "zeEventCreate");
                    e
                })
                .collect()
        }
    }

    /// Appends a 1-byte-pattern fill of `buf` to `l`.
    fn fill(l: ze_command_list_handle_t, buf: &mut [u8], byte: u8) -> ze_result_t {
        // SAFETY: valid list; the buffer outlives the list's execution in these tests.
        unsafe {
            api().zeCommandListAppendMemoryFill(
                l,
                buf.as_mut_ptr().cast(),
                (&byte as *const u8).cast(),
                1,
                buf.len(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
            )
        }
    }

    #[test]
    fn command_semantics() {
        in_child("command_semantics", || {
            let a = api();
            let g = Gpu::new();
            let build: u32 = std::env::var("VL0_GPU_DRIVER_BUILD").unwrap().parse().unwrap();
            check_gpu_extensions();
            let gpu = drivers().0;
            let buf = Box::leak(Box::new([0u8; 256]));
            // SAFETY: valid handles, descriptors and out-parameters throughout; `buf` is leaked, so
            // it outlives every submission.
            unsafe {
                // 1. zeCommandListImmediateAppendCommandListsExp: advertised from 24.52.32224
                //    (compute-runtime driver_handle_helper.cpp), working from 24.22.29735.
                let advertised =
                    extension_names(gpu).iter().any(|e| e == "ZE_experimental_immediate_command_list_append");
                assert_eq!(advertised, build >= 32224, "build {build}");
                let imm = g.immediate();
                let l1 = g.list();
                ok(fill(l1, &mut buf[..], 0xAB), "fill");
                let mut lists = [l1];
                let ev = events(g.ctx, 2);
                let r = a.zeCommandListImmediateAppendCommandListsExp(
                    imm,
                    1,
                    lists.as_mut_ptr(),
                    ev[0],
                    0,
                    std::ptr::null_mut(),
                );
                if build < 29735 {
                    assert_eq!(r, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, "build {build}");
                } else {
                    // compute-runtime executeCommandLists: a list that is not closed → INVALID_ARGUMENT.
                    assert_eq!(r, ZE_RESULT_ERROR_INVALID_ARGUMENT, "not closed");
                    ok(a.zeCommandListClose(l1), "close");
                    let regular = g.list();
                    assert_eq!(
                        a.zeCommandListImmediateAppendCommandListsExp(
                            regular,
                            1,
                            lists.as_mut_ptr(),
                            std::ptr::null_mut(),
                            0,
                            std::ptr::null_mut()
                        ),
                        ZE_RESULT_ERROR_INVALID_ARGUMENT,
                        "onto a regular list"
                    );
                    ok(
                        a.zeCommandListImmediateAppendCommandListsExp(
                            imm,
                            1,
                            lists.as_mut_ptr(),
                            ev[0],
                            0,
                            std::ptr::null_mut(),
                        ),
                        "append",
                    );
                    ok(a.zeEventHostSynchronize(ev[0], u64::MAX), "signalled after the lists ran");
                    assert!(buf.iter().all(|&b| b == 0xAB));
                    // With a wait event the host signals later: the append returns at once, runs after.
                    buf.fill(0);
                    let mut w = ev[1];
                    ok(
                        a.zeCommandListImmediateAppendCommandListsExp(
                            imm,
                            1,
                            lists.as_mut_ptr(),
                            std::ptr::null_mut(),
                            1,
                            &mut w,
                        ),
                        "append with wait",
                    );
                    assert_eq!(a.zeCommandListHostSynchronize(imm, 0), ZE_RESULT_NOT_READY);
                    assert_eq!(std::ptr::read_volatile(&buf[0]), 0, "waits for the event");
                    ok(a.zeEventHostSignal(ev[1]), "signal");
                    ok(a.zeCommandListHostSynchronize(imm, u64::MAX), "done");
                    assert_eq!(std::ptr::read_volatile(&buf[255]), 0xAB);
                }

                // 2. A closed GPU list accepts appends and never runs them (compute-runtime close()
                //    ends the batch buffer); reset reopens it. Executing an open list: INVALID_ARGUMENT.
                let q = g.queue(ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
                let l2 = g.list();
                let mut l2s = [l2];
                assert_eq!(
                    a.zeCommandQueueExecuteCommandLists(q, 1, l2s.as_mut_ptr(), std::ptr::null_mut()),
                    ZE_RESULT_ERROR_INVALID_ARGUMENT,
                    "an open list"
                );
                ok(fill(l2, &mut buf[..], 1), "fill 1");
                ok(a.zeCommandListClose(l2), "close");
                assert_eq!(fill(l2, &mut buf[..], 2), ZE_RESULT_SUCCESS, "accepted after close");
                ok(a.zeCommandListClose(l2), "closed again");
                ok(a.zeCommandQueueExecuteCommandLists(q, 1, l2s.as_mut_ptr(), std::ptr::null_mut()), "execute");
                ok(a.zeCommandQueueSynchronize(q, u64::MAX), "sync");
                assert!(buf.iter().all(|&b| b == 1), "what was appended after close never ran");
                ok(a.zeCommandListReset(l2), "reset");
                ok(fill(l2, &mut buf[..], 2), "fill 2");
                ok(a.zeCommandListClose(l2), "close");
                ok(a.zeCommandQueueExecuteCommandLists(q, 1, l2s.as_mut_ptr(), std::ptr::null_mut()), "execute");
                ok(a.zeCommandQueueSynchronize(q, u64::MAX), "sync");
                assert!(buf.iter().all(|&b| b == 2));

                // 3. A SYNCHRONOUS queue returns from ExecuteCommandLists only when the lists have
                //    finished (compute-runtime waitForCommandQueueCompletion); an ASYNCHRONOUS one at once.
                let ev = events(g.ctx, 2);
                for (mode, e) in
                    [(ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ev[0]), (ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ev[1])]
                {
                    buf.fill(0);
                    let q = g.queue(mode);
                    let l = g.list();
                    let mut w = e;
                    ok(a.zeCommandListAppendWaitOnEvents(l, 1, &mut w), "wait");
                    ok(fill(l, &mut buf[..], 9), "fill");
                    ok(a.zeCommandListClose(l), "close");
                    let eh = e as usize;
                    let signaller = std::thread::spawn(move || {
                        std::thread::sleep(std::time::Duration::from_millis(300));
                        api().zeEventHostSignal(eh as ze_event_handle_t) // a live event
                    });
                    let t0 = std::time::Instant::now();
                    let mut ls = [l];
                    ok(a.zeCommandQueueExecuteCommandLists(q, 1, ls.as_mut_ptr(), std::ptr::null_mut()), "execute");
                    let took = t0.elapsed();
                    let done = std::ptr::read_volatile(&buf[0]) == 9;
                    if mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS {
                        assert!(took >= std::time::Duration::from_millis(250) && done, "blocked until done ({took:?})");
                    } else {
                        assert!(took < std::time::Duration::from_millis(250) && !done, "returned at once ({took:?})");
                    }
                    ok(signaller.join().unwrap(), "signal");
                    ok(a.zeCommandQueueSynchronize(q, u64::MAX), "sync");
                    assert_eq!(std::ptr::read_volatile(&buf[255]), 9);
                }

                // 4. zeMemAllocDevice alignments (compute-runtime checks none; SVMAllocsManager
                //    aligns device memory to at least 64 KiB): every value is accepted.
                let dd = dev_desc(std::ptr::null());
                for (align, want) in
                    [(0usize, 64usize << 10), (3, 64 << 10), (4096, 64 << 10), (1 << 20, 1 << 20), (3 << 16, 1 << 18)]
                {
                    let mut p: *mut c_void = std::ptr::null_mut();
                    ok(a.zeMemAllocDevice(g.ctx, &dd, 100, align, g.dev, &mut p), &format!("alignment {align}"));
                    assert_eq!(p as usize % want, 0, "alignment {align}: {p:?}");
                    free(g.ctx, p);
                }
                let mut p: *mut c_void = std::ptr::null_mut();
                assert_eq!(a.zeMemAllocDevice(g.ctx, &dd, 0, 64, g.dev, &mut p), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
            }
        });
    }

    #[test]
    fn exit_pending() {
        in_child("exit_pending", || {
            let a = api();
            let g = Gpu::new();
            let npu = drivers().1;
            let (nctx, ndev) = (context(npu), device_of(npu));
            let buf = Box::leak(Box::new([0u8; 64]));
            // SAFETY: valid handles, descriptors and out-parameters; `buf` is leaked.
            unsafe {
                let ev = events(g.ctx, 2);
                // A regular list on a queue and an immediate list, both behind never-signalled events.
                let q = g.queue(ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
                let l = g.list();
                let mut w = ev[0];
                ok(a.zeCommandListAppendWaitOnEvents(l, 1, &mut w), "wait");
                ok(fill(l, &mut buf[..], 1), "fill");
                ok(a.zeCommandListClose(l), "close");
                let mut ls = [l];
                ok(a.zeCommandQueueExecuteCommandLists(q, 1, ls.as_mut_ptr(), std::ptr::null_mut()), "execute");
                let imm = g.immediate();
                let mut w = ev[1];
                ok(a.zeCommandListAppendBarrier(imm, std::ptr::null_mut(), 1, &mut w), "barrier");
                ok(fill(imm, &mut buf[..], 2), "fill behind it");
                // The same on the NPU's queue.
                let nev = events(nctx, 1);
                let mut qd: ze_command_queue_desc_t = zeroed();
                qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
                let mut nq = std::ptr::null_mut();
                ok(a.zeCommandQueueCreate(nctx, ndev, &qd, &mut nq), "NPU queue");
                let mut ld: ze_command_list_desc_t = zeroed();
                ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
                let mut nl = std::ptr::null_mut();
                ok(a.zeCommandListCreate(nctx, ndev, &ld, &mut nl), "NPU list");
                let mut w = nev[0];
                ok(a.zeCommandListAppendBarrier(nl, std::ptr::null_mut(), 1, &mut w), "NPU barrier");
                ok(a.zeCommandListClose(nl), "close");
                let mut nls = [nl];
                ok(a.zeCommandQueueExecuteCommandLists(nq, 1, nls.as_mut_ptr(), std::ptr::null_mut()), "NPU execute");
                assert_eq!(a.zeCommandQueueSynchronize(q, 1_000_000), ZE_RESULT_NOT_READY);
                assert_eq!(a.zeCommandListHostSynchronize(imm, 1_000_000), ZE_RESULT_NOT_READY);
                assert_eq!(a.zeCommandQueueSynchronize(nq, 1_000_000), ZE_RESULT_NOT_READY);
                assert_eq!(buf[0], 0, "nothing ran");
            }
            // Then the process exits, nothing destroyed, the work still pending.
        });
    }
}
