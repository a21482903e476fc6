//! The OpenVINO layer on the CPU device: every reference model, synchronous and asynchronous
//! inference, tensors by index and by name, export/import, keep-alive, and error kinds.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{check_outputs, compile, cpu_properties, expected, sample_tensors};
use npu_sycl_bridge::openvino::{Core, ElementType, Shape, Tensor, F16};
use npu_sycl_bridge::ErrorKind;
use testkit::models;

fn core() -> Core {
    Core::new().expect("OpenVINO must be available (cargo xtask setup)")
}

#[test]
fn version_and_devices() {
    let v = Core::version().unwrap();
    assert!(v.starts_with("20"), "{v}");
    let core = core();
    let devices = core.available_devices().unwrap();
    assert!(devices.iter().any(|d| d == "CPU"), "{devices:?}");
    let versions = core.versions("CPU").unwrap();
    assert_eq!(versions[0].device, "CPU");
    assert!(!versions[0].build_number.is_empty());
    assert!(!core.property("CPU", "FULL_DEVICE_NAME").unwrap().is_empty());
    assert!(npu_sycl_bridge::openvino::library_path().is_some());
}

#[test]
fn every_model_matches_the_reference_exactly() {
    let core = core();
    for m in models::all() {
        let compiled = compile(&core, &m, "CPU");
        let ins = compiled.inputs().unwrap();
        assert_eq!(ins.len(), m.inputs.len());
        for (p, d) in ins.iter().zip(&m.inputs) {
            assert_eq!(p.name, d.name);
            assert_eq!(p.element_type, d.element_type);
            assert_eq!(p.shape.as_ref(), Some(&d.shape));
        }
        let outs = compiled.outputs().unwrap();
        assert_eq!(
            outs.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            m.outputs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>()
        );
        let mut r = compiled.create_infer_request().unwrap();
        for (i, t) in sample_tensors(&m).iter().enumerate() {
            r.set_input_tensor(i, t).unwrap();
        }
        r.infer().unwrap();
        let got = check_outputs(&m, &mut r);
        // With these inputs every result is exact: the CPU in f32 matches bit for bit.
        assert_eq!(got, expected(&m), "{}", m.name);
    }
}

#[test]
fn model_introspection() {
    let core = core();
    let m = models::u8_input();
    let model = core.read_model_from_memory(&m.xml, &m.weights).unwrap();
    assert_eq!(model.name().unwrap(), "u8_input");
    let i = model.inputs().unwrap();
    assert_eq!(i[0].name, "input");
    assert_eq!(i[0].element_type, ElementType::U8);
    assert_eq!(i[0].shape, Some(Shape::new(&[1, 4096])));
    assert_eq!(i[0].byte_size(), Some(4096));
    let o = model.outputs().unwrap();
    assert_eq!(o[0].element_type, ElementType::F32);
}

