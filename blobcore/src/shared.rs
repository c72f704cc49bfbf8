//! Shared memory: anonymous memory files that several processes map.
//!
//! A [`SharedMem`] is a memory file and this process's map of all of it.
//! On Linux the file is a `memfd_create` file: it has no name, so nothing
//! is ever left in `/dev/shm`, and the kernel frees it when the last
//! descriptor and the last map of it go, in every process — also when a
//! process is killed. Elsewhere on Unix it is a POSIX shared memory object
//! whose name is unlinked at once.
//!
//! The files blobcore makes are sealed (Linux): their size can never
//! change (`F_SEAL_SHRINK | F_SEAL_GROW`), so no process can truncate one
//! under another's map (which would crash readers with SIGBUS), and a file
//! made for a read-only blob is also `F_SEAL_WRITE`: no process can write
//! it. [`FileInfo::inspect`] checks a descriptor that arrives from outside
//! before anything is mapped: it must be a regular file on a memory file
//! system, sealed against shrinking, and large enough.
//!
//! This module only knows files and maps; [`crate::share`] builds blobs
//! on them.

use crate::error::{err, Result};
use std::fs::File;
use std::ptr::NonNull;

#[cfg(unix)]
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

/// What a descriptor refers to, checked before it is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileInfo {
    /// The file's identity in this machine: (device, inode).
    pub(crate) key: (u64, u64),
    /// Its size in bytes.
    pub(crate) size: usize,
    /// True when the file can be mapped for writing through this
    /// descriptor: not write-sealed and opened for writing.
    pub(crate) writable: bool,
}

/// A memory file and this process's map of the whole of it.
pub(crate) struct SharedMem {
    file: File,
    /// None for an empty file (nothing can be mapped).
    map: Option<memmap2::MmapRaw>,
    info: FileInfo,
}

impl std::fmt::Debug for SharedMem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMem").field("info", &self.info).finish()
    }
}

#[cfg(unix)]
fn os_error(what: &str) -> crate::Error {
    err!(Io, "{what}: {}", std::io::Error::last_os_error())
}

impl SharedMem {
    /// A new memory file of `len` bytes holding `init` (zeros when None;
    /// `init` must be `len` bytes), mapped for writing unless `read_only`,
    /// in which case the file is also sealed against writes.
    #[cfg(unix)]
    pub(crate) fn create(len: usize, init: Option<&[u8]>, read_only: bool) -> Result<SharedMem> {
        if init.is_some_and(|b| b.len() != len) {
            return Err(err!(Internal, "shared memory: {len} bytes made from {} bytes", init.map_or(0, <[u8]>::len)));
        }
        let file = new_memory_file()?;
        file.set_len(len as u64).map_err(|e| err!(OutOfMemory, "cannot size a shared memory file to {len} bytes: {e}"))?;
        if read_only {
            if let Some(bytes) = init {
                // Written through the descriptor: a writable map would keep
                // the file from being sealed against writes.
                std::os::unix::fs::FileExt::write_all_at(&file, bytes, 0)
                    .map_err(|e| err!(OutOfMemory, "cannot fill {len} bytes of shared memory: {e}"))?;
            }
            seal(&file, true)?;
        } else {
            seal(&file, false)?;
        }
        let info = FileInfo::of(&file, len)?;
        let mem = SharedMem::map_file(file, info)?;
        if let (Some(bytes), false) = (init, read_only) {
            if len > 0 {
                // SAFETY: the map is `len` writable bytes (the file's size,
                // sealed), fresh: nothing else refers to it yet.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), mem.ptr().as_ptr(), len) };
            }
        }
        Ok(mem)
    }

    /// Maps the memory file behind `fd` (duplicated: the caller keeps its
    /// descriptor) after [`FileInfo::inspect`] accepted it.
    #[cfg(unix)]
    pub(crate) fn open(fd: BorrowedFd<'_>, info: FileInfo) -> Result<SharedMem> {
        let owned: OwnedFd = fd.try_clone_to_owned().map_err(|e| err!(InvalidArgument, "cannot duplicate descriptor {}: {e}", fd.as_raw_fd()))?;
        SharedMem::map_file(File::from(owned), info)
    }

    #[cfg(unix)]
    fn map_file(file: File, info: FileInfo) -> Result<SharedMem> {
        let map = if info.size == 0 {
            None
        } else {
            let opts = {
                let mut o = memmap2::MmapOptions::new();
                o.len(info.size);
                o
            };
            let m = if info.writable { opts.map_raw(&file) } else { opts.map_raw_read_only(&file) };
            Some(m.map_err(|e| err!(OutOfMemory, "cannot map {} bytes of shared memory: {e}", info.size))?)
        };
        Ok(SharedMem { file, map, info })
    }

