//! Property tests of the public API's fd argument (issue 14 item 4): `NpuContext::import` of an
//! `OwnedFd` that may be anything — a regular file, a directory, a pipe's end, `/dev/null`, a memfd,
//! a socket, or a real dma-buf exported by the virtual GPU — of any size, as a tensor of any element
//! type, shape and tensor type.
//!
//! Each case must end in a typed error of the kind the fd and the tensor call for, or (a dma-buf at
//! least as large as the tensor) in a tensor with that element type and shape over the buffer; it
//! must never crash, and once everything is dropped no fd and no NPU allocation may be left (the
//! fd handed over is closed exactly once). The model: a tensor with no elements, too many, or an
//! element type without a bit size is refused before the fd is looked at; then an fd whose size
//! (`fstat`, or the end of a seekable fd) is smaller than the tensor is a `Size` error naming both;
//! anything else that is not a dma-buf reaches the driver, which refuses it (a real PRIME import
//! refuses memfds, files, pipes and sockets).
use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, OnceLock};

use npu_sycl_bridge::level_zero::{DeviceType, L0Allocation, L0Context};
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{ElementType, MemType, Shape, TensorType};
use npu_sycl_bridge::ErrorKind;
use proptest::prelude::*;
use testkit::models;

mod common;

use common::npu::{core, counter, expected_import_bytes, l0_device, open_fds, NpuAndCpu};

/// What the fd handed to the import is.
#[derive(Debug, Clone)]
enum FdKind {
    /// A regular file of this many bytes (sparse), opened read-write or read-only.
    File {
        len: usize,
        writable: bool,
    },
    /// A directory (its `st_size` is the file system's, not 0).
    Directory,
    /// A pipe's read or write end (the other end stays open during the import).
    Pipe {
        read_end: bool,
    },
    DevNull,
    /// A memfd of this many bytes: shared memory, but no driver exported it.
    Memfd {
        len: usize,
    },
    /// One end of a connected Unix socket pair.
    Socket,
    /// A dma-buf exported by the virtual GPU from exportable device memory of this many bytes.
    DmaBuf {
        len: usize,
    },
}

fn fd_kind() -> impl Strategy<Value = FdKind> {
    // Sizes around the tensors' (up to a few KiB), page multiples for device memory.
    let len = prop_oneof![0usize..=64, 0usize..=20_000, Just(4096), Just(8192)];
    prop_oneof![
        (len.clone(), any::<bool>()).prop_map(|(len, writable)| FdKind::File { len, writable }),
        Just(FdKind::Directory),
        any::<bool>().prop_map(|read_end| FdKind::Pipe { read_end }),
        Just(FdKind::DevNull),
        len.prop_map(|len| FdKind::Memfd { len }),
        Just(FdKind::Socket),
        (1usize..=4).prop_map(|pages| FdKind::DmaBuf { len: pages * 4096 }),
    ]
}

/// Shapes of rank 0 to 4 with small extents (0 included), or one with an extent so large that the
/// element count or the byte count overflows.
fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        8 => prop::collection::vec(prop_oneof![1usize..=16, 0usize..=128], 0..=4),
        1 => (prop::collection::vec(1usize..=4, 0..=2), prop_oneof![Just(usize::MAX), Just(usize::MAX / 3), Just(1usize << 62)])
            .prop_map(|(mut dims, huge)| {
                dims.push(huge);
                dims
            }),
    ]
}

fn tensor_type() -> impl Strategy<Value = TensorType> {
    prop::sample::select(vec![TensorType::Input, TensorType::Output, TensorType::Binded])
}

/// The NPU context (one model compiled for the NPU) and a GPU context to export dma-bufs from.
struct Setup {
    npu: NpuContext,
    gpu: Arc<L0Context>,
    device: npu_sycl_bridge::level_zero::L0Device,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let npu = NpuAndCpu::new(core(), models::fully_connected()).npu;
        let (driver, device) = l0_device(DeviceType::Gpu);
        Setup { npu, gpu: Arc::new(L0Context::create(driver).unwrap()), device }
    })
}

/// The fd of `kind`, and what must stay alive beside it during the import (the pipe's or the
/// socket pair's other end, the GPU memory a dma-buf was exported from).
fn make_fd(kind: &FdKind, s: &Setup) -> (OwnedFd, Option<Box<dyn std::any::Any>>) {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    match *kind {
        FdKind::File { len, writable } => {
            let path = dir.join("npu-fd-fuzz.bin");
            let f = File::create(&path).unwrap();
            f.set_len(len as u64).unwrap();
            drop(f);
            let f = File::options().read(true).write(writable).open(&path).unwrap();
            (f.into(), None)
        }
        FdKind::Directory => (File::open(&dir).unwrap().into(), None),
        FdKind::Pipe { read_end } => {
            let mut ends = [0; 2];
            // SAFETY: pipe2 writes two new fds into `ends`.
            assert_eq!(unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) }, 0, "pipe2");
            // SAFETY: both are new fds that nothing else owns.
            let (r, w) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
            if read_end {
                (r, Some(Box::new(w)))
            } else {
                (w, Some(Box::new(r)))
            }
        }
        FdKind::DevNull => (File::options().read(true).write(true).open("/dev/null").unwrap().into(), None),
        FdKind::Memfd { len } => {
            // SAFETY: memfd_create with a valid C string; the fd is checked and owned below.
            let raw = unsafe { libc::memfd_create(c"npu-fd-fuzz".as_ptr(), libc::MFD_CLOEXEC) };
            assert!(raw >= 0, "memfd_create: {}", std::io::Error::last_os_error());
            // SAFETY: `raw` is a new fd nothing else owns.
            let mut f = unsafe { File::from_raw_fd(raw) };
            f.write_all(&vec![0x5a; len]).unwrap();
            (f.into(), None)
        }
        FdKind::Socket => {
            let (a, b) = UnixStream::pair().unwrap();
            (a.into(), Some(Box::new(b)))
        }
        FdKind::DmaBuf { len } => {
            let mem: L0Allocation = s.gpu.alloc_device_exportable(s.device, len, 4096).unwrap();
            let fd = mem.export_dma_buf().unwrap();
            (fd, Some(Box::new(mem)))
        }
    }
}

