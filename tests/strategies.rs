//! The SYCL ⇄ NPU sharing strategies (`npu_sycl_bridge::strategy`) on the virtual platform, with the
//! real DPC++ 2026.2 runtime (adapter v1 **and** v2) and the real OpenVINO NPU plugin.
//!
//! Every strategy infers a reference model with data written through SYCL and results read back
//! through SYCL, and the outputs equal the CPU plugin's; zero-copy is proven with the virtual
//! platform's counters around the inferences (SYCL's own memcpys count as GPU copies, so only the
//! inferences are measured) and by a SYCL write after binding that the next inference sees.
//!
//! # Processes
//! As in `tests/sycl_shim.rs`: DPC++ picks its Level Zero adapter once per process, so each parent
//! test re-executes this binary with `--exact inner::<name>` and `SYCL_UR_USE_LEVEL_ZERO_V2=0|1`,
//! and checks that the child passed and really ran. Inner tests return at once unless
//! `NPU_SYCL_BRIDGE_STRATEGY_CHILD` marks a child run. Run `cargo build -p virtual-l0` first (as
//! `cargo xtask test` does).
#![cfg(feature = "sycl")]

/// Marks a child run; its value is the adapter ("v1" or "v2").
const CHILD_ENV: &str = "NPU_SYCL_BRIDGE_STRATEGY_CHILD";

mod common;

/// Runs `inner::<name>` in a child process with adapter `v2` (`false` = v1) and asserts it passed.
fn run_child(name: &str, v2: bool) {
    let adapter = if v2 { "v2" } else { "v1" };
    common::child::run_child(name, &format!("adapter {adapter}"), &format!("STRATEGY-CHILD-DONE {name}"), |cmd| {
        cmd.env(CHILD_ENV, adapter).env("SYCL_UR_USE_LEVEL_ZERO_V2", if v2 { "1" } else { "0" });
    });
}

/// One parent test per adapter.
macro_rules! both_adapters {
    ($name:ident, $v1:ident, $v2:ident) => {
        #[test]
        fn $v1() {
            run_child(stringify!($name), false);
        }
        #[test]
        fn $v2() {
            run_child(stringify!($name), true);
        }
    };
}

both_adapters!(
    card_path_on_the_npu_context_is_unsupported,
    card_path_on_the_npu_context_is_unsupported_v1,
    card_path_on_the_npu_context_is_unsupported_v2
);
both_adapters!(
    cross_driver_make_context_is_an_error,
    cross_driver_make_context_is_an_error_v1,
    cross_driver_make_context_is_an_error_v2
);
both_adapters!(
    card_path_on_a_gpu_driver_context_stops_at_the_npu_import,
    card_path_on_a_gpu_driver_context_stops_at_the_npu_import_v1,
    card_path_on_a_gpu_driver_context_stops_at_the_npu_import_v2
);
both_adapters!(dma_buf_matches_cpu_zero_copy, dma_buf_matches_cpu_zero_copy_v1, dma_buf_matches_cpu_zero_copy_v2);
both_adapters!(
    cpu_va_over_gpu_usm_is_unsupported_with_the_reason,
    cpu_va_over_gpu_usm_is_unsupported_with_the_reason_v1,
    cpu_va_over_gpu_usm_is_unsupported_with_the_reason_v2
);
both_adapters!(
    npu_to_sycl_copies_and_refuses_zero_copy,
    npu_to_sycl_copies_and_refuses_zero_copy_v1,
    npu_to_sycl_copies_and_refuses_zero_copy_v2
);
both_adapters!(
    shared_system_memory_where_the_npu_imports_it,
    shared_system_memory_where_the_npu_imports_it_v1,
    shared_system_memory_where_the_npu_imports_it_v2
);

/// Shared system memory on a GPU that reports shared-system USM (`VL0_GPU_SHARED_SYSTEM=1`): only
/// Xe2 and later have it (Lunar and Panther Lake); on Meteor/Arrow Lake the child runs without it.
fn run_child_with_system_usm(v2: bool) {
    let name = "shared_system_memory_where_the_npu_imports_it";
    let adapter = if v2 { "v2" } else { "v1" };
    let xe2 = matches!(std::env::var("VL0_PROFILE").as_deref(), Err(_) | Ok("lnl") | Ok("ptl"));
    if !xe2 {
        eprintln!("this profile's iGPU (Xe-LPG) never reports shared-system USM: the child runs without it");
    }
    let label = format!("adapter {adapter}, shared-system USM");
    common::child::run_child(name, &label, &format!("STRATEGY-CHILD-DONE {name}"), |cmd| {
        cmd.env(CHILD_ENV, adapter).env("SYCL_UR_USE_LEVEL_ZERO_V2", if v2 { "1" } else { "0" });
        if xe2 {
            cmd.env("VL0_GPU_SHARED_SYSTEM", "1");
        }
    });
}

#[test]
fn shared_system_memory_with_system_usm_v1() {
    run_child_with_system_usm(false);
}

#[test]
fn shared_system_memory_with_system_usm_v2() {
    run_child_with_system_usm(true);
}

both_adapters!(auto_picks_dma_buf_and_says_why, auto_picks_dma_buf_and_says_why_v1, auto_picks_dma_buf_and_says_why_v2);
both_adapters!(
    auto_serves_each_tensor_from_a_strategy_that_can,
    auto_serves_each_tensor_from_a_strategy_that_can_v1,
    auto_serves_each_tensor_from_a_strategy_that_can_v2
);
both_adapters!(
    npu_memory_exported_to_sycl_is_used_in_place,
    npu_memory_exported_to_sycl_is_used_in_place_v1,
    npu_memory_exported_to_sycl_is_used_in_place_v2
);
both_adapters!(
    pending_sycl_copies_overlap_inference_and_exclude_it,
    pending_sycl_copies_overlap_inference_and_exclude_it_v1,
    pending_sycl_copies_overlap_inference_and_exclude_it_v2
);
both_adapters!(
    the_programs_sycl_memory_through_the_one_import,
    the_programs_sycl_memory_through_the_one_import_v1,
    the_programs_sycl_memory_through_the_one_import_v2
);
/// One adapter is enough: what is counted is the crate's calls into OpenVINO, not SYCL's.
#[test]
fn sycl_copies_ask_nothing_of_openvino_v2() {
    run_child("sycl_copies_ask_nothing_of_openvino", true);
}
both_adapters!(
    sycl_access_is_sycl_memory_and_excludes_inference,
    sycl_access_is_sycl_memory_and_excludes_inference_v1,
    sycl_access_is_sycl_memory_and_excludes_inference_v2
);
both_adapters!(drops_in_any_order_are_sound, drops_in_any_order_are_sound_v1, drops_in_any_order_are_sound_v2);
both_adapters!(thousand_cycles_leak_nothing, thousand_cycles_leak_nothing_v1, thousand_cycles_leak_nothing_v2);

/// The tests that run inside the child processes.
mod inner {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use npu_sycl_bridge::level_zero as l0;
    use npu_sycl_bridge::npu::{NpuContext, NpuTensor};
    use npu_sycl_bridge::openvino::{
        Core, ElementType, ExternalContext, ExternalTensor, InferRequest, RemoteContext, RemoteTensor, Shape,
        TensorProperties, TensorType,
    };
    use npu_sycl_bridge::ownership::Foreign;
    use npu_sycl_bridge::raw::{self, AsRaw};
    use npu_sycl_bridge::strategy::{Auto, SharedTensor, Strategy, StrategyKind};
    use npu_sycl_bridge::sycl::{
        self, ContextOrigin, ExportableDeviceMemory, Queue, SyclContext, SyclMemory, UsmBuffer, UsmKind,
    };
    use npu_sycl_bridge::{ErrorKind, Path, Reason};
    use testkit::models::{self, ReferenceModel};

    use super::common::npu::{core, counter, l0_device, open_fds, other_input, NpuAndCpu};
    use super::common::sycl::sycl_gpu;
    use super::CHILD_ENV;

    fn child() -> bool {
        std::env::var(CHILD_ENV).is_ok()
    }

    fn adapter() -> String {
        std::env::var(CHILD_ENV).unwrap_or_default()
    }

    fn done(name: &str) {
        println!("STRATEGY-CHILD-DONE {name}");
    }