    /// What the file is.
    pub(crate) fn info(&self) -> FileInfo {
        self.info
    }

    /// The size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.info.size
    }

    /// True when the map cannot be written (a write-sealed file, or a
    /// descriptor opened read-only).
    pub(crate) fn read_only(&self) -> bool {
        !self.info.writable
    }

    /// The start of the map (a dangling, page-aligned pointer for an empty
    /// file, valid for no byte).
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        match &self.map {
            Some(m) => NonNull::new(m.as_mut_ptr()).unwrap_or(NonNull::<Page>::dangling().cast()),
            None => NonNull::<Page>::dangling().cast(),
        }
    }

    /// A new descriptor of the file (close-on-exec), for another process.
    #[cfg(unix)]
    pub(crate) fn dup_fd(&self) -> Result<OwnedFd> {
        let f = self.file.try_clone().map_err(|e| err!(Io, "cannot duplicate a shared memory descriptor: {e}"))?;
        Ok(OwnedFd::from(f))
    }
}

/// A page-aligned type, for dangling pointers with a page's alignment.
#[repr(align(4096))]
struct Page;

impl FileInfo {
    #[cfg(unix)]
    fn of(file: &File, expect: usize) -> Result<FileInfo> {
        // SAFETY: the descriptor is owned by `file` and stays open during the call.
        let info = FileInfo::inspect(unsafe { BorrowedFd::borrow_raw(file.as_raw_fd()) })?;
        if info.size != expect {
            return Err(err!(Internal, "shared memory file of {} bytes, {expect} expected", info.size));
        }
        Ok(info)
    }

    /// Checks that `fd` is a memory file another process can have sent:
    /// an open descriptor of a regular file on a memory file system
    /// (tmpfs, hugetlbfs), sealed against shrinking (Linux; a file that
    /// can shrink under a map crashes its readers). Nothing is mapped.
    #[cfg(unix)]
    pub(crate) fn inspect(fd: BorrowedFd<'_>) -> Result<FileInfo> {
        let raw = fd.as_raw_fd();
        // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a valid out-pointer; a bad descriptor is an error return.
        if unsafe { libc::fstat(raw, &mut st) } != 0 {
            return Err(err!(InvalidArgument, "descriptor {raw} is not an open file: {}", std::io::Error::last_os_error()));
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(err!(InvalidArgument, "descriptor {raw} is not a shared memory file (not a regular file)"));
        }
        let size = usize::try_from(st.st_size)
            .ok()
            .filter(|&s| isize::try_from(s).is_ok())
            .ok_or_else(|| err!(InvalidArgument, "descriptor {raw}: a file of {} bytes cannot be mapped", st.st_size))?;
        // SAFETY: as fcntl(F_GETFL) on any descriptor; reads flags only.
        let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
        if flags < 0 {
            return Err(os_error("fcntl(F_GETFL)"));
        }
        let mut writable = flags & libc::O_ACCMODE == libc::O_RDWR;
        #[cfg(target_os = "linux")]
        {
            // SAFETY: an all-zero `statfs` is a valid value of this plain C struct.
            let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
            // SAFETY: `fs` is a valid out-pointer.
            if unsafe { libc::fstatfs(raw, &mut fs) } != 0 {
                return Err(os_error("fstatfs"));
            }
            // The field's and the constants' C types differ between targets.
            #[allow(clippy::unnecessary_cast)]
            let (magic, tmpfs, hugetlbfs) = (fs.f_type as i64, libc::TMPFS_MAGIC as i64, libc::HUGETLBFS_MAGIC as i64);
            if magic != tmpfs && magic != hugetlbfs {
                return Err(err!(
                    InvalidArgument,
                    "descriptor {raw} is not a shared memory file: it lives on a file system of type {magic:#x}, not in memory (tmpfs)"
                ));
            }
            // SAFETY: reads the seals; files that cannot be sealed report an error.
            let seals = unsafe { libc::fcntl(raw, libc::F_GET_SEALS) };
            if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
                return Err(err!(
                    InvalidArgument,
                    "descriptor {raw}: the memory file can shrink while mapped (it has no F_SEAL_SHRINK seal), which would crash \
                     every reader; pass a memfd_create(MFD_ALLOW_SEALING) file sealed with F_SEAL_SHRINK, such as blob_shared_fd gives"
                ));
            }
            if seals & (libc::F_SEAL_WRITE | libc::F_SEAL_FUTURE_WRITE) != 0 {
                writable = false;
            }
        }
        Ok(FileInfo { key: (st.st_dev as u64, st.st_ino as u64), size, writable })
    }
}

