//! The safe Level Zero layer against the virtual platform: discovery, owned and borrowed contexts,
//! allocation queries, allocations, dma-buf export and import, and error reporting.
//!
//! Every test calls `vp::activate()` first (`testkit::virtual_platform::activate()`).

use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use npu_sycl_bridge::level_zero::{
    DeviceType, Driver, ExternalMemoryTypes, HostMemFlags, L0Context, MemoryType, INTEL_NPU_DRIVER_UUID,
};
use npu_sycl_bridge::npu::LaptopGeneration;
use npu_sycl_bridge::ownership::Foreign;
use npu_sycl_bridge::raw::{self, AsRaw};
use npu_sycl_bridge::ErrorKind;

mod common;

/// The first device of a type, with its driver.
use common::npu::l0_device as find;

/// The virtual platform: activated first in every test.
mod vp {
    use testkit::virtual_platform::{self, VirtualPlatform};

    pub fn activate() -> npu_sycl_bridge::Result<&'static VirtualPlatform> {
        virtual_platform::activate()
    }
    pub fn counter(name: &str) -> npu_sycl_bridge::Result<u64> {
        virtual_platform::activate()?.try_counter(name)
    }
    pub fn fault_inject(function: &str, nth: u64, result: u32) -> npu_sycl_bridge::Result<()> {
        virtual_platform::activate()?.inject_fault(function, nth, result)
    }
}

