//! Soak (issue 14 item 3): 8 threads × 1,000 inferences on shared tensors and on pooled tensors,
//! and 10,000 create/bind/infer/drop cycles per strategy that works on every laptop (and shared
//! system memory where the NPU imports user memory). Open fds, live
//! allocations of both drivers and resident memory must be flat from the first hundred cycles on.
//! (About 15 s on the virtual platform: `cargo xtask test` runs it under every laptop profile.)
#![cfg(feature = "sycl")]

use std::sync::{Arc, Mutex};

use npu_sycl_bridge::openvino::TensorType;
use npu_sycl_bridge::pool::NpuPool;
use npu_sycl_bridge::strategy::{SharedTensor, Strategy, StrategyKind};
use npu_sycl_bridge::sycl::{ExportableDeviceMemory, Queue};

mod common;

use common::npu::{counter, open_fds};

/// Resident memory of this process in bytes (`/proc/self/statm`).
fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// What must not grow: open fds, live GPU and NPU allocations.
fn held() -> (usize, u64, u64) {
    (open_fds(), counter("gpu.live_allocations"), counter("npu.live_allocations"))
}

/// Resident memory may grow by allocator noise only (the runtimes' caches settle in the warm-up).
const RESIDENT_SLACK: usize = 8 << 20;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

type Env = common::sycl::SyclEnv;

fn env() -> Env {
    common::sycl::sycl_env(testkit::models::fully_connected())
}

#[test]
fn create_bind_infer_drop_cycles_leak_nothing() {
    let _s = serial();
    let e = env();
    let m = &e.base.m;
    let (din, dout) = (&m.inputs[0], &m.outputs[0]);
    let x = m.sample_input(0);
    let want = e.base.cpu(std::slice::from_ref(&x)).remove(0);
    // Shared system memory too where the NPU imports user memory: every cycle imports fresh pages,
    // which must all be released (10,000 leaked pages would show in resident memory).
    let mut kinds = vec![StrategyKind::DmaBuf, StrategyKind::NpuExport, StrategyKind::NpuToSycl];
    if e.base.npu.capabilities().sysmem_import {
        kinds.push(StrategyKind::SharedSystem);
    }
    for kind in kinds {
        let s = Strategy::new(kind, &e.base.npu, &e.ctx, &e.gpu).unwrap();
        let n = 10_000;
        let mut at_100 = None;
        for i in 0..n {
            let mut input = s.tensor(din.element_type, din.shape.clone(), TensorType::Input).unwrap();
            let output = s.tensor(dout.element_type, dout.shape.clone(), TensorType::Output).unwrap();
            input.write(0, &x).unwrap();
            let mut r = e.base.request();
            r.set_input_tensor(0, &input).unwrap();
            r.set_output_tensor(0, &output).unwrap();
            r.infer().unwrap();
            if i % 97 == 0 {
                assert_eq!(m.compare(0, &want, &output.read_to_vec::<u8>().unwrap()), Ok(()), "{kind} cycle {i}");
            }
            drop((r, input, output));
            if i + 1 == 100 {
                at_100 = Some((held(), resident()));
            }
        }
        let ((held_100, rss_100), (held_end, rss_end)) = (at_100.unwrap(), (held(), resident()));
        println!(
            "{kind}: {n} cycles; after 100: {held_100:?}, {rss_100} B resident; at the end: {held_end:?}, {rss_end} B"
        );
        assert_eq!(held_end, held_100, "{kind}: fds and live allocations flat from cycle 100 on");
        assert!(rss_end <= rss_100 + RESIDENT_SLACK, "{kind}: resident memory grew {rss_100} -> {rss_end}");
    }
}