/// A new, empty, unnamed memory file (close-on-exec).
#[cfg(target_os = "linux")]
fn new_memory_file() -> Result<File> {
    // The system call itself, not glibc's wrapper (glibc >= 2.27): the
    // manylinux_2_17 wheel and libblob.so must load on older systems too
    // (the call needs Linux >= 3.17).
    // SAFETY: memfd_create takes a NUL-terminated name and flags; the
    // result is checked.
    let ret = unsafe { libc::syscall(libc::SYS_memfd_create, c"blobcore".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    let fd = libc::c_int::try_from(ret).unwrap_or(-1);
    if fd < 0 {
        return Err(os_error("memfd_create"));
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }))
}

/// A new POSIX shared memory object whose name is unlinked at once, so that
/// only descriptors and maps keep it alive.
#[cfg(all(unix, not(target_os = "linux")))]
fn new_memory_file() -> Result<File> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for _ in 0..64 {
        let name = format!("/blobcore.{}.{}\0", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        // SAFETY: `name` is NUL-terminated; the result is checked.
        let fd = unsafe { libc::shm_open(name.as_ptr().cast(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600 as libc::c_uint) };
        if fd < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::AlreadyExists {
                continue;
            }
            return Err(os_error("shm_open"));
        }
        // SAFETY: as above; the object stays alive through `fd`.
        unsafe { libc::shm_unlink(name.as_ptr().cast()) };
        // SAFETY: `fd` was just opened and is owned by nothing else.
        return Ok(File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }));
    }
    Err(err!(Io, "shm_open: no free name"))
}

/// Seals a new file's size (and its contents when `read_only`) for good.
#[cfg(target_os = "linux")]
fn seal(file: &File, read_only: bool) -> Result<()> {
    let mut seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    if read_only {
        seals |= libc::F_SEAL_WRITE;
    }
    // SAFETY: adds seals to a descriptor this process owns.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(os_error("fcntl(F_ADD_SEALS)"));
    }
    Ok(())
}

#[cfg(all(unix, not(target_os = "linux")))]
fn seal(_file: &File, _read_only: bool) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn created_files_are_sealed_memory_files() {
        let m = SharedMem::create(10_000, None, false).unwrap();
        assert_eq!(m.len(), 10_000);
        assert!(!m.read_only());
        // SAFETY: the map is 10_000 bytes.
        let bytes = unsafe { std::slice::from_raw_parts(m.ptr().as_ptr(), 10_000) };
        assert!(bytes.iter().all(|&b| b == 0));
        let fd = m.dup_fd().unwrap();
        let info = FileInfo::inspect(fd.as_fd()).unwrap();
        assert_eq!(info, m.info());
        // Truncating is refused by the seal.
        assert!(File::from(fd).set_len(1).is_err());
    }

    #[test]
    fn read_only_files_cannot_be_written_anywhere() {
        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let m = SharedMem::create(5000, Some(&data), true).unwrap();
        assert!(m.read_only());
        // SAFETY: the map is 5000 bytes.
        assert_eq!(unsafe { std::slice::from_raw_parts(m.ptr().as_ptr(), 5000) }, &data[..]);
        let f = File::from(m.dup_fd().unwrap());
        assert!(std::os::unix::fs::FileExt::write_all_at(&f, b"x", 0).is_err());
        assert!(memmap2::MmapOptions::new().len(5000).map_raw(&f).is_err());
        assert!(!FileInfo::inspect(f.as_fd()).unwrap().writable);
    }

    #[test]
    fn hostile_descriptors_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [0u8; 64]).unwrap();
        let f = File::open(&path).unwrap();
        assert!(FileInfo::inspect(f.as_fd()).unwrap_err().to_string().contains("not a shared memory file"));
        let d = File::open(dir.path()).unwrap();
        assert!(FileInfo::inspect(d.as_fd()).unwrap_err().to_string().contains("not a regular file"));
        // An unsealed memory file could shrink under the map.
        // SAFETY: the name is NUL-terminated.
        let raw = unsafe { libc::memfd_create(c"x".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(raw >= 0);
        // SAFETY: just opened.
        let unsealed = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
        assert!(FileInfo::inspect(unsealed.as_fd()).unwrap_err().to_string().contains("F_SEAL_SHRINK"));
        // A closed descriptor.
        let closed = unsealed.as_raw_fd();
        drop(unsealed);
        // SAFETY: fstat on a closed number is an error return, nothing more.
        assert!(FileInfo::inspect(unsafe { BorrowedFd::borrow_raw(closed) }).unwrap_err().to_string().contains("not an open file"));
    }

    #[test]
    fn empty_files_map_nothing() {
        let m = SharedMem::create(0, Some(&[]), false).unwrap();
        assert_eq!(m.len(), 0);
        assert_eq!(m.ptr().as_ptr() as usize % 4096, 0);
    }
}
