//! The crate's one error type.
//!
//! Every fallible function of every layer (OpenVINO, Level Zero, SYCL, the sharing strategies)
//! returns [`Result<T>`](Result), whose error is an [`Error`]: a [`kind`](Error::kind) to match on
//! (enums all the way down: [`Path`], [`Aligned`]), a short message (`Display`), and where the
//! reason needs it a longer [`explanation`](Error::explanation) of why and what to use instead
//! (printed by the alternate format, `{:#}`).
//!
//! ```
//! use npu_sycl_bridge::error::{Aligned, Error, ErrorKind};
//!
//! let e = Error::alignment(Aligned::CpuVaPointer, 4096, 0x1234);
//! assert!(matches!(e.kind(), ErrorKind::Alignment { what: Aligned::CpuVaPointer, required: 4096, .. }));
//! assert!(e.to_string().contains("4096"));
//! ```

use std::fmt;

mod reason;

pub use self::reason::Reason;

/// `std::result::Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, in a form callers can match on. The [`Error`]'s message has the details.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An OpenVINO C API call failed with this `ov_status_e` value (negative). The message carries
    /// the library's last error message (`ov_get_last_err_msg`).
    OpenVino {
        /// The `ov_status_e` value, e.g. `-1` (GENERAL_ERROR).
        status: i32,
    },
    /// A Level Zero call failed.
    LevelZero {
        /// The `ze_result_t` value, e.g. `0x70000002` (ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY).
        result: u32,
        /// The Level Zero function that returned it, e.g. `"zeMemAllocHost"`.
        call: &'static str,
    },
    /// A pointer or a size is not a multiple of the alignment a path needs (for CPU_VA: 4096).
    Alignment {
        /// What was misaligned.
        what: Aligned,
        /// The alignment needed, in bytes.
        required: usize,
        /// The offending value: the address or the size in bytes.
        actual: usize,
    },
    /// A buffer holds fewer bytes than the tensor needs (or than an operation needs).
    Size {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// A shape does not match (a tensor bound to a port of another shape, a slice of the wrong
    /// length, a dynamic shape where a static one is needed, ...).
    Shape,
    /// An element type does not match (typed access with the wrong Rust type, a tensor of another
    /// element type bound to a port, ...).
    ElementType,
    /// A sharing path that cannot work in this configuration. The message says what was refused;
    /// the explanation ([`Reason::explanation`]) why and what to use instead.
    Unsupported {
        /// The path that does not work.
        path: Path,
        /// Why.
        reason: Reason,
    },
    /// The SYCL runtime threw: the message is the C++ exception's text.
    Sycl,
    /// A native runtime (OpenVINO, Level Zero, SYCL) could not be found or loaded. The message
    /// lists what was probed and how to fix it.
    Library,
    /// An argument is invalid (including calls made in a state that does not allow them, such as
    /// rebinding a tensor while an inference is running).
    InvalidArgument,
    /// An I/O operation failed (the message names the file).
    Io,
    /// A bounded resource has nothing free (an [`NpuPool`](crate::pool::NpuPool) whose buffers
    /// are all in use and that may not grow).
    Exhausted,
    /// A tensor is in use and the operation must wait: a running inference uses it (a data view or
    /// a SYCL copy of it was asked for), or a data view or SYCL access holds it (an inference or a
    /// conflicting view was asked for). Retry once the other user finished.
    Busy,
}

