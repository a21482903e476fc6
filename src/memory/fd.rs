//! dma-buf fds: whether one is open, the size and identity of the buffer behind it.

use std::os::fd::RawFd;

use crate::error::{Error, ErrorKind, Result};

/// `Ok` when `fd` refers to an open file (fstat succeeds).
pub(crate) fn check_open(fd: RawFd) -> Result<()> {
    // SAFETY: a zeroed stat is a valid output buffer; fstat only writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on any integer is safe; it fails with EBADF for a number that is not open.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        let err = std::io::Error::last_os_error();
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "dma-buf fd {fd} is not an open file descriptor ({err}); pass an fd exported by the GPU \
                 (e.g. L0Allocation::export_dma_buf) and keep it open until it is handed over"
            ),
        )
        .with_source(err));
    }
    Ok(())
}

/// The size of the buffer behind `fd` and its identity (device, inode): `fstat`'s size (memfds,
/// files) or, for real dma-bufs (whose `st_size` is 0), `lseek(SEEK_END)`; the file offset is restored.
pub(crate) fn fd_buffer(raw: RawFd) -> Result<(usize, (u64, u64))> {
    // SAFETY: as in check_open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into `st` only.
    if unsafe { libc::fstat(raw, &mut st) } != 0 {
        return Err(Error::io(format!("fstat of dma-buf fd {raw}"), std::io::Error::last_os_error()));
    }
    let mut size = usize::try_from(st.st_size).unwrap_or(0);
    if size == 0 {
        // SAFETY: lseek on an open fd; the old offset is restored right after.
        let cur = unsafe { libc::lseek(raw, 0, libc::SEEK_CUR) };
        if cur >= 0 {
            // SAFETY: as above.
            let end = unsafe { libc::lseek(raw, 0, libc::SEEK_END) };
            // SAFETY: restores the offset read above.
            unsafe { libc::lseek(raw, cur, libc::SEEK_SET) };
            if end > 0 {
                size = end as usize;
            }
        }
    }
    Ok((size, (st.st_dev, st.st_ino)))
}