/// The size the import finds behind an fd: `fstat`'s, or for size 0 the end of a seekable fd.
fn size_behind(fd: &OwnedFd) -> usize {
    // SAFETY: a zeroed stat is a valid output buffer; fstat writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat of our open fd.
    assert_eq!(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) }, 0);
    if st.st_size > 0 {
        return st.st_size as usize;
    }
    // SAFETY: lseek on our open fd; the offset is restored (seekable fds) or nothing moved.
    let cur = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_CUR) };
    if cur < 0 {
        return 0;
    }
    // SAFETY: as above.
    let end = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_END) };
    // SAFETY: as above.
    unsafe { libc::lseek(fd.as_raw_fd(), cur, libc::SEEK_SET) };
    end.max(0) as usize
}

/// One import of an fd of `kind` as a tensor of `et` and `dims`: checks the outcome against the
/// model; returns what happened, for the case's message.
fn one_import(kind: &FdKind, et: ElementType, dims: &[usize], tt: TensorType) -> Result<String, TestCaseError> {
    let s = setup();
    let (fd, keep) = make_fd(kind, s);
    let available = size_behind(&fd);
    let result = s.npu.import(fd, et, Shape::new(dims), tt);
    let what = match (&result, expected_import_bytes(et, dims)) {
        (Err(e), Err(first)) => {
            prop_assert_eq!(e.kind(), &first, "{:#}", e);
            format!("refused first: {e}")
        }
        (Ok(_), Err(first)) => return Err(TestCaseError::fail(format!("imported, but {first:?} was due"))),
        (Err(e), Ok(n)) if n > available => {
            prop_assert_eq!(e.kind(), &ErrorKind::Size { needed: n, available }, "{:#}", e);
            format!("too small: {e}")
        }
        (Err(e), Ok(_)) => {
            prop_assert!(!matches!(kind, FdKind::DmaBuf { .. }), "a dma-buf large enough was refused: {:#}", e);
            prop_assert!(
                matches!(e.kind(), ErrorKind::OpenVino { .. } | ErrorKind::LevelZero { .. }),
                "the driver's refusal of a non-dma-buf is a runtime error: {:?}: {:#}",
                e.kind(),
                e
            );
            let message = format!("{e:#}");
            prop_assert!(!message.trim().is_empty());
            format!("refused by the driver: {:?}", e.kind())
        }
        (Ok(t), Ok(_)) => {
            prop_assert!(matches!(kind, FdKind::DmaBuf { .. }), "a {:?} was imported", kind);
            prop_assert_eq!(t.element_type(), et);
            prop_assert_eq!(t.shape(), &Shape::new(dims));
            prop_assert_eq!(t.remote().params().unwrap().mem_type, Some(MemType::SharedBuf));
            "imported".to_string()
        }
    };
    drop(result);
    drop(keep);
    Ok(what)
}

proptest! {
    // Each case makes an fd and imports it through OpenVINO: 256 cases take well under a second.
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any fd as any tensor: a typed error or a correct tensor, never a crash, and afterwards the
    /// process holds exactly the fds and NPU allocations it held before.
    #[test]
    fn any_fd_as_any_tensor_is_a_typed_error_or_a_correct_tensor(
        kind in fd_kind(),
        et in prop::sample::select(ElementType::ALL.to_vec()),
        dims in shape(),
        tt in tensor_type(),
    ) {
        // Warm-up outside the counts: the contexts, and the plugin's first import.
        let s = setup();
        static WARM: OnceLock<()> = OnceLock::new();
        WARM.get_or_init(|| {
            let (fd, keep) = make_fd(&FdKind::DmaBuf { len: 4096 }, s);
            drop(s.npu.import(fd, ElementType::U8, [4096], TensorType::Input).unwrap());
            drop(keep);
        });
        let (fds, npu_allocations) = (open_fds(), counter("npu.live_allocations"));
        let what = one_import(&kind, et, &dims, tt)?;
        prop_assert_eq!(open_fds(), fds, "fds after {:?} as {} {:?}: {}", kind, et, dims, what);
        prop_assert_eq!(counter("npu.live_allocations"), npu_allocations, "NPU allocations after {:?}: {}", kind, what);
    }
}