#[test]
fn read_model_from_file() {
    let m = models::fully_connected();
    let dir = std::env::temp_dir().join(format!("nsb-ov-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (xml, bin) = (dir.join("fc.xml"), dir.join("fc.bin"));
    std::fs::write(&xml, &m.xml).unwrap();
    std::fs::write(&bin, &m.weights).unwrap();
    let core = core();
    {
        let model = core.read_model_from_file(&xml, None).unwrap();
        let compiled = core.compile_model(&model, "CPU", &cpu_properties()).unwrap();
        let mut r = compiled.create_infer_request().unwrap();
        r.set_input_tensor(0, &sample_tensors(&m)[0]).unwrap();
        r.infer().unwrap();
        check_outputs(&m, &mut r);
        let model = core.read_model_from_file(&xml, Some(&bin)).unwrap();
        assert_eq!(model.inputs().unwrap()[0].name, "input");
    }
    // OpenVINO maps the weights file while a model or compiled model over it lives; Windows deletes
    // no mapped file, so the files go only after those are dropped.
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tensors_by_name_and_index() {
    let core = core();
    let m = models::multi_io();
    let compiled = compile(&core, &m, "CPU");
    let mut r = compiled.create_infer_request().unwrap();
    let ins = sample_tensors(&m);
    r.set_tensor("a", &ins[0]).unwrap();
    r.set_tensor("b", &ins[1]).unwrap();
    // A caller-provided output tensor, bound by name: the inference writes into it.
    let product = Tensor::new(ElementType::F32, [1, 1024]).unwrap();
    r.set_tensor("product", &product).unwrap();
    r.infer().unwrap();
    let want = expected(&m);
    let sum = r.tensor("sum").unwrap();
    assert_eq!(&*sum.bytes().unwrap(), &want[0][..]);
    assert_eq!(&*product.bytes().unwrap(), &want[1][..]);
    // By name and by index reach the same tensors.
    assert_eq!(r.output_tensor(0).unwrap().data_ptr().unwrap(), sum.data_ptr().unwrap());
    assert_eq!(r.output_tensor(1).unwrap().data_ptr().unwrap(), product.data_ptr().unwrap());
    assert_eq!(r.input_tensor(0).unwrap().data_ptr().unwrap(), ins[0].data_ptr().unwrap());
    assert_eq!(r.tensor("b").unwrap().data_ptr().unwrap(), ins[1].data_ptr().unwrap());
    // Fill the request's own input tensors in place, through typed views.
    let mut r2 = compiled.create_infer_request().unwrap();
    let mut a = r2.input_tensor(0).unwrap();
    a.data_mut::<f32>().unwrap().iter_mut().enumerate().for_each(|(i, v)| *v = i as f32);
    let mut b = r2.tensor("b").unwrap();
    b.data_mut::<f32>().unwrap().fill(2.0);
    r2.infer().unwrap();
    let p = r2.tensor("product").unwrap();
    let p = p.data::<f32>().unwrap();
    assert_eq!(p[10], 20.0);
    assert_eq!(p.len(), 1024);
}

#[test]
fn async_inference() {
    let core = core();
    let m = models::large_input();
    let compiled = compile(&core, &m, "CPU");
    let mut r = compiled.create_infer_request().unwrap();
    let input = sample_tensors(&m).remove(0);
    r.set_input_tensor(0, &input).unwrap();
    r.start_async().unwrap();
    assert!(r.is_running());
    // While it runs: no rebinding, no second start, no views of the tensors it uses.
    assert_eq!(r.set_input_tensor(0, &input).unwrap_err().kind(), &ErrorKind::InvalidArgument);
    assert_eq!(r.start_async().unwrap_err().kind(), &ErrorKind::InvalidArgument);
    let e = input.data::<f32>().unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Busy);
    assert!(e.to_string().contains("running inference"), "{e}");
    r.wait().unwrap();
    assert!(!r.is_running());
    check_outputs(&m, &mut r);
    assert_eq!(input.data::<f32>().unwrap().len(), 3 * 512 * 512);
    // A view alive at start is refused too.
    let view = input.bytes().unwrap();
    let e = r.start_async().unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Busy);
    assert!(e.to_string().contains("input 0"), "{e}");
    drop(view);
    // Several requests in flight at once; one dropped while running.
    let mut rs: Vec<_> = (0..3).map(|_| compiled.create_infer_request().unwrap()).collect();
    for r in &mut rs {
        r.set_input_tensor(0, &sample_tensors(&m)[0]).unwrap();
        r.start_async().unwrap();
    }
    drop(rs.pop());
    for r in &mut rs {
        r.wait().unwrap();
        check_outputs(&m, r);
    }
    assert!(r.wait().is_ok(), "wait with nothing running is a no-op");
}

#[test]
fn export_import_round_trip() {
    let core = core();
    let m = models::convolution();
    let compiled = compile(&core, &m, "CPU");
    let blob = compiled.export().unwrap();
    assert!(!blob.is_empty());
    let imported = core.import_model(&blob, "CPU").unwrap();
    assert_eq!(imported.inputs().unwrap()[0].name, "input");
    let mut r = imported.create_infer_request().unwrap();
    r.set_input_tensor(0, &sample_tensors(&m)[0]).unwrap();
    r.infer().unwrap();
    check_outputs(&m, &mut r);
    let e = core.import_model(b"not a compiled model", "CPU").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");
}

#[test]
fn parents_outlive_their_children() {
    let m = models::multi_io();
    let mut r = {
        let core = core();
        let compiled = compile(&core, &m, "CPU");
        compiled.create_infer_request().unwrap()
        // core and compiled dropped here: the request keeps them alive
    };
    for (i, t) in sample_tensors(&m).iter().enumerate() {
        r.set_input_tensor(i, t).unwrap();
    } // the tensors are dropped here: the request keeps them alive
    r.infer().unwrap();
    check_outputs(&m, &mut r);
    let out = r.output_tensor(0).unwrap();
    drop(r); // the output tensor keeps the plugin's memory alive
    assert_eq!(&*out.bytes().unwrap(), &expected(&m)[0][..]);
}

/// Memory owned by Rust, wrapped without a copy, that records when it is freed.
struct Buffer {
    data: Box<[f32]>,
    freed: Arc<AtomicBool>,
}
impl Drop for Buffer {
    fn drop(&mut self) {
        self.freed.store(true, Ordering::SeqCst);
    }
}

fn wrapped(values: &[f32]) -> (Tensor, Arc<AtomicBool>) {
    let freed = Arc::new(AtomicBool::new(false));
    let mut buf = Buffer { data: values.to_vec().into_boxed_slice(), freed: freed.clone() };
    let ptr = buf.data.as_mut_ptr();
    let owner: Arc<dyn std::any::Any + Send + Sync> = Arc::new(buf);
    // SAFETY: ptr points to values.len() initialised, aligned f32s owned by `owner`, which the
    // tensor keeps alive; the Box does not move when the Buffer is moved into the Arc.
    let t = unsafe { Tensor::from_host_ptr(ElementType::F32, [1, values.len()], ptr.cast(), Some(owner)) }.unwrap();
    (t, freed)
}

#[test]
fn a_rebound_tensor_lives_until_the_next_inference_finishes() {
    let core = core();
    let m = models::multi_io();
    let compiled = compile(&core, &m, "CPU");
    let mut r = compiled.create_infer_request().unwrap();
    let (a1, a1_freed) = wrapped(&[1.0; 1024]);
    let (b, b_freed) = wrapped(&[3.0; 1024]);
    r.set_input_tensor(0, &a1).unwrap();
    r.set_input_tensor(1, &b).unwrap();
    drop(a1);
    drop(b);
    r.infer().unwrap();
    assert_eq!(r.output_tensor(0).unwrap().data::<f32>().unwrap()[0], 4.0);
    assert!(!a1_freed.load(Ordering::SeqCst), "bound: alive");

    let (a2, a2_freed) = wrapped(&[2.0; 1024]);
    r.set_input_tensor(0, &a2).unwrap();
    drop(a2);
    assert!(!a1_freed.load(Ordering::SeqCst), "rebound but no inference since: still alive");
    // A failed start does not release it either.
    let (a3, _a3_freed) = wrapped(&[5.0; 1024]);
    let v = a3.data::<f32>().unwrap();
    r.set_input_tensor(0, &a3).unwrap();
    assert!(r.infer().is_err(), "a view of a bound tensor is alive");
    drop(v);
    assert!(!a1_freed.load(Ordering::SeqCst));
    r.set_input_tensor(0, &a3).unwrap(); // rebinding the same tensor changes nothing
    r.start_async().unwrap();
    assert!(!a1_freed.load(Ordering::SeqCst), "the inference after the rebinding is running");
    r.wait().unwrap();
    assert!(a1_freed.load(Ordering::SeqCst), "rebound and the next inference finished: released");
    assert!(a2_freed.load(Ordering::SeqCst));
    assert_eq!(r.output_tensor(0).unwrap().data::<f32>().unwrap()[0], 8.0);
    assert!(!b_freed.load(Ordering::SeqCst), "still bound");
    drop(r);
    assert!(b_freed.load(Ordering::SeqCst), "the request is gone");
}

#[test]
fn set_tensor_errors() {
    let core = core();
    let m = models::multi_io();
    let compiled = compile(&core, &m, "CPU");
    let mut r = compiled.create_infer_request().unwrap();

    let wrong_shape = Tensor::new(ElementType::F32, [1, 512]).unwrap();
    let e = r.set_input_tensor(0, &wrong_shape).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Shape);
    assert!(e.to_string().contains("[1,1024]") && e.to_string().contains("[1,512]"), "{e}");
    let e = r.set_tensor("b", &wrong_shape).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Shape, "{e}");

    let wrong_type = Tensor::new(ElementType::I32, [1, 1024]).unwrap();
    let e = r.set_input_tensor(1, &wrong_type).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::ElementType);
    assert!(e.to_string().contains("f32") && e.to_string().contains("i32"), "{e}");

    let ok = Tensor::new(ElementType::F32, [1, 1024]).unwrap();
    let e = r.set_input_tensor(2, &ok).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("2 inputs"), "{e}");
    let e = r.set_tensor("no_such_tensor", &ok).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");
    assert!(e.to_string().contains("no_such_tensor"), "{e}");
}