    /// The model compiled for the NPU and for the CPU, the NPU context, and the iGPU's SYCL context.
    struct Env {
        base: NpuAndCpu,
        gpu: sycl::SyclDevice,
        ctx: Arc<SyclContext>,
    }

    impl std::ops::Deref for Env {
        type Target = NpuAndCpu;
        fn deref(&self) -> &NpuAndCpu {
            &self.base
        }
    }

    fn env_with(core: &Core, m: ReferenceModel) -> Env {
        let base = NpuAndCpu::new(core, m);
        let gpu = sycl_gpu();
        let ctx = SyclContext::new(&gpu).expect("sycl::context(gpu)");
        Env { base, gpu, ctx }
    }

    fn env(m: ReferenceModel) -> Env {
        env_with(core(), m)
    }

    /// The virtual GPU's Level Zero driver, found through the Level Zero layer.
    fn gpu_driver() -> l0::Driver {
        l0_device(l0::DeviceType::Gpu).0
    }

    /// The graph-argument counter that proves the NPU ran on imported memory of this strategy.
    fn graph_arg_counter(kind: StrategyKind) -> Option<&'static str> {
        match kind {
            StrategyKind::CardPath | StrategyKind::CpuVa | StrategyKind::SharedSystem => Some("npu.graph_args.sysmem"),
            StrategyKind::DmaBuf => Some("npu.graph_args.dma_buf"),
            // The plugin's own memory: nothing imported; no NPU copy shows it ran in place.
            StrategyKind::NpuExport | StrategyKind::NpuToSycl => None,
        }
    }

    /// The copy counters that must not move during an inference.
    fn copies() -> (u64, u64) {
        (counter("gpu.bytes_copied"), counter("npu.bytes_copied"))
    }

    /// multi_io through `s`: inputs written with SYCL, outputs read with SYCL, equal to the CPU
    /// plugin; no copies during the inferences; a SYCL write after binding is seen without rebinding.
    fn run_multi_io(e: &Env, s: &Strategy) {
        let kind = s.kind();
        let (a, b) = (e.m.sample_input(0), e.m.sample_input(1));
        let mut ta = s.tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let mut tb = s.tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let tsum = s.tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        let tprod = s.tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
        assert_eq!(ta.kind(), kind);
        assert_eq!(ta.is_zero_copy(), s.is_zero_copy());
        assert_eq!(ta.byte_size(), 4096);
        assert!(Arc::ptr_eq(ta.sycl_context(), s.sycl_context()));
        ta.write(0, &a).unwrap();
        tb.write(0, &b).unwrap();
        if kind != StrategyKind::NpuToSycl {
            // The NPU's view of the tensor shows what SYCL wrote: the same bytes.
            assert_eq!(
                ta.npu_tensor().host_bytes().unwrap().to_vec(),
                a,
                "{kind}: SYCL's write seen by the NPU mapping"
            );
        }

        let mut r = e.request();
        r.set_input_tensor(0, ta.remote_tensor()).unwrap();
        r.set_input_tensor(1, tb.remote_tensor()).unwrap();
        r.set_output_tensor(0, tsum.remote_tensor()).unwrap();
        r.set_output_tensor(1, tprod.remote_tensor()).unwrap();
        let graph0 = graph_arg_counter(kind).map(counter);
        let inferences0 = counter("npu.inferences");
        let copies0 = copies();
        r.infer().unwrap();
        assert_eq!(copies(), copies0, "{kind}: no GPU or NPU copies during the inference");
        assert_eq!(counter("npu.inferences"), inferences0 + 1, "{kind}: ran on the virtual NPU");
        if let (Some(name), Some(g0)) = (graph_arg_counter(kind), graph0) {
            assert_eq!(counter(name), g0 + 4, "{kind}: the graph ran on the shared memory itself ({name})");
        }
        let outs = || vec![tsum.read_to_vec::<u8>().unwrap(), tprod.read_to_vec::<u8>().unwrap()];
        e.assert_matches_cpu_in(kind.as_str(), &[a.clone(), b.clone()], &outs());

        // SYCL writes a new input after binding: the next inference sees it without rebinding.
        let a2 = other_input(&e.m, 0);
        ta.write(0, &a2).unwrap();
        let copies1 = copies();
        r.infer().unwrap();
        assert_eq!(copies(), copies1, "{kind}: no copies during the second inference");
        if let (Some(name), Some(g0)) = (graph_arg_counter(kind), graph0) {
            assert_eq!(counter(name), g0 + 8, "{kind}: still the shared memory, nothing re-imported");
        }
        e.assert_matches_cpu_in(kind.as_str(), &[a2, b.clone()], &outs());

        // A partial SYCL write (the first 16 floats) and a typed partial SYCL read.
        let head: Vec<f32> = (0..16).map(|i| i as f32 * 0.25).collect();
        ta.write(0, &head).unwrap();
        r.infer().unwrap();
        let mut sum_head = [0f32; 16];
        tsum.read(0, &mut sum_head).unwrap();
        let b32: Vec<f32> = b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        for i in 0..16 {
            assert!(
                (sum_head[i] - (head[i] + b32[i])).abs() < 1e-3,
                "{kind}: sum[{i}] = {} ≠ {}",
                sum_head[i],
                head[i] + b32[i]
            );
        }
        // Past the end is a typed error.
        let e2 = ta.write(4000, &[0u8; 100]).unwrap_err();
        assert!(matches!(e2.kind(), ErrorKind::Size { needed: 4100, available: 4096 }), "{e2:?}");
        println!(
            "adapter {}: {kind}: inference equals CPU, no copies during inference, write-after-bind seen",
            adapter()
        );
    }

    // ---------------------------------------------------------------------------------------------
    // Card path
    // ---------------------------------------------------------------------------------------------

    #[test]
    fn card_path_on_the_npu_context_is_unsupported() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let err = Strategy::card_path(e.npu.level_zero_context(), &e.npu).unwrap_err();
        println!("adapter {}: {err}", adapter());
        assert_eq!(err.kind(), &ErrorKind::Unsupported { path: Path::CardPath, reason: Reason::NoSyclPlatform });
        // A short message, and the long story (why, and what works) kept apart.
        assert!(err.to_string().len() < 200 && err.explanation().is_some(), "{err:?}");
        let msg = format!("{err:#}");
        for needle in ["GPU device", "NPU", "INVALID_ARGUMENT", "dma-buf", "DmaBuf", "NpuToSycl", "cannot pin"] {
            assert!(
                msg.contains(needle),
                "the message explains why and names the working strategies ({needle}): {msg}"
            );
        }
        // The same through the general constructor.
        let err = Strategy::new(StrategyKind::CardPath, &e.npu, &e.ctx, &e.gpu).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::Unsupported { path: Path::CardPath, reason: Reason::NoSyclPlatform });
        // A context of its own on the NPU's driver: the same answer.
        let own = Arc::new(l0::L0Context::create(e.npu.driver()).unwrap());
        let err = Strategy::card_path(&own, &e.npu).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::Unsupported { path: Path::CardPath, reason: Reason::NoSyclPlatform });
        assert!(format!("{err:#}").contains("NPU's driver"), "{err}");
        assert_eq!(Arc::strong_count(&own), 1, "nothing kept on error");
        // The NPU's context is untouched.
        e.npu.level_zero_context().status().unwrap();
        done("card_path_on_the_npu_context_is_unsupported");
    }

    #[test]
    fn cross_driver_make_context_is_an_error() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let npu_l0 = e.npu.level_zero_context().clone();
        // The forum's snippet: make_context with the NPU plugin's L0_CONTEXT and the iGPU device.
        for keep_alive in [Some(npu_l0.clone() as Arc<dyn std::any::Any + Send + Sync>), None] {
            // SAFETY: deliberately breaks the "same driver" rule (that is the point); the handle is
            // live (the NpuContext and `npu_l0` keep the plugin's context alive) and kept with `keep`,
            // so nothing destroys it. The shim's probe must turn the mismatch into an error.
            let r = unsafe {
                SyclContext::from_level_zero(
                    npu_l0.as_raw(),
                    std::slice::from_ref(&e.gpu),
                    Foreign::Borrowed { owner: keep_alive },
                )
            };
            let err = r.expect_err("make_context with the NPU's context and a GPU device must fail");
            println!("adapter {}: {err}", adapter());
            assert_eq!(err.kind(), &ErrorKind::Sycl, "{err}");
        }
        // The safe form refuses before calling the runtime.
        let err = SyclContext::from_level_zero_context(&npu_l0, std::slice::from_ref(&e.gpu)).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::InvalidArgument, "{err}");
        e.npu.level_zero_context().status().expect("the plugin's context is untouched");
        // The process is fine: a strategy still works end to end.
        let s = Strategy::new(StrategyKind::DmaBuf, &e.npu, &e.ctx, &e.gpu).unwrap();
        run_multi_io(&e, &s);
        done("cross_driver_make_context_is_an_error");
    }

    #[test]
    fn card_path_on_a_gpu_driver_context_stops_at_the_npu_import() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let l0ctx = Arc::new(l0::L0Context::create(gpu_driver()).expect("zeContextCreate on the GPU's driver"));
        let card = Strategy::card_path(&l0ctx, &e.npu).expect("the card path over a context SYCL can wrap");
        assert_eq!(card.sycl_context().origin(), ContextOrigin::LevelZeroKeep);
        assert_eq!(card.sycl_context().native().unwrap(), l0ctx.as_raw(), "make_context used our handle");
        assert!(card.sycl_context().has_owner());
        assert!(Arc::ptr_eq(card.level_zero_context().unwrap(), &l0ctx));
        assert_eq!(card.device().native_driver(), Some(l0ctx.driver().as_raw()));
        // The NPU cannot import the memory: compute-runtime's shared USM is a mapping of GPU buffer
        // objects, which the NPU's kernel driver cannot pin (NPU 40xx+); NPU 37xx imports no
        // system memory at all. Either way a typed error that names what works, and nothing leaks.
        let (sysmem0, npu_live0) = (counter("npu.imports.sysmem"), counter("npu.live_allocations"));
        let err = card.probe().unwrap_err();
        println!("adapter {}: {err}", adapter());
        let reason =
            if e.npu.capabilities().sysmem_import { Reason::GpuUsmNotPinnable } else { Reason::NoSystemMemoryImport };
        assert_eq!(err.kind(), &ErrorKind::Unsupported { path: Path::CpuVa, reason }, "{err}");
        let why = if e.npu.capabilities().sysmem_import { "cannot pin" } else { "STANDARD_ALLOCATION" };
        assert!(format!("{err:#}").contains(why) && format!("{err:#}").contains("DmaBuf"), "{err}");
        assert_eq!(counter("npu.imports.sysmem"), sysmem0, "nothing was imported");
        assert_eq!(counter("npu.live_allocations"), npu_live0, "nothing was left behind");
        drop(card);
        // Everything made from the L0 context is gone: only our Arc is left, and the context is alive.
        assert_eq!(Arc::strong_count(&l0ctx), 1);
        l0ctx.status().unwrap();
        done("card_path_on_a_gpu_driver_context_stops_at_the_npu_import");
    }

    // ---------------------------------------------------------------------------------------------
    // dma-buf, CPU_VA, NPU → SYCL
    // ---------------------------------------------------------------------------------------------

    #[test]
    fn dma_buf_matches_cpu_zero_copy() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let fds0 = open_fds();
        let imports0 = counter("npu.imports.dma_buf");
        let exports0 = counter("gpu.exports.dma_buf");
        {
            let s = Strategy::new(StrategyKind::DmaBuf, &e.npu, &e.ctx, &e.gpu).unwrap();
            let t = s.tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
            assert_eq!(e.ctx.pointer_kind(t.sycl_ptr().cast()).unwrap(), Some(UsmKind::Device), "SYCL device memory");
            assert_eq!(
                t.remote_tensor().params().unwrap().mem_type,
                Some(npu_sycl_bridge::openvino::MemType::SharedBuf)
            );
            drop(t);
            run_multi_io(&e, &s);
        }
        assert_eq!(counter("npu.imports.dma_buf"), imports0 + 5, "one import per tensor, none per inference");
        assert_eq!(counter("gpu.exports.dma_buf"), exports0 + 5, "one export per tensor");
        assert_eq!(open_fds(), fds0, "each tensor closed its fd once");
        done("dma_buf_matches_cpu_zero_copy");
    }

    #[test]
    fn cpu_va_over_gpu_usm_is_unsupported_with_the_reason() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        // Warm up SYCL's USM pools (slabs it frees only with the context), then take the baseline.
        for usm in [UsmKind::Host, UsmKind::Shared] {
            drop(UsmBuffer::new(&e.ctx, &e.gpu, usm, 4096, 4096).unwrap());
        }
        let (sysmem0, npu_live0, gpu_live0) =
            (counter("npu.imports.sysmem"), counter("npu.live_allocations"), counter("gpu.live_allocations"));
        for usm in [UsmKind::Host, UsmKind::Shared] {
            if !e.npu.capabilities().sysmem_import {
                // NPU 37xx (Meteor/Arrow Lake) or a kernel without userptr: no CPU_VA at all.
                let err = Strategy::cpu_va(&e.npu, &e.ctx, &e.gpu, usm).unwrap_err();
                assert_eq!(
                    err.kind(),
                    &ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::NoSystemMemoryImport },
                    "{err}"
                );
                assert!(format!("{err:#}").contains("STANDARD_ALLOCATION"), "{err}");
                continue;
            }
            // NPU 40xx+: the import is tried and refused, as on hardware: compute-runtime's host and
            // shared USM are mappings of GPU buffer objects the NPU's kernel driver cannot pin.
            let s = Strategy::cpu_va(&e.npu, &e.ctx, &e.gpu, usm).unwrap();
            assert_eq!(s.usm_kind(), Some(usm));
            let err = s.tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap_err();
            println!("adapter {}: {usm:?}: {err}", adapter());
            assert_eq!(
                err.kind(),
                &ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::GpuUsmNotPinnable },
                "{err}"
            );
            for needle in ["cannot pin", "DmaBuf", "PageAlignedBuffer"] {
                assert!(format!("{err:#}").contains(needle), "{needle}: {err}");
            }
            let cause = std::error::Error::source(&err).expect("the plugin's error is kept as the source");
            assert!(cause.to_string().contains("OUT_OF_DEVICE_MEMORY"), "{cause}");
        }
        assert_eq!(counter("npu.imports.sysmem"), sysmem0, "nothing was imported");
        assert_eq!(counter("npu.live_allocations"), npu_live0, "no NPU allocation was left behind");
        assert_eq!(counter("gpu.live_allocations"), gpu_live0, "the USM was freed");
        let err = Strategy::cpu_va(&e.npu, &e.ctx, &e.gpu, UsmKind::Device).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::InvalidArgument, "{err}");
        done("cpu_va_over_gpu_usm_is_unsupported_with_the_reason");
    }

    #[test]
    fn npu_to_sycl_copies_and_refuses_zero_copy() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let s = Strategy::new(StrategyKind::NpuToSycl, &e.npu, &e.ctx, &e.gpu).unwrap();
        let mut t = s.tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
        assert!(!t.is_zero_copy());
        assert_eq!(e.ctx.pointer_kind(t.sycl_ptr().cast()).unwrap(), None, "SYCL sees a foreign pointer");
        // SYCL use in place is a typed error that explains and points elsewhere.
        let err = t.sycl_mut().unwrap_err();
        println!("adapter {}: {err:#}", adapter());
        assert_eq!(
            err.kind(),
            &ErrorKind::Unsupported { path: Path::NpuToSyclZeroCopy, reason: Reason::NotSyclMemory }
        );
        for needle in ["foreign pointer", "kernels", "copy", "DmaBuf", "CpuVa"] {
            assert!(format!("{err:#}").contains(needle), "{needle}: {err:#}");
        }
        // Copies to and from SYCL USM work (SYCL memcpy treats the memory as plain host memory).
        let q = s.queue();
        let mut usm = UsmBuffer::new(&e.ctx, &e.gpu, UsmKind::Device, 4096, 64).unwrap();
        let pattern: Vec<u32> = (0..1024).map(|i| i * 7 + 1).collect();
        q.write(&mut usm, 0, &pattern).unwrap();
        t.copy_from(&usm, 4096).unwrap();
        assert_eq!(t.npu_tensor().host_data::<f32>().unwrap().iter().map(|f| f.to_bits()).collect::<Vec<_>>(), pattern);
        q.fill(&mut usm, 0).unwrap();
        t.copy_to(&mut usm, 4096).unwrap();
        assert_eq!(q.read_to_vec::<u32, _>(&usm).unwrap(), pattern);
        drop(t);

        run_multi_io(&e, &s);
        done("npu_to_sycl_copies_and_refuses_zero_copy");
    }

    // ---------------------------------------------------------------------------------------------
    // Shared system memory
    // ---------------------------------------------------------------------------------------------

    #[test]
    fn shared_system_memory_where_the_npu_imports_it() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let system_usm = std::env::var("VL0_GPU_SHARED_SYSTEM").as_deref() == Ok("1");
        assert_eq!(e.gpu.usm_system_allocations, system_usm, "SYCL's aspect follows the GPU's capability");
        if !e.npu.capabilities().sysmem_import {
            let err = Strategy::new(StrategyKind::SharedSystem, &e.npu, &e.ctx, &e.gpu).unwrap_err();
            assert_eq!(
                err.kind(),
                &ErrorKind::Unsupported { path: Path::SharedSystem, reason: Reason::NoSystemMemoryImport },
                "{err}"
            );
            assert!(
                format!("{err:#}").contains("STANDARD_ALLOCATION") && format!("{err:#}").contains("DmaBuf"),
                "{err}"
            );
            println!("adapter {}: no user-memory import here, checked the refusal: {err}", adapter());
            done("shared_system_memory_where_the_npu_imports_it");
            return;
        }
        let s = Strategy::new(StrategyKind::SharedSystem, &e.npu, &e.ctx, &e.gpu).unwrap();
        assert_eq!(s.is_zero_copy(), system_usm);
        let mut t = s.tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
        assert_eq!(t.is_zero_copy(), system_usm);
        // The NPU uses the very pages SYCL addresses: CPU_VA at the same pointer, not SYCL memory.
        let p = t.remote_tensor().params().unwrap();
        assert_eq!(p.mem_type, Some(npu_sycl_bridge::openvino::MemType::CpuVa));
        assert_eq!(p.mem_handle, t.sycl_ptr().cast());
        assert_eq!(e.ctx.pointer_kind(t.sycl_ptr().cast()).unwrap(), None, "ordinary process memory");
        // SYCL kernels reach it only with shared-system USM; SYCL memcpys always do.
        let q = s.queue();
        let mut usm = UsmBuffer::new(&e.ctx, &e.gpu, UsmKind::Device, 4096, 64).unwrap();
        let pattern: Vec<u32> = (0..1024).map(|i| i * 3 + 5).collect();
        q.write(&mut usm, 0, &pattern).unwrap();
        if system_usm {
            let mut access = t.sycl_mut().unwrap();
            q.copy(&usm, &mut access, 4096).unwrap();
        } else {
            let err = t.sycl_mut().unwrap_err();
            assert_eq!(
                err.kind(),
                &ErrorKind::Unsupported { path: Path::SharedSystem, reason: Reason::NoSharedSystemUsm },
                "{err}"
            );
            assert!(format!("{err:#}").contains("usm_system_allocations"), "{err}");
            t.copy_from(&usm, 4096).unwrap();
        }
        let seen: Vec<u32> = t.npu_tensor().host_data::<f32>().unwrap().iter().map(|f| f.to_bits()).collect();
        assert_eq!(seen, pattern, "the NPU's mapping shows what SYCL wrote");
        drop(t);
        run_multi_io(&e, &s);
        done("shared_system_memory_where_the_npu_imports_it");
    }

    // ---------------------------------------------------------------------------------------------
    // Auto
    // ---------------------------------------------------------------------------------------------

    #[test]
    fn auto_picks_dma_buf_and_says_why() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let auto = Auto::select(&e.npu, &e.ctx, &e.gpu).expect("some strategy works");
        let d = auto.decision();
        println!("adapter {}: {d}", adapter());
        assert_eq!(
            Auto::ORDER,
            [
                StrategyKind::DmaBuf,
                StrategyKind::CpuVa,
                StrategyKind::SharedSystem,
                StrategyKind::NpuExport,
                StrategyKind::NpuToSycl
            ]
        );
        assert_eq!(d.chosen, StrategyKind::DmaBuf, "{d}");
        assert_eq!(auto.kind(), StrategyKind::DmaBuf);
        let kinds: Vec<StrategyKind> = d.attempts.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, [StrategyKind::DmaBuf], "Auto stopped at the first strategy that works");
        assert_eq!(d.to_string(), "chose dma-buf because it is first in Auto's order and works");
        // The survey tries every strategy, the card path too.
        let survey = Auto::survey(&e.npu, &e.ctx, &e.gpu);
        let kinds: Vec<StrategyKind> = survey.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, StrategyKind::ALL, "the survey tries every strategy, in order");
        let error = |kind| survey.iter().find(|(k, _)| *k == kind).and_then(|(_, r)| r.as_ref().err());
        let card = error(StrategyKind::CardPath).expect("the card path fails");
        assert_eq!(card.kind(), &ErrorKind::Unsupported { path: Path::CardPath, reason: Reason::NoSyclPlatform });
        assert!(format!("{card:#}").contains("no SYCL platform wraps that driver"), "{card:#}");
        // CPU_VA of SYCL USM fails on every profile (not pinnable on NPU 40xx+, no import on 37xx).
        assert_eq!(
            error(StrategyKind::CpuVa).map(|e| e.kind().clone()),
            Some(ErrorKind::Unsupported {
                path: Path::CpuVa,
                reason: if e.npu.capabilities().sysmem_import {
                    Reason::GpuUsmNotPinnable
                } else {
                    Reason::NoSystemMemoryImport
                }
            })
        );
        // Shared system memory needs the NPU's user-memory import (NPU 40xx+ with the userptr ioctl).
        // NPU memory allocated exportable, imported by SYCL, works everywhere (every NPU driver
        // exports memory allocated so).
        let expected = if e.npu.capabilities().sysmem_import {
            vec![StrategyKind::DmaBuf, StrategyKind::SharedSystem, StrategyKind::NpuExport, StrategyKind::NpuToSycl]
        } else {
            vec![StrategyKind::DmaBuf, StrategyKind::NpuExport, StrategyKind::NpuToSycl]
        };
        let working: Vec<StrategyKind> = survey.iter().filter(|(_, r)| r.is_ok()).map(|(k, _)| *k).collect();
        assert_eq!(working, expected);
        drop(survey);
        assert!(Arc::ptr_eq(auto.sycl_context(), &e.ctx));
        // A request with a shared tensor of the strategy on every port, of the port's type and shape.
        let samples = [e.m.sample_input(0), e.m.sample_input(1)];
        let mut shared = auto.request(&e.npu_model).unwrap();
        assert_eq!((shared.inputs.len(), shared.outputs.len()), (2, 2));
        for (t, port) in shared.inputs.iter().zip(e.npu_model.inputs().unwrap()) {
            assert_eq!(
                (t.kind(), t.element_type(), Some(t.shape().clone())),
                (StrategyKind::DmaBuf, port.element_type, port.shape)
            );
        }
        for (t, x) in shared.inputs.iter_mut().zip(&samples) {
            t.write(0, x).unwrap();
        }
        let (copies0, args0) = (copies(), counter("npu.graph_args.dma_buf"));
        shared.request.infer().unwrap();
        assert_eq!(copies(), copies0, "no copies during the inference");
        assert_eq!(counter("npu.graph_args.dma_buf"), args0 + 4, "every port ran on SYCL's memory");
        let outs: Vec<Vec<u8>> = shared.outputs.iter().map(|t| t.read_to_vec::<u8>().unwrap()).collect();
        e.assert_matches_cpu_in("Auto's request", &samples, &outs);
        drop(shared);
        // Auto's strategy runs the model like any other.
        let (strategy, _decision) = auto.into_parts();
        run_multi_io(&e, &strategy);
        done("auto_picks_dma_buf_and_says_why");
    }

    /// SqueezeNet's output shape, `[1, 1000, 1, 1]` `f32`: 4000 bytes, not a whole number of pages.
    const PARTIAL_PAGE: [usize; 4] = [1, 1000, 1, 1];

    /// What the NPU and the GPU hold and have imported: unchanged by a decision made before allocating.
    fn allocations() -> [u64; 5] {
        [
            "npu.live_allocations",
            "gpu.live_allocations",
            "npu.imports.sysmem",
            "npu.imports.dma_buf",
            "npu.exports.dma_buf",
        ]
        .map(counter)
    }

    #[test]
    fn auto_serves_each_tensor_from_a_strategy_that_can() {
        if !child() {
            return;
        }
        let e = env(models::scale(&PARTIAL_PAGE));
        for order in [&[][..], &[StrategyKind::NpuToSycl, StrategyKind::DmaBuf, StrategyKind::NpuToSycl]] {
            let err = Auto::select_in(order, &e.npu, &e.ctx, &e.gpu).unwrap_err();
            assert_eq!(err.kind(), &ErrorKind::InvalidArgument, "{order:?}: {err}");
        }
        // Shared system memory first: the program's buffers are ordinary process memory.
        let order = [StrategyKind::SharedSystem, StrategyKind::NpuExport, StrategyKind::NpuToSycl];
        let auto = Auto::select_in(&order, &e.npu, &e.ctx, &e.gpu).unwrap();
        let sysmem = e.npu.capabilities().sysmem_import;
        let chosen = if sysmem { StrategyKind::SharedSystem } else { StrategyKind::NpuExport };
        assert_eq!(auto.decision().chosen, chosen, "{}", auto.decision());
        let shape = Shape::from(PARTIAL_PAGE);
        let whole_pages = Shape::from([1, 1024]);
        if sysmem {
            // The strategy says before it allocates that it cannot serve 4000 bytes as CPU_VA.
            let before = allocations();
            let refused = auto.strategy().check_tensor(ElementType::F32, &shape).unwrap_err();
            assert_eq!(
                refused.kind(),
                &ErrorKind::Alignment {
                    what: npu_sycl_bridge::error::Aligned::CpuVaByteSize,
                    required: 4096,
                    actual: 4000
                },
                "{refused:#}"
            );
            assert!(
                refused.to_string().contains("shared system memory: a f32 tensor of shape [1,1000,1,1]"),
                "{refused}"
            );
            assert_eq!(
                auto.strategy().tensor(ElementType::F32, PARTIAL_PAGE, TensorType::Output).unwrap_err().kind(),
                refused.kind(),
                "making the tensor gives the same answer"
            );
            auto.strategy().check_tensor(ElementType::F32, &whole_pages).unwrap();
            // Auto passes over it for this tensor, with the reason; the first decision makes and
            // probes the fallback, later ones allocate nothing.
            let decision = auto.decide(ElementType::F32, &shape).unwrap();
            assert_eq!(decision.chosen, StrategyKind::NpuExport, "{decision}");
            let passed: Vec<_> = decision.passed_over.iter().map(|(k, e)| (*k, e.kind().clone())).collect();
            assert_eq!(passed, [(StrategyKind::SharedSystem, refused.kind().clone())], "{decision}");
            let line = decision.to_string();
            assert!(line.starts_with("a f32 tensor of shape [1,1000,1,1]: shared system memory: "), "{line}");
            assert!(line.ends_with("; chose NPU→SYCL zero-copy"), "{line}");
            let after = allocations();
            let again = auto.decide(ElementType::F32, &shape).unwrap();
            assert_eq!(again.chosen, StrategyKind::NpuExport);
            assert_eq!(allocations(), after, "a decision allocates nothing once the fallback is made");
            assert_eq!(after[0], before[0], "the fallback's probe freed what it made");
        }
        // A whole-page tensor still comes from the chosen strategy, with nothing passed over.
        let d = auto.decide(ElementType::F32, &whole_pages).unwrap();
        assert_eq!((d.chosen, d.passed_over.len()), (chosen, 0), "{d}");
        assert_eq!(auto.tensor(ElementType::F32, whole_pages, TensorType::Binded).unwrap().kind(), chosen);
        // The model's 4000-byte ports: every port from a strategy that serves it, zero-copy, outputs
        // equal to the CPU plugin's.
        let sample = e.m.sample_input(0);
        let mut shared = auto.request(&e.npu_model).unwrap();
        for t in shared.inputs.iter().chain(&shared.outputs) {
            assert_eq!((t.kind(), t.shape()), (StrategyKind::NpuExport, &shape));
            assert!(t.is_zero_copy());
        }
        shared.inputs[0].write(0, &sample).unwrap();
        let (copies0, inferences0) = (copies(), counter("npu.inferences"));
        shared.request.infer().unwrap();
        assert_eq!(copies(), copies0, "no copies during the inference");
        assert_eq!(counter("npu.inferences"), inferences0 + 1);
        let out = shared.outputs[0].read_to_vec::<u8>().unwrap();
        e.assert_matches_cpu_in("Auto's per-port request", &[sample], &[out]);
        // Nothing serves an element type without a fixed size: the error is the tensor's, not Auto's.
        let dynamic = auto.tensor(ElementType::Dynamic, [4096], TensorType::Binded).unwrap_err();
        assert_eq!(dynamic.kind(), &ErrorKind::ElementType, "{dynamic}");
        done("auto_serves_each_tensor_from_a_strategy_that_can");
    }

    // ---------------------------------------------------------------------------------------------
    // SyclAccess
    // ---------------------------------------------------------------------------------------------

    #[test]
    fn npu_memory_exported_to_sycl_is_used_in_place() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        // Staging memory of the program, made first: the window below counts only the imports.
        let mut staging = UsmBuffer::new(&e.ctx, &e.gpu, UsmKind::Device, 4096, 64).unwrap();
        let fds0 = open_fds();
        let (gpu_live0, exports0) = (counter("gpu.live_allocations"), counter("npu.exports.dma_buf"));
        let (npu_imports0, gpu_imports0) = (counter("npu.imports.dma_buf"), counter("gpu.imports.dma_buf"));
        {
            let s = Strategy::new(StrategyKind::NpuExport, &e.npu, &e.ctx, &e.gpu).unwrap();
            assert!(s.is_zero_copy());
            s.probe().unwrap();
            let mut t = s.tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
            // Per tensor: exportable NPU memory in the crate's own context, exported twice: once
            // imported by the plugin (SHARED_BUF), once by SYCL.
            assert_eq!(
                counter("npu.exports.dma_buf"),
                exports0 + 4,
                "the probe's tensor and this one: two exports each"
            );
            assert_eq!(counter("npu.imports.dma_buf"), npu_imports0 + 2, "the plugin imports each once");
            assert_eq!(counter("gpu.imports.dma_buf"), gpu_imports0 + 2, "SYCL imports each once");
            let own = e.npu.export_context().unwrap();
            assert_ne!(own.as_raw(), e.npu.level_zero_context().as_raw(), "not the plugin's context");
            let mem_handle = t.remote_tensor().params().unwrap().mem_handle;
            assert_eq!(
                e.npu.level_zero_context().memory_properties(mem_handle).unwrap().kind,
                npu_sycl_bridge::level_zero::MemoryType::Host,
                "the tensor is the plugin's import, an allocation of its context"
            );
            // SYCL sees its own device memory (the import of the NPU's pages), usable by kernels.
            assert_eq!(e.ctx.pointer_kind(t.sycl_ptr().cast()).unwrap(), Some(UsmKind::Device));
            // A SYCL device copy into the NPU's memory, seen through the NPU's own mapping.
            let pattern: Vec<u32> = (0..1024).map(|i| i * 3 + 7).collect();
            s.queue().write(&mut staging, 0, &pattern).unwrap();
            {
                let mut access = t.sycl_mut().unwrap();
                s.queue().copy(&staging, &mut access, 4096).unwrap();
            }
            let seen: Vec<u32> = t.npu_tensor().host_data::<f32>().unwrap().iter().map(|f| f.to_bits()).collect();
            assert_eq!(seen, pattern, "SYCL wrote the NPU's pages in place");
            drop(t);
            // The model through it: SYCL writes the NPU's inputs and reads its outputs in place.
            run_multi_io(&e, &s);
        }
        assert_eq!(counter("gpu.live_allocations"), gpu_live0, "every SYCL import released");
        assert_eq!(open_fds(), fds0, "every exported fd closed once");
        done("npu_memory_exported_to_sycl_is_used_in_place");
    }

    #[test]
    fn pending_sycl_copies_overlap_inference_and_exclude_it() {
        if !child() {
            return;
        }
        let e = env(models::fully_connected());
        let (din, dout) = (&e.m.inputs[0], &e.m.outputs[0]);
        let s = Strategy::new(StrategyKind::DmaBuf, &e.npu, &e.ctx, &e.gpu).unwrap();
        let tensor = |tt| s.tensor(din.element_type, din.shape.clone(), tt).unwrap();
        let (mut in_a, out_a, mut in_b, out_b) = (
            tensor(TensorType::Input),
            tensor(TensorType::Output),
            tensor(TensorType::Input),
            tensor(TensorType::Output),
        );
        assert_eq!(din.shape, dout.shape);
        let (x, y) = (e.m.sample_input(0), other_input(&e.m, 0));
        in_a.write(0, &x).unwrap();
        let (mut ra, mut rb) = (e.request(), e.request());
        ra.set_input_tensor(0, &in_a).unwrap();
        ra.set_output_tensor(0, &out_a).unwrap();
        rb.set_input_tensor(0, &in_b).unwrap();
        rb.set_output_tensor(0, &out_b).unwrap();

        // SYCL writes b's input while the NPU runs a: the two overlap.
        ra.start_async().unwrap();
        let pending = in_b.write_async(0, &y).unwrap();
        // b cannot start while its input is still being written.
        let err = rb.infer().unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::Busy, "{err}");
        assert!(err.to_string().contains("SYCL access"), "the message names what holds the tensor: {err}");
        pending.wait().unwrap();
        // a's input cannot be written while a runs.
        let err = in_a.write_async(0, &y).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::Busy, "{err}");
        ra.wait().unwrap();
        rb.infer().unwrap();
        // An inference that starts once the SYCL write it reads has finished.
        in_b.write_async(0, &y).unwrap().then_start(&mut rb).unwrap();
        rb.wait().unwrap();

        // Results read back asynchronously, then waited for.
        let (mut got_a, mut got_b) = (vec![0u8; dout.byte_size()], vec![0u8; dout.byte_size()]);
        {
            let pa = out_a.read_async(0, &mut got_a).unwrap();
            let pb = out_b.read_async(0, &mut got_b).unwrap();
            // An inference that writes a tensor a pending read still reads cannot start.
            assert_eq!(ra.infer().unwrap_err().kind(), &ErrorKind::Busy);
            pa.wait().unwrap();
            drop(pb); // dropping waits
        }
        e.assert_matches_cpu_in("async", &[x], &[got_a]);
        e.assert_matches_cpu_in("async", &[y], &[got_b]);
        done("pending_sycl_copies_overlap_inference_and_exclude_it");
    }

    #[test]
    fn the_programs_sycl_memory_through_the_one_import() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let q = Arc::new(Queue::new(&e.ctx, &e.gpu).unwrap());
        let (a, b) = (e.m.sample_input(0), e.m.sample_input(1));
        let fds0 = open_fds();
        {
            // Exportable device memory the program allocated: a dma-buf import, zero-copy, and a
            // shared tensor on the program's own queue.
            let mut t: Vec<SharedTensor> = (0..4)
                .map(|i| {
                    let mem = ExportableDeviceMemory::new(&e.ctx, &e.gpu, 4096, 4096).unwrap();
                    let tt = if i < 2 { TensorType::Input } else { TensorType::Output };
                    SharedTensor::new(&q, e.npu.import(mem, ElementType::F32, [1, 1024], tt).unwrap()).unwrap()
                })
                .collect();
            assert!(t.iter().all(|t| t.kind() == StrategyKind::DmaBuf && t.is_zero_copy()));
            t[0].write(0, &a).unwrap();
            t[1].write(0, &b).unwrap();
            let mut r = e.request();
            for (i, x) in t.iter().enumerate() {
                if i < 2 {
                    r.set_input_tensor(i, x).unwrap();
                } else {
                    r.set_output_tensor(i - 2, x).unwrap();
                }
            }
            let (copies0, args0) = (copies(), counter("npu.graph_args.dma_buf"));
            r.infer().unwrap();
            assert_eq!(copies(), copies0, "no copies during the inference");
            assert_eq!(counter("npu.graph_args.dma_buf"), args0 + 4, "the graph ran on the program's memory");
            let outs = vec![t[2].read_to_vec::<u8>().unwrap(), t[3].read_to_vec::<u8>().unwrap()];
            e.assert_matches_cpu_in("the program's exportable memory", &[a.clone(), b.clone()], &outs);
        }
        // Host and shared USM: the NPU cannot pin the GPU driver's USM; a typed refusal naming dma-buf.
        for usm in [UsmKind::Host, UsmKind::Shared, UsmKind::Device] {
            let buf = UsmBuffer::new(&e.ctx, &e.gpu, usm, 4096, 4096).unwrap();
            let err = e.npu.import(buf, ElementType::F32, [1, 1024], TensorType::Input).unwrap_err();
            let reason = match usm {
                UsmKind::Device => Reason::NoHostAddress,
                _ if e.npu.capabilities().sysmem_import => Reason::GpuUsmNotPinnable,
                _ => Reason::NoSystemMemoryImport,
            };
            assert_eq!(err.kind(), &ErrorKind::Unsupported { path: Path::CpuVa, reason }, "{usm:?}: {err:#}");
            assert!(format!("{err:#}").contains("dma-buf"), "{usm:?}: names what works: {err:#}");
        }
        // Memory the program exported itself has another way in: the tensor over it has no host
        // views (a Rust slice of pages another fd can change). SYCL copies make no Rust reference to
        // the pages, so the shared tensor still writes and reads them, excluded from inferences.
        let mem = ExportableDeviceMemory::new(&e.ctx, &e.gpu, 4096, 4096).unwrap();
        let other_owner = mem.export_dma_buf().unwrap();
        let tensor = e.npu.import(mem, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        assert_eq!(
            tensor.host_bytes().unwrap_err().kind(),
            &ErrorKind::Unsupported { path: Path::HostView, reason: Reason::ExporterOwnsMemory }
        );
        let mut shared = SharedTensor::new(&q, tensor).unwrap();
        shared.write(0, &a).unwrap();
        assert_eq!(shared.read_to_vec::<u8>().unwrap(), a);
        assert_eq!(
            shared.npu_tensor().host_bytes().unwrap_err().kind(),
            &ErrorKind::Unsupported { path: Path::HostView, reason: Reason::ExporterOwnsMemory }
        );
        drop((shared, other_owner));
        // A tensor that is not SYCL memory cannot become a shared tensor.
        let l0 = e.npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
        assert_eq!(SharedTensor::new(&q, l0).unwrap_err().kind(), &ErrorKind::InvalidArgument);
        assert_eq!(open_fds(), fds0, "every export's fd closed once");
        done("the_programs_sycl_memory_through_the_one_import");
    }

    /// A real NPU remote context seen through the other-binding interface, so that every call the
    /// crate makes into OpenVINO for its tensors passes here first and is counted.
    struct CountingContext {
        inner: RemoteContext,
        calls: Arc<AtomicUsize>,
    }

    struct CountingTensor {
        inner: RemoteTensor,
        calls: Arc<AtomicUsize>,
    }

    impl CountingTensor {
        fn count(&self) {
            self.calls.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl ExternalContext for CountingContext {
        fn device_name(&self) -> npu_sycl_bridge::Result<String> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.device_name()
        }
        fn params(&self) -> npu_sycl_bridge::Result<BTreeMap<String, String>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.params()
        }
        unsafe fn create_tensor(
            &self,
            element_type: ElementType,
            shape: &Shape,
            p: &TensorProperties,
        ) -> npu_sycl_bridge::Result<Box<dyn ExternalTensor>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            // SAFETY: the caller's contract (create_tensor's) is remote_tensor's, forwarded.
            let inner = unsafe {
                raw::openvino::remote_tensor(
                    &self.inner,
                    element_type,
                    shape.clone(),
                    p.mem_type,
                    p.mem_handle,
                    p.tensor_type,
                    vec![],
                )
            }?;
            Ok(Box::new(CountingTensor { inner, calls: Arc::clone(&self.calls) }))
        }
    }

    impl ExternalTensor for CountingTensor {
        fn element_type(&self) -> npu_sycl_bridge::Result<ElementType> {
            self.count();
            self.inner.element_type()
        }
        fn shape(&self) -> npu_sycl_bridge::Result<Shape> {
            self.count();
            self.inner.shape()
        }
        fn byte_size(&self) -> npu_sycl_bridge::Result<usize> {
            self.count();
            self.inner.byte_size()
        }
        fn device_name(&self) -> npu_sycl_bridge::Result<String> {
            self.count();
            self.inner.device_name()
        }
        fn params(&self) -> npu_sycl_bridge::Result<BTreeMap<String, String>> {
            self.count();
            self.inner.params().map(|p| p.raw)
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    #[test]
    fn sycl_copies_ask_nothing_of_openvino() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let q = Arc::new(Queue::new(&e.ctx, &e.gpu).unwrap());
        let calls = Arc::new(AtomicUsize::new(0));
        let counting = CountingContext { inner: e.npu.remote_context().clone(), calls: Arc::clone(&calls) };
        let npu = NpuContext::from_remote_context(RemoteContext::external(Box::new(counting))).unwrap();
        let mem = ExportableDeviceMemory::new(&e.ctx, &e.gpu, 4096, 4096).unwrap();
        let mut t =
            SharedTensor::new(&q, npu.import(mem, ElementType::F32, [1, 1024], TensorType::Binded).unwrap()).unwrap();
        let made = calls.load(Ordering::SeqCst);
        assert!(made > 0, "the import's calls pass through the counting context");
        let a = e.m.sample_input(0);
        t.write(0, &a).unwrap();
        assert_eq!(t.read_to_vec::<u8>().unwrap(), a);
        let mut back = vec![0u8; 16];
        t.read(8, &mut back).unwrap();
        assert_eq!(back, a[8..24]);
        assert_eq!(t.npu_tensor().host_bytes().unwrap()[..], a[..], "the host view shows SYCL's bytes");
        t.write_async(0, &a).unwrap().wait().unwrap();
        {
            let staging = UsmBuffer::new(&e.ctx, &e.gpu, UsmKind::Device, 4096, 4096).unwrap();
            let mut access = t.sycl_mut().unwrap();
            q.copy(&staging, &mut access, 16).unwrap();
        }
        t.fill(7).unwrap();
        assert!(t.npu_tensor().host_bytes().unwrap().iter().all(|&b| b == 7));
        assert_eq!((t.byte_size(), t.element_type(), t.shape().dims()), (4096, ElementType::F32, &[1, 1024][..]));
        assert_eq!(calls.load(Ordering::SeqCst), made, "SYCL copies and host views made no OpenVINO call");
        done("sycl_copies_ask_nothing_of_openvino");
    }

    #[test]
    fn sycl_access_is_sycl_memory_and_excludes_inference() {
        if !child() {
            return;
        }
        let e = env(models::fully_connected());
        let din = &e.m.inputs[0];
        let dout = &e.m.outputs[0];
        // The zero-copy strategy that works on every laptop profile (CPU_VA of SYCL USM does not).
        {
            let s = Strategy::new(StrategyKind::DmaBuf, &e.npu, &e.ctx, &e.gpu).unwrap();
            let kind = s.kind();
            let q = s.queue();
            let mut input = s.tensor(din.element_type, din.shape.clone(), TensorType::Input).unwrap();
            let output = s.tensor(dout.element_type, dout.shape.clone(), TensorType::Output).unwrap();
            let x = e.m.sample_input(0);
            // SYCL USM → the shared tensor through Queue::copy and the guard.
            let mut staging = UsmBuffer::new(&e.ctx, &e.gpu, UsmKind::Device, x.len(), 64).unwrap();
            q.write(&mut staging, 0, &x).unwrap();
            let mut r = e.request();
            r.set_input_tensor(0, input.remote_tensor()).unwrap();
            r.set_output_tensor(0, output.remote_tensor()).unwrap();
            {
                let mut access = input.sycl_mut().unwrap();
                assert_eq!(access.len(), x.len());
                assert!(Arc::ptr_eq(access.context(), &e.ctx));
                q.copy(&staging, &mut access, x.len()).unwrap();
                // No inference while SYCL has the memory.
                let err = r.infer().unwrap_err();
                assert_eq!(err.kind(), &ErrorKind::Busy, "{kind}: {err}");
                // Queue::read works on the guard too.
                let mut first = [0u8; 8];
                q.read(&access, 0, &mut first).unwrap();
                assert_eq!(&first, &x[..8]);
            }
            r.infer().unwrap();
            e.assert_matches_cpu_in(kind.as_str(), std::slice::from_ref(&x), &[output.read_to_vec::<u8>().unwrap()]);
            // Zero-sized elements: an error, not a copy into a Vec that has no buffer.
            let err = output.read_to_vec::<[f32; 0]>().unwrap_err();
            assert_eq!(err.kind(), &ErrorKind::InvalidArgument, "{kind}: {err}");
            // During an asynchronous inference SYCL access is refused, not raced.
            r.start_async().unwrap();
            let err = input.write(0, &x).unwrap_err();
            assert_eq!(err.kind(), &ErrorKind::Busy, "{kind}: {err}");
            assert!(input.sycl_mut().is_err());
            r.wait().unwrap();
            input.write(0, &x).unwrap();
            // SYCL memory of another context is refused, and so is a queue of another context.
            let other = SyclContext::new(&e.gpu).unwrap();
            let foreign = UsmBuffer::new(&other, &e.gpu, UsmKind::Device, 4096, 64).unwrap();
            let err = input.copy_from(&foreign, 4096).unwrap_err();
            assert_eq!(err.kind(), &ErrorKind::InvalidArgument, "{err}");
            let oq = Arc::new(Queue::new(&other, &e.gpu).unwrap());
            let err = SharedTensor::new(&oq, input.npu_tensor().clone()).unwrap_err();
            assert_eq!(err.kind(), &ErrorKind::InvalidArgument, "{err}");
        }
        done("sycl_access_is_sycl_memory_and_excludes_inference");
    }

    // ---------------------------------------------------------------------------------------------
    // Drop orders
    // ---------------------------------------------------------------------------------------------

    fn bind_multi_io(r: &mut InferRequest, t: &[&SharedTensor; 4]) {
        r.set_input_tensor(0, t[0].remote_tensor()).unwrap();
        r.set_input_tensor(1, t[1].remote_tensor()).unwrap();
        r.set_output_tensor(0, t[2].remote_tensor()).unwrap();
        r.set_output_tensor(1, t[3].remote_tensor()).unwrap();
    }

    fn make_four(s: &Strategy, e: &Env) -> [SharedTensor; 4] {
        let mut ta = s.tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        let mut tb = s.tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap();
        ta.write(0, &e.m.sample_input(0)).unwrap();
        tb.write(0, &e.m.sample_input(1)).unwrap();
        let ts = s.tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        let tp = s.tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
        [ta, tb, ts, tp]
    }

    fn read_outputs(sum: &NpuTensor, prod: &NpuTensor) -> Vec<Vec<u8>> {
        vec![sum.host_bytes().unwrap().to_vec(), prod.host_bytes().unwrap().to_vec()]
    }

    #[test]
    fn drops_in_any_order_are_sound() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let samples = e.m.sample_inputs();
        // Warm up the pools of `e.ctx` (SYCL carves host/device USM from slabs it frees only with
        // the context) and the request machinery, then take the baseline.
        for s in [
            Strategy::new(StrategyKind::DmaBuf, &e.npu, &e.ctx, &e.gpu).unwrap(),
            Strategy::new(StrategyKind::NpuExport, &e.npu, &e.ctx, &e.gpu).unwrap(),
            Strategy::new(StrategyKind::NpuToSycl, &e.npu, &e.ctx, &e.gpu).unwrap(),
        ] {
            let t = make_four(&s, &e);
            let mut r = e.request();
            bind_multi_io(&mut r, &[&t[0], &t[1], &t[2], &t[3]]);
            r.infer().unwrap();
        }
        let gpu_live0 = counter("gpu.live_allocations");
        let npu_live0 = counter("npu.live_allocations");
        let fds0 = open_fds();

        // A: the request outlives everything else: shared tensors, strategy, SYCL context clone,
        // NPU context clone. Only clones of the output remote tensors are kept to read results.
        for kind in [StrategyKind::DmaBuf, StrategyKind::NpuExport, StrategyKind::NpuToSycl] {
            let ctx = SyclContext::new(&e.gpu).unwrap();
            let npu = e.npu.clone();
            let s = Strategy::new(kind, &npu, &ctx, &e.gpu).unwrap();
            let t = make_four(&s, &e);
            let mut r = e.request();
            bind_multi_io(&mut r, &[&t[0], &t[1], &t[2], &t[3]]);
            let (sum, prod) = (t[2].npu_tensor().clone(), t[3].npu_tensor().clone());
            drop(t);
            drop(s);
            drop(ctx);
            drop(npu);
            r.infer().unwrap();
            e.assert_matches_cpu_in(&format!("A {kind}"), &samples, &read_outputs(&sum, &prod));
            drop(r); // then the output clones, last
            drop((sum, prod));
        }

        // B: the request first, then the SYCL context, then the strategy, then the tensors; the
        // tensors still work through a new queue of their (kept) SYCL context.
        {
            let ctx = SyclContext::new(&e.gpu).unwrap();
            let s = Strategy::new(StrategyKind::DmaBuf, &e.npu, &ctx, &e.gpu).unwrap();
            let mut t = make_four(&s, &e);
            let mut r = e.request();
            bind_multi_io(&mut r, &[&t[0], &t[1], &t[2], &t[3]]);
            r.infer().unwrap();
            drop(r);
            drop(ctx);
            drop(s);
            let q = Queue::new(t[0].sycl_context(), &e.gpu).unwrap();
            t[0].write(0, &other_input(&e.m, 0)).unwrap();
            let mut r = e.request();
            bind_multi_io(&mut r, &[&t[0], &t[1], &t[2], &t[3]]);
            r.infer().unwrap();
            let outs = vec![t[2].read_to_vec::<u8>().unwrap(), t[3].read_to_vec::<u8>().unwrap()];
            e.assert_matches_cpu_in("B", &[other_input(&e.m, 0), samples[1].clone()], &outs);
            // Tensors before their queue, and the request after both.
            drop(t);
            drop(q);
            drop(r);
        }

        // D: a Core of its own: Core, compiled model and NPU context dropped first; the strategy,
        // then the request, then the tensors.
        {
            let core = Core::new().unwrap();
            let own = env_with(&core, models::multi_io());
            let s = Strategy::new(StrategyKind::DmaBuf, &own.npu, &own.ctx, &own.gpu).unwrap();
            let t = make_four(&s, &e);
            let mut r = own.request();
            bind_multi_io(&mut r, &[&t[0], &t[1], &t[2], &t[3]]);
            let Env { base: NpuAndCpu { npu_model, cpu_model, npu, .. }, ctx, .. } = own;
            drop((npu_model, cpu_model, npu, ctx));
            drop(core);
            r.infer().unwrap();
            drop(s);
            e.assert_matches_cpu_in("D", &samples, &read_outputs(t[2].npu_tensor(), t[3].npu_tensor()));
            drop(r);
            drop(t);
        }

        // E: dropped while an asynchronous inference runs: the tensors, then the request (which
        // waits in Drop), with the strategy gone before both.
        {
            let s = Strategy::new(StrategyKind::DmaBuf, &e.npu, &e.ctx, &e.gpu).unwrap();
            let t = make_four(&s, &e);
            let mut r = e.request();
            bind_multi_io(&mut r, &[&t[0], &t[1], &t[2], &t[3]]);
            drop(s);
            r.start_async().unwrap();
            drop(t);
            drop(r);
        }

        // F: rebinding: the replaced tensor is dropped by us at once; the request keeps it until
        // the next inference finished.
        {
            let s = Strategy::new(StrategyKind::DmaBuf, &e.npu, &e.ctx, &e.gpu).unwrap();
            let t = make_four(&s, &e);
            let mut r = e.request();
            bind_multi_io(&mut r, &[&t[0], &t[1], &t[2], &t[3]]);
            r.infer().unwrap();
            let [ta, tb, ts, tp] = t;
            let mut ta2 = s.tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap();
            ta2.write(0, &other_input(&e.m, 0)).unwrap();
            r.set_input_tensor(0, ta2.remote_tensor()).unwrap();
            drop(ta);
            drop(ta2);
            drop(s);
            r.infer().unwrap();
            e.assert_matches_cpu_in(
                "F",
                &[other_input(&e.m, 0), samples[1].clone()],
                &read_outputs(ts.npu_tensor(), tp.npu_tensor()),
            );
            drop((tb, ts, tp));
            drop(r);
        }

        assert!(e.ctx.take_deferred_errors().is_empty(), "no errors in Drop");
        assert_eq!(counter("gpu.live_allocations"), gpu_live0, "every SYCL allocation was freed");
        assert_eq!(counter("npu.live_allocations"), npu_live0, "every NPU import and allocation was released");
        assert_eq!(open_fds(), fds0, "every dma-buf fd was closed");
        done("drops_in_any_order_are_sound");
    }

    // ---------------------------------------------------------------------------------------------
    // 1,000 cycles
    // ---------------------------------------------------------------------------------------------

    #[test]
    fn thousand_cycles_leak_nothing() {
        if !child() {
            return;
        }
        let e = env(models::multi_io());
        let samples = e.m.sample_inputs();
        let want = e.cpu(&samples);
        // The strategies that work on every laptop profile.
        let strategies = [
            Strategy::new(StrategyKind::DmaBuf, &e.npu, &e.ctx, &e.gpu).unwrap(),
            Strategy::new(StrategyKind::NpuExport, &e.npu, &e.ctx, &e.gpu).unwrap(),
            Strategy::new(StrategyKind::NpuToSycl, &e.npu, &e.ctx, &e.gpu).unwrap(),
        ];
        let mut request = e.request();
        let cycle = |i: usize, request: &mut InferRequest| {
            let pick = |port: usize| &strategies[(i + port) % strategies.len()];
            let mut ta = pick(0).tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap();
            let mut tb = pick(1).tensor(ElementType::F32, [1, 1024], TensorType::Input).unwrap();
            let ts = pick(2).tensor(ElementType::F32, [1, 1024], TensorType::Output).unwrap();
            let tp = pick(3).tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
            ta.write(0, &samples[0]).unwrap();
            tb.write(0, &samples[1]).unwrap();
            bind_multi_io(request, &[&ta, &tb, &ts, &tp]);
            request.infer().unwrap();
            if i % 50 == 0 {
                assert_eq!(ts.read_to_vec::<u8>().unwrap(), want[0], "cycle {i}");
                assert_eq!(tp.read_to_vec::<u8>().unwrap(), want[1], "cycle {i}");
            }
        };
        // Warm up (SYCL pools, the request's command list), then measure.
        for i in 0..strategies.len() * 2 {
            cycle(i, &mut request);
        }
        // Rebinding keeps the last tensors until the next inference: measure with a fresh request.
        drop(request);
        let mut request = e.request();
        cycle(0, &mut request);
        drop(request);
        let fds0 = open_fds();
        let gpu_live0 = counter("gpu.live_allocations");
        let npu_live0 = counter("npu.live_allocations");
        let inferences0 = counter("npu.inferences");
        let mut request = e.request();
        for i in 0..1000 {
            if i % 250 == 0 {
                request = e.request();
            }
            cycle(i, &mut request);
        }
        drop(request);
        assert_eq!(counter("npu.inferences"), inferences0 + 1000);
        assert_eq!(open_fds(), fds0, "open fds are where they started");
        assert_eq!(counter("gpu.live_allocations"), gpu_live0, "GPU (SYCL) allocations are where they started");
        assert_eq!(counter("npu.live_allocations"), npu_live0, "NPU allocations and imports are where they started");
        drop(strategies);
        assert!(e.ctx.take_deferred_errors().is_empty());
        println!(
            "adapter {}: 1,000 cycles: fds {fds0}, gpu.live_allocations {gpu_live0}, npu.live_allocations {npu_live0}",
            adapter()
        );
        done("thousand_cycles_leak_nothing");
    }
}
