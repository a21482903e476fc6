//! The SYCL shim and the Rust SYCL layer (feature `sycl`) against the real DPC++ 2026.2 runtime.
//!
//! # Processes
//! DPC++ picks its Level Zero adapter once per process (`SYCL_UR_USE_LEVEL_ZERO_V2`, read before SYCL
//! initialises), and the virtual Level Zero platform must be loaded before SYCL first opens the loader.
//! So every test that touches SYCL runs in a child process: a parent test re-executes this binary
//! (`std::env::current_exe()`) with `--exact <inner test> --nocapture` and the environment of the run
//! (adapter v1 or v2), and checks the child's exit status and that the inner test really ran. Inner
//! tests (module `inner`) return at once unless `NPU_SYCL_BRIDGE_SYCL_CHILD` marks them as child runs.
//!
//! # The virtual platform
//! Tests that need a GPU activate the virtual Level Zero platform
//! (`testkit::virtual_platform::activate()`, which loads the `libze_loader.so` cargo built with this
//! test: testkit depends on virtual-l0) and check its counters.
#![cfg(feature = "sycl")]

/// Marks a child run; its value is the adapter ("v1" or "v2") or "plain".
const CHILD_ENV: &str = "NPU_SYCL_BRIDGE_SYCL_CHILD";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    /// No adapter forced, no Level Zero loader path in the environment.
    Plain,
    V1,
    V2,
}

mod common;

/// Runs `inner::<name>` in a child process and asserts it passed and really ran.
fn run_child(name: &str, run: Run) {
    common::child::run_child(name, &format!("{run:?}"), &format!("SYCL-CHILD-DONE {name}"), |cmd| match run {
        Run::Plain => {
            cmd.env(CHILD_ENV, "plain").env_remove("LD_LIBRARY_PATH").env_remove("ZEL_LIBRARY_PATH");
        }
        Run::V1 => {
            cmd.env(CHILD_ENV, "v1").env("SYCL_UR_USE_LEVEL_ZERO_V2", "0");
        }
        Run::V2 => {
            cmd.env(CHILD_ENV, "v2").env("SYCL_UR_USE_LEVEL_ZERO_V2", "1");
        }
    });
}

/// One parent test per adapter for an inner test that needs the virtual platform.
macro_rules! gpu_test {
    ($name:ident, $v1:ident, $v2:ident) => {
        #[test]
        fn $v1() {
            run_child(stringify!($name), Run::V1);
        }
        #[test]
        fn $v2() {
            run_child(stringify!($name), Run::V2);
        }
    };
}

#[test]
fn platforms_without_a_level_zero_loader() {
    run_child("platforms_without_a_level_zero_loader", Run::Plain);
}

gpu_test!(level_zero_platform_listed, level_zero_platform_listed_v1, level_zero_platform_listed_v2);
gpu_test!(
    make_context_keep_usm_round_trips,
    make_context_keep_usm_round_trips_v1,
    make_context_keep_usm_round_trips_v2
);
gpu_test!(keep_leaves_the_context_alive, keep_leaves_the_context_alive_v1, keep_leaves_the_context_alive_v2);
gpu_test!(make_context_transfer, make_context_transfer_v1, make_context_transfer_v2);
gpu_test!(
    plain_context_and_argument_checks,
    plain_context_and_argument_checks_v1,
    plain_context_and_argument_checks_v2
);
gpu_test!(export_dma_buf_and_mmap_it, export_dma_buf_and_mmap_it_v1, export_dma_buf_and_mmap_it_v2);
gpu_test!(import_a_dma_buf, import_a_dma_buf_v1, import_a_dma_buf_v2);
gpu_test!(
    cross_driver_make_context_is_an_error,
    cross_driver_make_context_is_an_error_v1,
    cross_driver_make_context_is_an_error_v2
);

/// The tests that run inside the child processes.
mod inner {
    use std::any::Any;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use npu_sycl_bridge::level_zero as l0;
    use npu_sycl_bridge::ownership::Foreign;
    use npu_sycl_bridge::raw::{self, AsRaw};
    use npu_sycl_bridge::sycl::{
        self, Backend, ContextOrigin, DeviceType, ExportableDeviceMemory, ImportedMemory, NativeQueue, Platform, Queue,
        SyclContext, SyclDevice, SyclMemory, UsmBuffer, UsmKind,
    };
    use npu_sycl_bridge::ErrorKind;

