// ImportedMemory takes the fd by value and closes it after the release: the caller cannot use it after.
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use npu_sycl_bridge::sycl::{SyclContext, SyclDevice, ImportedMemory};

fn import(ctx: &Arc<SyclContext>, dev: &SyclDevice, fd: OwnedFd) {
    let _mem = ImportedMemory::import_dma_buf(ctx, dev, fd, 4096).unwrap();
    let _ = fd.as_raw_fd();
}

fn main() {}