/// Counter-checking tests run one at a time (the counters are process-wide).
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn counter(name: &str) -> u64 {
    vp::counter(name).unwrap_or_else(|e| panic!("counter {name}: {e}"))
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn discovers_the_gpu_and_npu_drivers_with_their_properties() {
    let _s = serial();
    vp::activate().unwrap();
    let drivers = Driver::all().unwrap();
    assert!(drivers.len() >= 2, "{drivers:?}");
    assert_eq!(Driver::all().unwrap(), drivers, "the same handles every time");

    let (gpu_driver, gpu) = find(DeviceType::Gpu);
    let (npu_driver, npu) = find(DeviceType::Vpu);
    assert_ne!(gpu_driver, npu_driver, "one driver per device type");

    let gp = gpu_driver.properties().unwrap();
    let np = npu_driver.properties().unwrap();
    assert_eq!(np.uuid, INTEL_NPU_DRIVER_UUID);
    assert_ne!(gp.uuid, INTEL_NPU_DRIVER_UUID);
    assert_ne!(gp.driver_version, np.driver_version);
    assert_eq!(gpu_driver.api_version().unwrap().major, 1);
    assert_eq!(npu_driver.api_version().unwrap().major, 1);

    let exts = npu_driver.extensions().unwrap();
    assert!(exts.iter().any(|e| e.name == "ZE_extension_graph"), "{exts:?}");
    assert!(npu_driver.has_extension("ZE_experimental_mutable_command_list").unwrap());

    let dp = npu.properties().unwrap();
    assert_eq!(dp.vendor_id, 0x8086);
    assert!(!dp.name.is_empty());
    assert_eq!(npu.driver(), npu_driver);
    let gdp = gpu.properties().unwrap();
    assert_eq!(gdp.device_type, DeviceType::Gpu);
    assert_ne!(gdp.uuid, dp.uuid);

    let next = npu.external_memory_properties().unwrap();
    assert!(next.import.contains(ExternalMemoryTypes::DMA_BUF), "{next:?}");
    // User-memory import (STANDARD_ALLOCATION) exists on NPU 40xx+ only (the profile's generation).
    let userptr = LaptopGeneration::from_npu_device_id(dp.device_id).is_some_and(|g| g.can_import_user_memory())
        && std::env::var("VL0_NPU_USERPTR").as_deref() != Ok("0");
    assert_eq!(next.import.contains(ExternalMemoryTypes::STANDARD_ALLOCATION), userptr, "{next:?}");
    assert_eq!(format!("{:?}", next.import).contains("STANDARD_ALLOCATION"), userptr);
    let gext = gpu.external_memory_properties().unwrap();
    assert!(gext.export.contains(ExternalMemoryTypes::DMA_BUF), "{gext:?}");

    for dev in [gpu, npu] {
        let groups = dev.queue_groups().unwrap();
        assert!(groups.iter().any(|g| g.is_compute() && g.num_queues >= 1), "{groups:?}");
        assert!(groups.iter().enumerate().all(|(i, g)| g.ordinal as usize == i));
    }
}

#[test]
fn owned_contexts_are_destroyed_once_and_borrowed_ones_never() {
    let _s = serial();
    vp::activate().unwrap();
    let (driver, device) = find(DeviceType::Gpu);
    let owned = L0Context::create(driver).unwrap();
    assert!(owned.is_owned());
    owned.status().unwrap();

    // A borrowed wrapper of the same handle: dropping it leaves the context alive.
    // SAFETY: `owned` outlives `borrowed` and is a context of `driver`.
    let borrowed = unsafe { raw::level_zero::context(owned.as_raw(), driver, Foreign::Borrowed { owner: None }) };
    assert!(!borrowed.is_owned());
    assert_eq!(borrowed.as_raw(), owned.as_raw());
    drop(borrowed);
    owned.status().unwrap();
    let owned = Arc::new(owned);
    let mem = owned.alloc_host(4096, 4096, HostMemFlags::NONE).unwrap();
    assert_eq!(owned.memory_properties(mem.as_ptr()).unwrap().kind, MemoryType::Host);
    drop(mem);

    // with_owner: the owner is dropped exactly when the wrapper is.
    struct Owner(Arc<AtomicUsize>);
    impl Drop for Owner {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    // SAFETY: `owned` (kept alive below) is a live context of `driver`.
    let b = Arc::new(unsafe {
        raw::level_zero::context(owned.as_raw(), driver, Foreign::borrowed_by(Owner(drops.clone())))
    });
    let m = b.alloc_device(device, 8192, 0).unwrap();
    drop(b);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "an allocation keeps its context (and the owner) alive");
    drop(m);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    owned.status().unwrap();

    // Transfer: an adopted handle is destroyed by Drop.
    let raw = L0Context::create(driver).unwrap();
    let h = raw.as_raw();
    std::mem::forget(raw);
    // SAFETY: `h` is a live context nobody else destroys (its creator was forgotten).
    let adopted = unsafe { raw::level_zero::context(h, driver, Foreign::Owned) };
    assert!(adopted.is_owned());
    drop(adopted);
}

#[test]
fn allocation_queries_and_host_device_round_trips() {
    let _s = serial();
    vp::activate().unwrap();
    let (driver, gpu) = find(DeviceType::Gpu);
    let live0 = counter("gpu.live_allocations");
    let ctx = Arc::new(L0Context::create(driver).unwrap());

    let mut host = ctx.alloc_host(10_000, 4096, HostMemFlags::BIAS_CACHED).unwrap();
    assert_eq!(host.len(), 10_000);
    assert_eq!(host.as_ptr() as usize % 4096, 0);
    let info = host.info().unwrap();
    assert_eq!(info.kind, MemoryType::Host);
    assert_ne!(info.id, 0);
    assert!(info.page_size > 0);
    // Interior pointers resolve to the same allocation.
    // SAFETY: in bounds of the 10,000-byte allocation.
    let inner = unsafe { host.as_ptr().cast::<u8>().add(5000) };
    assert_eq!(ctx.memory_properties(inner.cast()).unwrap().id, info.id);
    let (base, size) = ctx.address_range(inner.cast()).unwrap();
    assert_eq!(base, host.as_ptr());
    assert!(size >= 10_000);
    // Plain process memory is unknown to the driver.
    let local = [0u8; 64];
    let foreign = ctx.memory_properties(local.as_ptr().cast()).unwrap();
    assert_eq!((foreign.kind, foreign.id), (MemoryType::Unknown, 0));

    host.write(100, b"host bytes").unwrap();
    let mut back = [0u8; 10];
    host.read(100, &mut back).unwrap();
    assert_eq!(&back, b"host bytes");
    let e = host.write(9_995, b"too long").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Size { needed: 10_003, available: 10_000 }), "{e:?}");

    let mut dev = ctx.alloc_device(gpu, 1 << 16, 0).unwrap();
    let dinfo = dev.info().unwrap();
    assert_eq!(dinfo.kind, MemoryType::Device);
    assert_eq!(dinfo.device, Some(gpu));
    assert_ne!(dinfo.id, info.id);
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    dev.write(4096, &pattern).unwrap(); // a device copy through an immediate command list
    let mut got = vec![0u8; 4096];
    dev.read(4096, &mut got).unwrap();
    assert_eq!(got, pattern);

    let shared = ctx.alloc_shared(gpu, 4096, 64).unwrap();
    assert_eq!(shared.info().unwrap().kind, MemoryType::Shared);

    assert_eq!(counter("gpu.live_allocations"), live0 + 3);
    drop((host, dev, shared));
    assert_eq!(counter("gpu.live_allocations"), live0);
}