#[test]
fn eight_threads_infer_on_shared_and_pooled_tensors() {
    let _s = serial();
    let e = env();
    let m = &e.base.m;
    let (din, dout) = (&m.inputs[0], &m.outputs[0]);
    let x = m.sample_input(0);
    let want = e.base.cpu(std::slice::from_ref(&x)).remove(0);
    let strategy = Strategy::new(StrategyKind::DmaBuf, &e.base.npu, &e.ctx, &e.gpu).unwrap();
    // One input shared by every thread (inferences only read it), an output per thread.
    let mut input = strategy.tensor(din.element_type, din.shape.clone(), TensorType::Input).unwrap();
    input.write(0, &x).unwrap();
    let before = held();
    let queue = Arc::new(Queue::new(&e.ctx, &e.gpu).unwrap());
    let buffers = (0..16).map(|_| ExportableDeviceMemory::new(&e.ctx, &e.gpu, 4096, 4096).unwrap()).collect();
    let pool = NpuPool::from_buffers(&e.base.npu, buffers).unwrap();
    let n = 1_000;
    // Two halves: the second must not grow what the first left (resident memory included).
    let mut after_half = None;
    for half in 0..2 {
        std::thread::scope(|scope| {
            for t in 0..8 {
                let (input, pool, queue, want, e) = (&input, &pool, &queue, &want, &e);
                scope.spawn(move || {
                    let mut r = e.base.request();
                    let shared_out = thread_output(e, dout);
                    for i in 0..n / 2 {
                        if (i + t) % 2 == 0 {
                            // Shared tensors: the common input, this thread's own output.
                            r.set_input_tensor(0, input).unwrap();
                            r.set_output_tensor(0, &shared_out).unwrap();
                            r.infer().unwrap();
                            if i % 50 == 0 {
                                assert_eq!(shared_out.read_to_vec::<u8>().unwrap(), *want, "thread {t}, inference {i}");
                            }
                        } else {
                            // Pooled tensors: input and output from the pool, written and read by SYCL.
                            let tensor = |d: &testkit::models::TensorDesc| {
                                SharedTensor::new(queue, pool.tensor(d.element_type, d.shape.clone()).unwrap()).unwrap()
                            };
                            let (mut pin, pout) = (tensor(din), tensor(dout));
                            pin.write(0, &m.sample_input(0)).unwrap();
                            r.set_input_tensor(0, &pin).unwrap();
                            r.set_output_tensor(0, &pout).unwrap();
                            r.infer().unwrap();
                            if i % 50 == 1 {
                                assert_eq!(
                                    pout.read_to_vec::<u8>().unwrap(),
                                    *want,
                                    "thread {t}, pooled inference {i}"
                                );
                            }
                        }
                    }
                });
            }
        });
        let now = (held(), resident());
        println!(
            "8 threads × {} inferences (half {half}): held {:?}, {} B resident; pool: {}",
            n / 2,
            now.0,
            now.1,
            pool.stats()
        );
        if let Some((held_half, rss_half)) = after_half {
            assert_eq!(now.0, held_half, "fds and live allocations flat after the first half");
            assert!(now.1 <= rss_half + RESIDENT_SLACK, "resident memory grew {rss_half} -> {}", now.1);
        }
        after_half = Some(now);
    }
    let stats = pool.stats();
    assert!(stats.imports <= 16, "each pool buffer imported at most once: {stats}");
    assert_eq!(stats.in_use, 0, "every pooled tensor came back");
    drop((pool, queue));
    assert_eq!(held(), before, "fds and live allocations back where they were");
}

/// A thread's own output: exportable SYCL memory imported by the NPU.
fn thread_output(e: &Env, d: &testkit::models::TensorDesc) -> SharedTensor {
    let queue = Arc::new(Queue::new(&e.ctx, &e.gpu).unwrap());
    let mem = ExportableDeviceMemory::new(&e.ctx, &e.gpu, d.byte_size().max(4096), 4096).unwrap();
    let t = e.base.npu.import(mem, d.element_type, d.shape.clone(), TensorType::Output).unwrap();
    SharedTensor::new(&queue, t).unwrap()
}