#[test]
fn tensor_errors() {
    let t = Tensor::new(ElementType::F32, [2, 3]).unwrap();
    assert_eq!(t.byte_size().unwrap(), 24);
    assert!(t.data::<f32>().unwrap().iter().all(|&v| v == 0.0), "zero-filled");
    let e = t.data::<i32>().unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::ElementType);
    assert!(e.to_string().contains("f32") && e.to_string().contains("i32"), "{e}");

    let e = Tensor::from_slice([2, 3], &[1.0f32; 5]).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Shape);
    let e = Tensor::from_bytes(ElementType::F32, [2, 3], &[0u8; 20]).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Size { needed: 24, available: 20 });

    let h = Tensor::from_slice([2], &[F16::from_f32(1.5), F16::from_f32(-2.0)]).unwrap();
    assert_eq!(h.element_type().unwrap(), ElementType::F16);
    assert_eq!(h.data::<F16>().unwrap()[1].to_f32(), -2.0);

    // Clones share the tensor; a mutable view excludes other views.
    let mut a = Tensor::from_slice([4], &[1u8, 2, 3, 4]).unwrap();
    let b = a.clone();
    {
        let mut w = a.data_mut::<u8>().unwrap();
        w[0] = 9;
        assert_eq!(b.data::<u8>().unwrap_err().kind(), &ErrorKind::Busy);
    }
    assert_eq!(&*b.data::<u8>().unwrap(), &[9, 2, 3, 4]);
}