#[test]
fn dma_buf_export_and_import_share_the_same_pages() {
    let _s = serial();
    vp::activate().unwrap();
    let (gpu_driver, gpu) = find(DeviceType::Gpu);
    let (npu_driver, _npu) = find(DeviceType::Vpu);
    let fds0 = open_fds();
    let live0 = counter("gpu.live_allocations");
    let exports0 = counter("gpu.exports.dma_buf");
    let npu_imports0 = counter("npu.imports.dma_buf");
    {
        let exporter = Arc::new(L0Context::create(gpu_driver).unwrap());
        let mut mem = exporter.alloc_device_exportable(gpu, 3 * 4096, 4096).unwrap();
        mem.write(0, &[0xAB; 4096]).unwrap();
        let fds_alloc = open_fds(); // the virtual GPU backs exportable memory with a memfd
        let fd = mem.export_dma_buf().unwrap();
        assert_eq!(counter("gpu.exports.dma_buf"), exports0 + 1);
        assert!(fd.as_raw_fd() >= 0);
        assert_eq!(open_fds(), fds_alloc + 1, "the export is one new fd, owned by us");

        // Import on a second GPU context (device memory), borrowing the fd.
        let importer = Arc::new(L0Context::create(gpu_driver).unwrap());
        let imported = importer.import_dma_buf(Some(gpu), fd.as_fd(), 3 * 4096).unwrap();
        let mut first = [0u8; 16];
        imported.read(0, &mut first).unwrap();
        assert_eq!(first, [0xAB; 16]);
        // Written through the exporter after the import: the importer sees it (same pages).
        mem.write(8192, b"after import").unwrap();
        let mut seen = [0u8; 12];
        imported.read(8192, &mut seen).unwrap();
        assert_eq!(&seen, b"after import");

        // The NPU imports it as host memory, owning a dup of the fd.
        let npu_ctx = Arc::new(L0Context::create(npu_driver).unwrap());
        let dup = fd.try_clone().unwrap();
        let on_npu = npu_ctx.import_dma_buf_owned(None, dup, 3 * 4096).unwrap();
        assert_eq!(counter("npu.imports.dma_buf"), npu_imports0 + 1);
        assert!(on_npu.kind().is_host_accessible());
        let mut via_npu = [0u8; 12];
        on_npu.read(8192, &mut via_npu).unwrap();
        assert_eq!(&via_npu, b"after import");
        assert_eq!(open_fds(), fds_alloc + 2, "the owned import keeps its fd open");
        drop(on_npu);
        assert_eq!(open_fds(), fds_alloc + 1, "…and closes it once after zeMemFree");

        // Closing our fd after an import does not invalidate the import.
        drop(fd);
        let mut again = [0u8; 4];
        imported.read(0, &mut again).unwrap();
        assert_eq!(again, [0xAB; 4]);
    }
    assert_eq!(open_fds(), fds0, "no fd leaked");
    assert_eq!(counter("gpu.live_allocations"), live0, "no allocation leaked");
}