/// A way of sharing memory (or of reaching it) that can be [`Unsupported`](ErrorKind::Unsupported).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Path {
    /// The forum snippet's route: a SYCL context over the NPU's Level Zero context.
    CardPath,
    /// A dma-buf fd imported by the NPU (`SHARED_BUF`).
    DmaBuf,
    /// Host memory imported by the NPU (`CPU_VA`).
    CpuVa,
    /// Page-aligned process memory shared by the NPU (CPU_VA) and the SYCL device.
    SharedSystem,
    /// NPU memory reached by SYCL copies.
    NpuToSycl,
    /// NPU memory used by SYCL in place.
    NpuToSyclZeroCopy,
    /// A host view (a Rust slice) of a remote tensor's memory.
    HostView,
    /// `strategy::Auto`: no strategy works.
    Auto,
    /// The NPU itself (no NPU plugin, driver or context).
    Npu,
    /// SYCL itself (no SYCL GPU device).
    Sycl,
    /// A Level Zero device copy.
    DeviceCopy,
    /// An NT handle imported by the NPU (`SHARED_BUF` on Windows).
    NtHandle,
}

impl Path {
    /// The name used in messages: `"card path"`, `"dma-buf"`, `"CPU_VA"`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Path::CardPath => "card path",
            Path::DmaBuf => "dma-buf",
            Path::CpuVa => "CPU_VA",
            Path::SharedSystem => "shared system memory",
            Path::NpuToSycl => "NPU→SYCL copy",
            Path::NpuToSyclZeroCopy => "NPU→SYCL zero-copy",
            Path::HostView => "host view",
            Path::Auto => "auto",
            Path::Npu => "NPU",
            Path::Sycl => "SYCL",
            Path::DeviceCopy => "device copy",
            Path::NtHandle => "NT handle",
        }
    }

    /// The path of shareable-memory handles on this OS: [`DmaBuf`](Self::DmaBuf) on Linux,
    /// [`NtHandle`](Self::NtHandle) on Windows.
    pub const SHARED_HANDLE: Path = if cfg!(windows) { Path::NtHandle } else { Path::DmaBuf };
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an [`Alignment`](ErrorKind::Alignment) error is about.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aligned {
    /// The address of memory imported as CPU_VA (a multiple of 4096).
    CpuVaPointer,
    /// The byte size of a CPU_VA tensor (a multiple of 4096).
    CpuVaByteSize,
    /// A tensor's data pointer for a typed view (the element's alignment).
    TensorData,
}

impl fmt::Display for Aligned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Aligned::CpuVaPointer => "CPU_VA pointer",
            Aligned::CpuVaByteSize => "CPU_VA byte size",
            Aligned::TensorData => "tensor data pointer",
        })
    }
}