#[test]
fn core_errors() {
    let core = core();
    let m = models::convolution();
    let model = core.read_model_from_memory(&m.xml, &m.weights).unwrap();
    let e = core.compile_model(&model, "NO_SUCH_DEVICE", &cpu_properties()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");
    assert!(e.to_string().contains("NO_SUCH_DEVICE"), "{e}");

    let e = core.read_model_from_memory("<net><layers>", &[]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");
    assert!(e.to_string().contains("reading a model"), "{e}");
    let e = core.read_model_from_memory("", &[]).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidArgument);
    // Weights too short for the constants.
    let e = core.read_model_from_memory(&m.xml, &m.weights[..16]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");

    let e = core.read_model_from_file("/nonexistent/model.xml", None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");
    assert!(e.to_string().contains("/nonexistent/model.xml"), "{e}");

    let e = core.compile_model(&model, "CPU", &cpu_properties().set("NO_SUCH_PROPERTY", "1")).unwrap_err();
    assert!(e.to_string().contains("NO_SUCH_PROPERTY"), "{e}");
}

#[test]
fn remote_context_on_cpu() {
    // The CPU plugin has no remote context: a clean OpenVINO error, not a crash.
    let core = core();
    match core.default_context("CPU") {
        Ok(ctx) => {
            assert_eq!(ctx.device_name().unwrap(), "CPU");
            assert_eq!(ctx.l0_context().unwrap_err().kind(), &ErrorKind::InvalidArgument);
        }
        Err(e) => assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}"),
    }
    let m = models::multi_io();
    let compiled = compile(&core, &m, "CPU");
    if let Err(e) = compiled.context() {
        assert!(matches!(e.kind(), ErrorKind::OpenVino { .. }), "{e:?}");
    }
}

#[test]
fn threads() {
    // Core and CompiledModel are shared across threads; each thread has its own request.
    let core = core();
    let m = models::fully_connected();
    let compiled = compile(&core, &m, "CPU");
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut r = compiled.create_infer_request().unwrap();
                r.set_input_tensor(0, &sample_tensors(&m)[0]).unwrap();
                r.infer().unwrap();
                check_outputs(&m, &mut r);
            });
        }
    });
    // A request moves to another thread.
    let mut r = compiled.create_infer_request().unwrap();
    r.set_input_tensor(0, &sample_tensors(&m)[0]).unwrap();
    let mut r = std::thread::spawn(move || {
        r.infer().unwrap();
        r
    })
    .join()
    .unwrap();
    check_outputs(&m, &mut r);
}

#[test]
fn a_broken_library_path_is_a_library_error() {
    // Loading happens once per process, so the failing load runs in a child process.
    let bogus = std::env::temp_dir().join(format!("nsb-not-a-library-{}.so", std::process::id()));
    std::fs::write(&bogus, b"not a shared library").unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "library_error_child", "--ignored", "--test-threads=1"])
        .env(npu_sycl_bridge::openvino::OPENVINO_C_ENV, &bogus)
        .output()
        .unwrap();
    std::fs::remove_file(&bogus).unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

#[test]
#[ignore = "run in a child process by a_broken_library_path_is_a_library_error"]
fn library_error_child() {
    let Some(path) = std::env::var_os(npu_sycl_bridge::openvino::OPENVINO_C_ENV) else { return };
    let e = Core::new().unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Library, "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&*path.to_string_lossy()) && msg.contains("NPU_SYCL_BRIDGE_OPENVINO_C"), "{msg}");
    assert!(msg.contains("cargo xtask setup"), "{msg}");
    assert!(npu_sycl_bridge::openvino::library_path().is_none());
}

#[test]
fn a_scalar_tensor_reports_its_rank_0_shape() {
    // OpenVINO's C API refuses to hand out a rank-0 shape (ov_tensor_get_shape fails with
    // INVALID_C_PARAM for every scalar); the crate answers the scalar's shape itself. Found by
    // tests/npu_fd_fuzz.rs (a scalar tensor over a dma-buf).
    let t = Tensor::from_bytes(ElementType::F32, Shape::new(&[]), &1.5f32.to_le_bytes()).unwrap();
    assert_eq!(t.shape().unwrap(), Shape::new(&[]));
    assert_eq!(t.byte_size().unwrap(), 4);
    let one = Tensor::from_bytes(ElementType::F32, Shape::new(&[1]), &1.5f32.to_le_bytes()).unwrap();
    assert_eq!(one.shape().unwrap(), Shape::new(&[1]), "rank 1 keeps its shape");
}