#[test]
fn errors_carry_the_result_and_the_call() {
    let _s = serial();
    vp::activate().unwrap();
    let (gpu_driver, gpu) = find(DeviceType::Gpu);
    let (npu_driver, _) = find(DeviceType::Vpu);
    let ctx = Arc::new(L0Context::create(gpu_driver).unwrap());

    // Injected out-of-memory on the next zeMemAllocHost.
    vp::fault_inject("zeMemAllocHost", 1, 0x7000_0002).unwrap();
    let e = ctx.alloc_host(4096, 0, HostMemFlags::NONE).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::LevelZero { result: 0x7000_0002, call: "zeMemAllocHost" });
    assert!(e.to_string().contains("ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY"), "{e}");
    ctx.alloc_host(4096, 0, HostMemFlags::NONE).unwrap(); // the fault fired once

    // A device of another driver is refused before Level Zero is called.
    let npu_ctx = Arc::new(L0Context::create(npu_driver).unwrap());
    let e = npu_ctx.alloc_device(gpu, 4096, 0).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidArgument, "{e}");

    // Importing something that is not a dma-buf (a pipe: no size, not mappable) fails cleanly.
    let fds0 = open_fds();
    let (r, w) = std::io::pipe().unwrap();
    let e = ctx.import_dma_buf_owned(Some(gpu), r.into(), 4096).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LevelZero { call: "zeMemAllocDevice", .. }), "{e:?}");
    drop(w);
    assert_eq!(open_fds(), fds0, "the owned fd is closed on error");

    // compute-runtime exports any host or device allocation and no shared USM; the NPU driver only
    // memory allocated exportable ("Buffer should be created as exportable": NOT_AVAILABLE).
    let plain = ctx.alloc_device(gpu, 4096, 0).unwrap();
    drop(plain.export_dma_buf().unwrap());
    let shared = ctx.alloc_shared(gpu, 4096, 0).unwrap();
    let e = shared.export_dma_buf().unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::LevelZero { result: 0x7800_0003, call: "zeMemGetAllocProperties" }, "{e}");
    let npu_plain = npu_ctx.alloc_host(4096, 0, HostMemFlags::NONE).unwrap();
    let e = npu_plain.export_dma_buf().unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::LevelZero { result: 0x7001_0001, call: "zeMemGetAllocProperties" }, "{e}");
    let (_, npu) = find(DeviceType::Vpu);
    let exportable = npu_ctx.alloc_host_exportable(npu, 4096, 4096).unwrap();
    drop(exportable.export_dma_buf().unwrap());
}

#[test]
fn a_free_that_fails_in_drop_is_returned_by_the_next_allocation() {
    let _s = serial();
    vp::activate().unwrap();
    let (gpu_driver, gpu) = find(DeviceType::Gpu);
    let ctx = Arc::new(L0Context::create(gpu_driver).unwrap());
    let invalid = npu_sycl_bridge::raw::level_zero::sys::ZE_RESULT_ERROR_INVALID_ARGUMENT;

    // Drop cannot return the failure of zeMemFree: the next allocation in the context does.
    let mem = ctx.alloc_host(4096, 0, HostMemFlags::NONE).unwrap();
    vp::fault_inject("zeMemFree", 1, invalid).unwrap();
    drop(mem);
    let e = ctx.alloc_device(gpu, 4096, 0).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::LevelZero { result: invalid, call: "zeMemFree" }, "{e}");
    assert!(e.to_string().contains("dropping the Host allocation"), "{e}");
    ctx.alloc_device(gpu, 4096, 0).expect("reported once, then allocations work again");

    // Or collect them without allocating.
    let mem = ctx.alloc_shared(gpu, 4096, 0).unwrap();
    vp::fault_inject("zeMemFree", 1, invalid).unwrap();
    drop(mem);
    let errors = ctx.take_deferred_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].kind(), &ErrorKind::LevelZero { result: invalid, call: "zeMemFree" });
    assert!(ctx.take_deferred_errors().is_empty());
    ctx.alloc_host(4096, 0, HostMemFlags::NONE).expect("nothing left to report");
}