    use testkit::virtual_platform::{self, VirtualPlatform};

    use super::CHILD_ENV;

    /// The run this child was started for, or `None` when the test binary runs normally.
    fn child() -> Option<String> {
        std::env::var(CHILD_ENV).ok()
    }

    fn done(name: &str) {
        println!("SYCL-CHILD-DONE {name}");
    }

    struct Gpu {
        vp: &'static VirtualPlatform,
        platform: Platform,
        device: SyclDevice,
        driver: l0::Driver,
    }

    /// Activates the virtual platform and returns the one Level Zero GPU.
    fn gpu() -> Gpu {
        let vp = virtual_platform::activate().expect("activate the virtual Level Zero platform");
        let platforms = sycl::platforms().expect("platforms");
        let l0_platforms: Vec<_> = platforms.iter().filter(|p| p.backend == Backend::LevelZero).collect();
        assert_eq!(l0_platforms.len(), 1, "expected one Level Zero platform, got {platforms:#?}");
        let platform = l0_platforms[0].clone();
        let devices = platform.devices().expect("devices");
        let device = devices
            .into_iter()
            .find(|d| d.device_type == DeviceType::Gpu)
            .unwrap_or_else(|| panic!("no GPU device on {platform:#?}"));
        let raw = platform.native_driver().expect("a Level Zero platform has a native driver");
        // SAFETY: the handle comes from SYCL's get_native of its Level Zero platform, which uses the
        // same (only) loader of this process.
        let driver = unsafe { raw::level_zero::driver(raw) };
        Gpu { vp, platform, device, driver }
    }

    fn adapter() -> String {
        child().unwrap_or_default()
    }

