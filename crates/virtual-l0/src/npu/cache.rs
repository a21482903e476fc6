//! The NPU driver's disk cache of compiled graphs, as linux-npu-driver 1.32.1 keeps it
//! (`source/ext/disk_cache.cpp` `DiskCache`, `source/ext/graph.cpp` `getBlobContainerNGraphLite`,
//! `api/prv/zex_driver.cpp`, `os_interface_imp.cpp` `OsFileImp`):
//!
//! - the directory is `ZE_INTEL_NPU_CACHE_DIR`, else `$XDG_CACHE_HOME/ze_intel_npu_cache`, else
//!   `$HOME/.cache/ze_intel_npu_cache`, else `./.cache/ze_intel_npu_cache`; if it cannot be created
//!   the cache is off (an empty directory name, size 0);
//! - the size limit is `ZE_INTEL_NPU_CACHE_SIZE` (bytes; unparsable → 0), else 4 GiB;
//! - an IR graph (`NGRAPH_LITE`) without `ZE_GRAPH_FLAG_DISABLE_CACHING` is looked up by a key over
//!   the driver and compiler, the format, the build flags, the creation flags and the IR (or the
//!   caller's `ze_graph_input_hash_t` instead of the IR); a hit is `LOADED_FROM_CACHE`, a miss is
//!   compiled and stored;
//! - a file is the blob followed by its checksum, made read-only (0440), written under an exclusive
//!   `flock` taken without waiting (`O_EXCL`: never over another file), read under a shared one; a
//!   file whose checksum fails is removed and the graph compiled again;
//! - a blob larger than the limit is not stored; otherwise the least recently read files (by access
//!   time, one per second as the driver's `std::map` keeps them) are removed until it fits.
//!
//! The key and checksum functions are this crate's own (the driver's are CityHash); the files are
//! this driver's blobs, so they are named and sized differently from the real driver's.
//! On Windows the cache is off: the Windows driver is closed source.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The checksum appended to each file: 32 hex digits.
const DIGEST_LEN: usize = 32;

/// Changes whenever the blobs this driver writes change meaning, so old files miss.
const BLOB_FORMAT: &str = concat!("virtual-l0 ", env!("CARGO_PKG_VERSION"), " native v1");

fn dir_state() -> &'static Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        if cfg!(windows) {
            return None;
        }
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let path = if let Some(d) = env("ZE_INTEL_NPU_CACHE_DIR") {
            PathBuf::from(d)
        } else if let Some(x) = env("XDG_CACHE_HOME") {
            PathBuf::from(x).join("ze_intel_npu_cache")
        } else if let Some(h) = env("HOME") {
            PathBuf::from(h).join(".cache/ze_intel_npu_cache")
        } else {
            std::env::current_dir().ok()?.join(".cache/ze_intel_npu_cache")
        };
        std::fs::create_dir_all(&path).ok().map(|_| path)
    })
}

fn max_state() -> &'static AtomicUsize {
    static MAX: OnceLock<AtomicUsize> = OnceLock::new();
    MAX.get_or_init(|| {
        let n = if dir_state().is_none() {
            0
        } else {
            match std::env::var("ZE_INTEL_NPU_CACHE_SIZE") {
                // `std::from_chars` leaves the value 0 when the text does not start with digits.
                Ok(v) => {
                    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse().unwrap_or(0)
                }
                Err(_) => 4 << 30,
            }
        };
        AtomicUsize::new(n)
    })
}

/// The cache directory; `None` when the cache is off.
pub fn dir() -> Option<&'static PathBuf> {
    dir_state().as_ref()
}

/// The size limit in bytes (`zexDiskCacheGetSize`).
pub fn max_size() -> usize {
    max_state().load(Ordering::Relaxed)
}

/// `zexDiskCacheSetSize`: takes effect at the next store; nothing is removed now.
pub fn set_max_size(n: usize) {
    max_state().store(n, Ordering::Relaxed);
}

/// The bytes of the regular files in the directory (`DiskCache::getCacheSize`).
pub fn size() -> usize {
    files().iter().map(|f| f.len).sum()
}

struct File {
    name: std::ffi::OsString,
    len: usize,
    atime: i64,
}

fn files() -> Vec<File> {
    let Some(d) = dir() else { return Vec::new() };
    let Ok(rd) = std::fs::read_dir(d) else { return Vec::new() };
    rd.filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some(File { name: e.file_name(), len: m.len() as usize, atime: atime(&m) })
        })
        .collect()
}

#[cfg(unix)]
fn atime(m: &std::fs::Metadata) -> i64 {
    std::os::unix::fs::MetadataExt::atime(m)
}

#[cfg(not(unix))]
fn atime(_: &std::fs::Metadata) -> i64 {
    0
}