/// The crate's error: a [`kind`](Self::kind) to match on, a short message (`Display`) and, where
/// the reason needs it, a longer [`explanation`](Self::explanation) (`{:#}` prints both).
pub struct Error {
    kind: ErrorKind,
    message: String,
    explanation: Option<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), explanation: None, source: None }
    }

    /// What went wrong, to match on.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The short message (the text `Display` prints).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The long explanation: why, on which drivers, and what to use instead (if there is one).
    pub fn explanation(&self) -> Option<&str> {
        self.explanation.as_deref()
    }

    /// Attaches the long explanation.
    pub fn explain(mut self, explanation: impl Into<String>) -> Self {
        self.explanation = Some(explanation.into());
        self
    }

    /// Attaches an underlying cause, returned by [`std::error::Error::source`].
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The same kind, message and explanation, without the source (for reporting an error that
    /// stays where it is).
    #[cfg(feature = "sycl")]
    pub(crate) fn detached(&self) -> Error {
        Error {
            kind: self.kind.clone(),
            message: self.message.clone(),
            explanation: self.explanation.clone(),
            source: None,
        }
    }

    /// Prefixes the message with `context` ("context: message").
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// An OpenVINO call failed with `status`. `message` should say which call and on what, and
    /// carry the library's last error message.
    pub fn openvino(status: i32, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OpenVino { status }, message)
    }

    /// A Level Zero call `call` returned `result`.
    pub fn level_zero(result: u32, call: &'static str, message: impl Into<String>) -> Self {
        let message = message.into();
        let message = if message.is_empty() {
            format!("{call} failed with ze_result_t {result:#x}")
        } else {
            format!("{call} failed with ze_result_t {result:#x}: {message}")
        };
        Self::new(ErrorKind::LevelZero { result, call }, message)
    }

    /// `what` (a pointer or a size) is `actual`, which is not a multiple of `required`.
    pub fn alignment(what: Aligned, required: usize, actual: usize) -> Self {
        Self::new(
            ErrorKind::Alignment { what, required, actual },
            format!("{what} {actual:#x} ({actual}) is not a multiple of {required} bytes"),
        )
        .explain(format!(
            "use memory whose address and byte size are both multiples of {required} (page-aligned \
             allocations such as PageAlignedBuffer), or a path that copies"
        ))
    }

    /// `what` needs `needed` bytes but only `available` are there.
    pub fn size(what: impl fmt::Display, needed: usize, available: usize) -> Self {
        Self::new(
            ErrorKind::Size { needed, available },
            format!("{what}: {needed} bytes are needed but only {available} are available"),
        )
    }

    /// A shape mismatch.
    pub fn shape(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Shape, message)
    }

    /// An element type mismatch.
    pub fn element_type(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ElementType, message)
    }

    /// The sharing path `path` cannot work here, for `reason`: `detail` says what was refused on
    /// this machine (names, addresses, import types); the explanation is the reason's
    /// ([`Reason::explanation`]), the one text for it.
    pub fn unsupported(path: Path, reason: Reason, detail: impl fmt::Display) -> Self {
        // "the card path", not "the card path path".
        let what = if path.as_str().ends_with("path") { path.to_string() } else { format!("{path} path") };
        Self::new(ErrorKind::Unsupported { path, reason }, format!("the {what} is not supported here: {detail}"))
            .explain(reason.explanation())
    }

    /// The SYCL runtime threw an exception with text `what`.
    pub fn sycl(what: impl Into<String>) -> Self {
        Self::new(ErrorKind::Sycl, what)
    }

    /// A native runtime could not be found or loaded; `message` says what was probed and how to fix it.
    pub fn library(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Library, message)
    }

    /// An invalid argument or call.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// A [`Busy`](ErrorKind::Busy) error: a tensor another user holds.
    pub(crate) fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, message)
    }

    /// An I/O error while doing `context` (for example "reading model.xml").
    pub fn io(context: impl fmt::Display, err: std::io::Error) -> Self {
        Self::new(ErrorKind::Io, format!("{context}: {err}")).with_source(err)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match &self.explanation {
            Some(long) if f.alternate() => write!(f, ". {long}"),
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(long) = &self.explanation {
            d.field("explanation", long);
        }
        if let Some(s) = &self.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, err.to_string()).with_source(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_messages() {
        let e = Error::unsupported(Path::DmaBuf, Reason::NotExportable, "the GPU cannot export dma-buf");
        assert_eq!(e.kind(), &ErrorKind::Unsupported { path: Path::DmaBuf, reason: Reason::NotExportable });
        assert_eq!(e.to_string(), "the dma-buf path is not supported here: the GPU cannot export dma-buf");
        let long = Reason::NotExportable.explanation();
        assert_eq!(format!("{e:#}"), format!("{e}. {long}"));
        assert_eq!(e.explanation(), Some(long));
        let e = Error::level_zero(0x7000_0002, "zeMemAllocHost", "");
        assert!(e.to_string().contains("zeMemAllocHost failed with ze_result_t 0x70000002"));
        let e = Error::size("input 0", 16, 8).context("binding");
        assert_eq!(e.kind(), &ErrorKind::Size { needed: 16, available: 8 });
        assert!(e.to_string().starts_with("binding: input 0"));
        let e: Error = std::io::Error::other("boom").into();
        assert_eq!(e.kind(), &ErrorKind::Io);
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn every_reason_has_its_own_name_and_explanation() {
        let mut names: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len(), "names are distinct");
        for r in Reason::ALL {
            assert!(r.explanation().len() > 60, "{r}: an explanation says why and what instead");
            assert!(r.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{r}");
        }
    }

    #[test]
    fn error_is_send_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
    }
}