    fn pattern(n: usize, seed: u32) -> Vec<u32> {
        (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed)).collect()
    }

    #[test]
    fn platforms_without_a_level_zero_loader() {
        if child().is_none() {
            return;
        }
        let platforms = sycl::platforms().expect("get_platforms through the shim");
        let devices = sycl::devices().expect("devices through the shim");
        println!("platforms: {platforms:#?}\ndevices: {devices:#?}");
        if level_zero_sys::loader::is_loaded() {
            println!("note: a system Level Zero loader was found and loaded; not asserting an empty list");
        } else {
            assert!(platforms.is_empty(), "no Level Zero loader, yet platforms: {platforms:#?}");
            assert!(devices.is_empty());
        }
        // "None" is a normal answer, not an error.
        let bogus = 0x1000usize as level_zero_sys::ze_device_handle_t;
        assert!(SyclDevice::find_by_native(bogus).expect("lookup").is_none());
        let bogus = 0x2000usize as level_zero_sys::ze_driver_handle_t;
        assert!(Platform::find_by_native_driver(bogus).expect("lookup").is_none());
        assert!(SyclDevice::find_by_native(std::ptr::null_mut()).expect("lookup").is_none());
        done("platforms_without_a_level_zero_loader");
    }

    #[test]
    fn level_zero_platform_listed() {
        if child().is_none() {
            return;
        }
        let g = gpu();
        println!("adapter {}: {:#?}\n{:#?}", adapter(), g.platform, g.device);
        assert!(g.platform.device_count >= 1);
        assert_eq!(g.device.vendor_id, 0x8086);
        assert!(g.device.is_level_zero());
        assert_eq!(g.device.native_driver(), g.platform.native_driver());
        let native = g.device.native_device().expect("native device");
        assert_eq!(SyclDevice::find_by_native(native).unwrap().as_ref(), Some(&g.device));
        let p = Platform::find_by_native_driver(g.platform.native_driver().unwrap()).unwrap();
        assert_eq!(p.as_ref(), Some(&g.platform));
        // The NPU has its own driver; SYCL never lists it, and looking it up is a normal "none".
        let mut saw_npu = false;
        for driver in l0::Driver::all().expect("L0 drivers") {
            for dev in driver.devices().expect("L0 devices") {
                let props = dev.properties().expect("device properties");
                let found = SyclDevice::find_by_native(dev.as_raw()).expect("lookup");
                if props.device_type == l0::DeviceType::Gpu {
                    assert_eq!(found.as_ref(), Some(&g.device));
                } else {
                    saw_npu = true;
                    assert!(found.is_none(), "a non-GPU L0 device is a SYCL device: {found:?}");
                    assert!(Platform::find_by_native_driver(driver.as_raw()).unwrap().is_none());
                }
            }
        }
        println!("NPU driver seen through L0: {saw_npu}");
        done("level_zero_platform_listed");
    }

    /// Round trips through every USM kind on `queue`.
    fn usm_round_trips(ctx: &Arc<SyclContext>, device: &SyclDevice, queue: &Queue) {
        for kind in [UsmKind::Host, UsmKind::Shared, UsmKind::Device] {
            for (len, align) in [(4096usize, 4096usize), (1000, 64), (3 << 16, 0)] {
                let mut buf = UsmBuffer::new(ctx, device, kind, len, align).expect("USM allocation");
                assert_eq!(buf.len(), len);
                assert_eq!(buf.kind(), kind);
                if align != 0 {
                    assert_eq!(buf.as_ptr() as usize % align, 0, "{kind:?} not aligned to {align}");
                }
                assert_eq!(buf.pointer_kind().unwrap(), Some(kind), "get_pointer_type of {kind:?}");
                assert_eq!(ctx.pointer_kind(buf.as_ptr().cast()).unwrap(), Some(kind));
                let n = len / 4;
                let data = pattern(n, len as u32);
                buf.copy_from_slice(queue, &data).expect("copy_from_slice");
                let back: Vec<u32> = buf.copy_to_vec(queue).expect("copy_to_vec");
                assert_eq!(back, data, "{kind:?} round trip");
                buf.fill(queue, 0xAB).expect("memset");
                let bytes: Vec<u8> = buf.copy_to_vec(queue).expect("copy_to_vec");
                assert!(bytes.iter().all(|&b| b == 0xAB), "{kind:?} memset");
                if kind.is_host_accessible() {
                    // SAFETY: host/shared USM is host-accessible; nothing is in flight (fill waited).
                    let direct = unsafe { std::slice::from_raw_parts(buf.as_ptr(), len) };
                    assert!(direct.iter().all(|&b| b == 0xAB), "{kind:?} memset seen by the host");
                }
                // Partial write at an offset and a typed read back.
                queue.write(&mut buf, 8, &[1u16, 2, 3]).unwrap();
                let mut four = [0u16; 4];
                queue.read(&buf, 6, &mut four).unwrap();
                assert_eq!(four, [0xABAB, 1, 2, 3]);
                let too_long = vec![0u8; len + 1];
                let e = buf.copy_from_slice(queue, &too_long).unwrap_err();
                assert!(matches!(e.kind(), ErrorKind::Size { .. }), "{e:?}");
            }
        }
        let on_stack = 0u64;
        assert_eq!(ctx.pointer_kind(std::ptr::addr_of!(on_stack).cast()).unwrap(), None, "plain memory is unknown");
        // Device → shared copy through the queue.
        let mut src = UsmBuffer::new(ctx, device, UsmKind::Device, 4096, 64).unwrap();
        let mut dst = UsmBuffer::new(ctx, device, UsmKind::Shared, 4096, 64).unwrap();
        let data = pattern(1024, 7);
        src.copy_from_slice(queue, &data).unwrap();
        dst.fill(queue, 0).unwrap();
        queue.copy(&src, &mut dst, 4096).unwrap();
        assert_eq!(dst.copy_to_vec::<u32>(queue).unwrap(), data);
        drop((src, dst));
        queue.wait().expect("no deferred errors");
        assert!(ctx.take_deferred_errors().is_empty());
    }

    /// Sets a flag when dropped: the shape of wgpu-hal's drop callback.
    struct DropFlag(Arc<AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn make_context_keep_usm_round_trips() {
        if child().is_none() {
            return;
        }
        let g = gpu();
        let live_before = g.vp.counter("gpu.live_allocations");
        let copied_before = g.vp.counter("gpu.bytes_copied");
        let l0ctx = Arc::new(l0::L0Context::create(g.driver).expect("zeContextCreate"));
        let keep_alive: Arc<dyn Any + Send + Sync> = l0ctx.clone();
        // SAFETY: l0ctx is a live context of the GPU's driver, kept alive by the keep-alive we pass.
        let ctx = unsafe {
            SyclContext::from_level_zero(
                l0ctx.as_raw(),
                std::slice::from_ref(&g.device),
                Foreign::Borrowed { owner: Some(keep_alive) },
            )
        }
        .expect("make_context(keep)");
        assert_eq!(ctx.origin(), ContextOrigin::LevelZeroKeep);
        assert!(ctx.has_owner());
        assert_eq!(ctx.native().unwrap(), l0ctx.as_raw());
        assert_eq!(ctx.runtime_device_count().unwrap(), 1);
        assert_eq!(ctx.devices(), std::slice::from_ref(&g.device));
        let queue = Queue::new(&ctx, &g.device).expect("queue");
        let native = queue.native().expect("native queue");
        println!("adapter {}: native queue {native:?}", adapter());
        // Also proves the child really runs the adapter it was started for.
        match (adapter().as_str(), native) {
            // v1 uses immediate lists too with the compute-runtime builds of the laptop profiles.
            ("v1", NativeQueue::CommandQueue(h)) => assert!(!h.is_null()),
            ("v1", NativeQueue::CommandList(h)) => assert!(!h.is_null()),
            ("v2", NativeQueue::CommandList(h)) => assert!(!h.is_null()),
            (a, n) => panic!("adapter {a}: unexpected native queue {n:?} (v2 gives an immediate list)"),
        }
        usm_round_trips(&ctx, &g.device, &queue);
        assert!(g.vp.counter("gpu.bytes_copied") > copied_before, "the copies went through the GPU driver");
        drop(queue);
        drop(ctx);
        assert_eq!(Arc::strong_count(&l0ctx), 1, "the keep-alive was released with the SYCL context");
        assert_eq!(
            g.vp.counter("gpu.live_allocations"),
            live_before,
            "every USM allocation (ours and the runtime's pools) was freed by the time the context is gone"
        );
        done("make_context_keep_usm_round_trips");
    }

    #[test]
    fn keep_leaves_the_context_alive() {
        if child().is_none() {
            return;
        }
        let g = gpu();
        let l0ctx = Arc::new(l0::L0Context::create(g.driver).expect("zeContextCreate"));
        let dropped = Arc::new(AtomicBool::new(false));
        {
            // SAFETY: l0ctx is a live context of the GPU's driver and outlives the SYCL context (we hold
            // it here until the end of the test).
            let ctx = unsafe {
                SyclContext::from_level_zero(
                    l0ctx.as_raw(),
                    std::slice::from_ref(&g.device),
                    Foreign::Borrowed { owner: Some(Arc::new(DropFlag(dropped.clone()))) },
                )
            }
            .expect("make_context(keep)");
            let queue = Queue::new(&ctx, &g.device).unwrap();
            let mut buf = UsmBuffer::new(&ctx, &g.device, UsmKind::Shared, 1 << 16, 4096).unwrap();
            buf.fill(&queue, 1).unwrap();
            let host = UsmBuffer::new(&ctx, &g.device, UsmKind::Host, 4096, 64).unwrap();
            drop((buf, host));
            // The queue holds the context: the keep-alive is still held.
            drop(ctx);
            assert!(!dropped.load(Ordering::SeqCst), "the queue keeps the context (and the keep-alive)");
            queue.wait().unwrap();
        }
        assert!(dropped.load(Ordering::SeqCst), "the drop callback ran once SYCL was done");
        // The ze_context is still ours and alive.
        l0ctx.status().expect("zeContextGetStatus after the sycl::context is gone");
        let a = l0ctx.alloc_host(4096, 64, l0::HostMemFlags::default()).expect("allocation on the kept context");
        drop(a);
        let a = l0ctx.alloc_shared(unsafe_device(&g), 4096, 64).expect("shared allocation on the kept context");
        drop(a);
        // Keep without a keep-alive: the caller guarantees the lifetime.
        // SAFETY: l0ctx outlives ctx2 (dropped just below).
        let ctx2 = unsafe {
            SyclContext::from_level_zero(
                l0ctx.as_raw(),
                std::slice::from_ref(&g.device),
                Foreign::Borrowed { owner: None },
            )
        }
        .unwrap();
        assert!(!ctx2.has_owner());
        drop(ctx2);
        l0ctx.status().expect("still alive");
        done("keep_leaves_the_context_alive");
    }

    /// The L0 device of the SYCL GPU.
    fn unsafe_device(g: &Gpu) -> l0::L0Device {
        // SAFETY: the handle is SYCL's get_native of its device, of driver `g.driver`.
        unsafe { raw::level_zero::device(g.device.native_device().unwrap(), g.driver) }
    }

    #[test]
    fn make_context_transfer() {
        if child().is_none() {
            return;
        }
        let g = gpu();
        let api = level_zero_sys::loader::api().expect("L0 loader");
        let desc = level_zero_sys::ze_context_desc_t {
            stype: level_zero_sys::ZE_STRUCTURE_TYPE_CONTEXT_DESC,
            pNext: std::ptr::null(),
            flags: 0,
        };
        let mut raw: level_zero_sys::ze_context_handle_t = std::ptr::null_mut();
        // SAFETY: a valid driver handle, a valid descriptor and out pointer.
        let r = unsafe { api.zeContextCreate(g.driver.as_raw(), &desc, &mut raw) };
        assert_eq!(r, level_zero_sys::ZE_RESULT_SUCCESS, "zeContextCreate");
        // SAFETY: `raw` is a fresh context of the GPU's driver; ownership moves to SYCL here and we never
        // touch the handle again after the context is dropped.
        let ctx = unsafe { SyclContext::from_level_zero(raw, std::slice::from_ref(&g.device), Foreign::Owned) }
            .expect("make_context(transfer)");
        assert_eq!(ctx.origin(), ContextOrigin::LevelZeroTransfer);
        assert!(!ctx.has_owner());
        assert_eq!(ctx.native().unwrap(), raw);
        let queue = Queue::new(&ctx, &g.device).unwrap();
        let mut buf = UsmBuffer::new(&ctx, &g.device, UsmKind::Shared, 4096, 4096).unwrap();
        let data = pattern(1024, 99);
        buf.copy_from_slice(&queue, &data).unwrap();
        assert_eq!(buf.copy_to_vec::<u32>(&queue).unwrap(), data);
        drop(buf);
        drop(queue);
        drop(ctx); // SYCL destroys the ze_context (zeContextDestroy)
        done("make_context_transfer");
    }

    #[test]
    fn plain_context_and_argument_checks() {
        if child().is_none() {
            return;
        }
        let g = gpu();
        let ctx = SyclContext::new(&g.device).expect("sycl::context(device)");
        assert_eq!(ctx.origin(), ContextOrigin::Sycl);
        assert!(!ctx.native().unwrap().is_null());
        let queue = Queue::new(&ctx, &g.device).unwrap();
        usm_round_trips(&ctx, &g.device, &queue);
        // Argument checks are errors, not crashes.
        let e = UsmBuffer::new(&ctx, &g.device, UsmKind::Shared, 0, 64).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument);
        let e = UsmBuffer::new(&ctx, &g.device, UsmKind::Shared, 64, 48).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument);
        // SAFETY: null is rejected before any use.
        let e = unsafe {
            SyclContext::from_level_zero(std::ptr::null_mut(), std::slice::from_ref(&g.device), Foreign::Owned)
        }
        .unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument);
        // A Level Zero failure under the runtime is an error, not a crash or a null pointer.
        g.vp.inject_fault("zeMemAllocShared", 1, 0x7000_0002).unwrap(); // OUT_OF_HOST_MEMORY
        let e = UsmBuffer::new(&ctx, &g.device, UsmKind::Shared, 4096, 64).unwrap_err();
        println!("adapter {}: injected failure: {e}", adapter());
        assert_eq!(e.kind(), &ErrorKind::Sycl);
        g.vp.clear_faults();
        UsmBuffer::new(&ctx, &g.device, UsmKind::Shared, 4096, 64).expect("allocations work again");
        // Memory of another context cannot be used with this queue.
        let other = SyclContext::new(&g.device).unwrap();
        let mut foreign = UsmBuffer::new(&other, &g.device, UsmKind::Shared, 64, 64).unwrap();
        let e = queue.fill(&mut foreign, 0).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument);
        // Zero-sized `Pod` elements (`[T; 0]`): a Vec of them has no buffer to copy into, so reading
        // the memory as such elements is an error, not a memcpy to a dangling pointer.
        let buf = UsmBuffer::new(&ctx, &g.device, UsmKind::Shared, 64, 64).unwrap();
        let e = queue.read_to_vec::<[u32; 0], _>(&buf).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains("zero-sized"), "{e}");
        let e = buf.copy_to_vec::<[u8; 0]>(&queue).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument, "{e}");
        done("plain_context_and_argument_checks");
    }

    fn mmap_fd(fd: &OwnedFd, len: usize, write: bool) -> *mut u8 {
        let prot = if write { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // SAFETY: mapping a file descriptor we hold; the result is checked.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        assert_ne!(p, libc::MAP_FAILED, "mmap of the dma-buf fd: {}", std::io::Error::last_os_error());
        p.cast()
    }

    #[test]
    fn export_dma_buf_and_mmap_it() {
        if child().is_none() {
            return;
        }
        let g = gpu();
        let l0ctx = Arc::new(l0::L0Context::create(g.driver).unwrap());
        // The safe form: the Arc is the keep-alive.
        let ctx = SyclContext::from_level_zero_context(&l0ctx, std::slice::from_ref(&g.device)).unwrap();
        assert_eq!(ctx.origin(), ContextOrigin::LevelZeroKeep);
        let queue = Queue::new(&ctx, &g.device).unwrap();
        let len = 1 << 16;
        let exports_before = g.vp.counter("gpu.exports.dma_buf");
        let mut mem = ExportableDeviceMemory::new(&ctx, &g.device, len, 4096).expect("alloc_exportable_device_mem");
        let live_with_mem = g.vp.counter("gpu.live_allocations");
        let data = pattern(len / 4, 0x5eed);
        queue.write(&mut mem, 0, &data).expect("write to exportable memory");
        let fd = mem.export_dma_buf().expect("export dma-buf");
        let fd2 = mem.export_dma_buf().expect("second export");
        assert_ne!(fd.as_raw_fd(), fd2.as_raw_fd(), "a new fd per export");
        assert_eq!(g.vp.counter("gpu.exports.dma_buf"), exports_before + 2);
        drop(fd2); // ours to close
        let p = mmap_fd(&fd, len, true);
        {
            // SAFETY: the mapping is `len` bytes and nothing else writes it while we read.
            let seen = unsafe { std::slice::from_raw_parts(p as *const u32, len / 4) };
            assert_eq!(seen, &data[..], "the bytes SYCL wrote, seen through the dma-buf");
            // And the other way: a CPU write through the mapping is seen by SYCL.
            // SAFETY: in-bounds write to our shared mapping.
            unsafe { *(p as *mut u32) = 0xdead_beef };
        }
        let mut first = [0u32; 1];
        queue.read(&mem, 0, &mut first).unwrap();
        assert_eq!(first[0], 0xdead_beef);
        // SAFETY: unmapping what we mapped.
        unsafe { libc::munmap(p.cast(), len) };
        drop(mem);
        assert_eq!(g.vp.counter("gpu.live_allocations"), live_with_mem - 1, "free_exportable_memory ran in Drop");
        // The exported fd stays valid (and ours) after the allocation is freed.
        // SAFETY: fcntl on an fd we own.
        assert!(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) } >= 0);
        drop(fd);
        queue.wait().unwrap();
        done("export_dma_buf_and_mmap_it");
    }

    #[test]
    fn import_a_dma_buf() {
        if child().is_none() {
            return;
        }
        let g = gpu();
        let ctx = SyclContext::new(&g.device).unwrap();
        let queue = Queue::new(&ctx, &g.device).unwrap();
        let len = 1 << 16;
        // A memfd no driver exported is not a dma-buf: the GPU driver's PRIME import refuses it.
        // SAFETY: memfd_create with a valid name; the fd is checked and owned below.
        let raw = unsafe { libc::memfd_create(c"sycl-import-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(raw >= 0);
        // SAFETY: a fresh fd we own.
        let plain = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: resizing our memfd.
        assert_eq!(unsafe { libc::ftruncate(plain.as_raw_fd(), len as libc::off_t) }, 0);
        let err = ImportedMemory::import_dma_buf(&ctx, &g.device, plain, len).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::Sycl, "{err}");
        // A real dma-buf: exported by the GPU driver.
        let source = ExportableDeviceMemory::new(&ctx, &g.device, len, 0).unwrap();
        let memfd = source.export_dma_buf().unwrap();
        let p = mmap_fd(&memfd, len, true);
        let data = pattern(len / 4, 0x1234);
        // SAFETY: the mapping is `len` bytes; nobody else uses it yet.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr().cast::<u8>(), p, len) };
        let imports_before = g.vp.counter("gpu.imports.dma_buf");
        let mut imported = ImportedMemory::import_dma_buf(&ctx, &g.device, memfd.try_clone().unwrap(), len)
            .expect("import_external_memory + map_external_linear_memory");
        assert_eq!(imported.len(), len);
        assert_eq!(g.vp.counter("gpu.imports.dma_buf"), imports_before + 1);
        let seen: Vec<u32> = queue.read_to_vec(&imported).expect("read the import");
        assert_eq!(seen, data, "SYCL sees the bytes the test wrote into the memfd");
        let data2 = pattern(len / 4, 0x4321);
        queue.write(&mut imported, 0, &data2).unwrap();
        // SAFETY: the queue waited; reading our mapping.
        let cpu = unsafe { std::slice::from_raw_parts(p as *const u32, len / 4) };
        assert_eq!(cpu, &data2[..], "the memfd sees what SYCL wrote");
        // The import keeps its own fd open until after release.
        let imported_fd = imported.fd().as_raw_fd();
        drop(imported);
        // SAFETY: fcntl on a number: after the drop the import's fd is closed.
        assert!(unsafe { libc::fcntl(imported_fd, libc::F_GETFD) } < 0 || imported_fd == memfd.as_raw_fd());
        // SAFETY: unmapping what we mapped.
        unsafe { libc::munmap(p.cast(), len) };
        queue.wait().unwrap();
        assert!(ctx.take_deferred_errors().is_empty());
        done("import_a_dma_buf");
    }

    #[test]
    fn cross_driver_make_context_is_an_error() {
        if child().is_none() {
            return;
        }
        let g = gpu();
        let other = l0::Driver::all()
            .expect("L0 drivers")
            .into_iter()
            .find(|d| d.as_raw() != g.driver.as_raw())
            .expect("a second Level Zero driver (the virtual NPU's)");
        let npu_ctx = Arc::new(l0::L0Context::create(other).expect("context of the other driver"));
        for ownership in [Foreign::Borrowed { owner: Some(npu_ctx.clone()) }, Foreign::Borrowed { owner: None }] {
            // SAFETY: a live context (of another driver: that is the point); kept alive by npu_ctx.
            let r =
                unsafe { SyclContext::from_level_zero(npu_ctx.as_raw(), std::slice::from_ref(&g.device), ownership) };
            let e = r.expect_err("make_context with a context of another driver must fail");
            println!("adapter {}: {e}", adapter());
            assert_eq!(e.kind(), &ErrorKind::Sycl);
            assert!(e.to_string().contains("does not accept device"), "the C++ what() text is kept: {e}");
        }
        let e = SyclContext::from_level_zero_context(&npu_ctx, std::slice::from_ref(&g.device)).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidArgument, "{e}");
        assert_eq!(Arc::strong_count(&npu_ctx), 1, "the keep-alive was not leaked on error");
        npu_ctx.status().expect("the other driver's context is untouched");
        // The process is fine: a correct context still works.
        let ctx = SyclContext::new(&g.device).unwrap();
        let queue = Queue::new(&ctx, &g.device).unwrap();
        let mut buf = UsmBuffer::new(&ctx, &g.device, UsmKind::Shared, 4096, 64).unwrap();
        buf.fill(&queue, 3).unwrap();
        done("cross_driver_make_context_is_an_error");
    }
}