/// 128 bits of two FNV-1a lanes: enough to key graphs and to catch a damaged file.
struct Hash([u64; 2]);

impl Hash {
    fn new() -> Self {
        Hash([0xcbf2_9ce4_8422_2325, 0x6c62_272e_07bb_0142])
    }

    fn update(&mut self, bytes: &[u8]) -> &mut Self {
        // Length first, so that concatenated fields cannot collide by shifting a boundary.
        for b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            self.0[0] = (self.0[0] ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
            self.0[1] = (self.0[1] ^ u64::from(*b).rotate_left(3)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    fn hex(&self) -> String {
        format!("{:016x}{:016x}", self.0[0], self.0[1])
    }
}

/// What a graph's key covers besides the configuration: the IR, or the caller's hash of it.
pub enum Input<'a> {
    Ir(&'a [u8]),
    Hash(u64),
}

/// The cache key of an IR graph; `None` when the cache is off.
pub fn key(format: u32, build_flags: &str, create_flags: u32, input: Input<'_>) -> Option<String> {
    dir()?;
    let mut h = Hash::new();
    let compiler = super::graph::COMPILER_VERSION;
    h.update(BLOB_FORMAT.as_bytes())
        .update(&compiler.major.to_le_bytes())
        .update(&compiler.minor.to_le_bytes())
        .update(&super::graph::MAX_OPSET.to_le_bytes())
        .update(&format.to_le_bytes())
        .update(build_flags.as_bytes())
        .update(&create_flags.to_le_bytes());
    match input {
        Input::Ir(b) => h.update(b),
        Input::Hash(x) => h.update(&x.to_le_bytes()),
    };
    Some(h.hex())
}

/// The blob stored under `key`, if its file is whole. A file whose checksum fails is removed.
pub fn get(key: &str) -> Option<Vec<u8>> {
    let path = dir()?.join(key);
    let file = std::fs::File::open(&path).ok()?;
    if !lock(&file, false) {
        return None;
    }
    let data = std::fs::read(&path).ok()?;
    if data.len() <= DIGEST_LEN {
        return None;
    }
    let (blob, sum) = data.split_at(data.len() - DIGEST_LEN);
    if Hash::new().update(blob).hex().as_bytes() != sum {
        crate::export::trace(format_args!("npu disk cache: {key} is damaged; removed"));
        let _ = std::fs::remove_file(&path);
        return None;
    }
    Some(blob.to_vec())
}

/// Stores `blob` under `key` if it fits the limit, first removing the least recently read files
/// when the cache would overflow; a file another thread or process is writing is left to it.
pub fn put(key: &str, blob: &[u8]) {
    let Some(d) = dir() else { return };
    let need = blob.len() + DIGEST_LEN;
    let max = max_size();
    if need > max {
        return;
    }
    let used = size();
    if used + need > max {
        remove_least_used(used + need - max);
    }
    let path = d.join(key);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o440);
    let Ok(mut file) = opts.open(&path) else { return };
    if !lock(&file, true) {
        return;
    }
    use std::io::Write as _;
    let sum = Hash::new().update(blob).hex();
    if file.write_all(blob).and_then(|()| file.write_all(sum.as_bytes())).is_err() {
        let _ = std::fs::remove_file(&path);
    }
}

fn remove_least_used(needed: usize) {
    let Some(d) = dir() else { return };
    let mut by_atime = std::collections::BTreeMap::new();
    for f in files() {
        by_atime.entry(f.atime).or_insert(f);
    }
    let mut removed = 0;
    for f in by_atime.into_values() {
        let path = d.join(&f.name);
        let Ok(file) = std::fs::File::open(&path) else { continue };
        if !lock(&file, true) || std::fs::remove_file(&path).is_err() {
            continue;
        }
        removed += f.len;
        if removed >= needed {
            break;
        }
    }
}

/// `flock` without waiting, as the driver takes it; the lock lives as long as `file`.
#[cfg(unix)]
fn lock(file: &std::fs::File, exclusive: bool) -> bool {
    let op = if exclusive { libc::LOCK_EX } else { libc::LOCK_SH } | libc::LOCK_NB;
    // SAFETY: a valid open fd owned by `file`.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(file), op) == 0 }
}

#[cfg(not(unix))]
fn lock(_: &std::fs::File, _: bool) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cover_every_input_and_checksums_catch_damage() {
        let a = Hash::new().update(b"ab").update(b"c").hex();
        let b = Hash::new().update(b"a").update(b"bc").hex();
        assert_ne!(a, b, "field boundaries are part of the hash");
        assert_eq!(a.len(), DIGEST_LEN);
        let mut blob = vec![7u8; 1000];
        let sum = Hash::new().update(&blob).hex();
        blob[500] ^= 1;
        assert_ne!(Hash::new().update(&blob).hex(), sum);
    }
}
