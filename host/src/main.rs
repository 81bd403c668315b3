fn main() -> std::process::ExitCode {
    // Under a file-size limit (`ulimit -f`, systemd's `LimitFSIZE=`), a write past
    // it raises SIGXFSZ, whose default action kills the whole server. Ignored, the
    // write fails with EFBIG instead, and that call gets an `io` error.
    // SAFETY: setting a signal's disposition to SIG_IGN, before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    tune_allocator();
    cordon::cli::main()
}

/// Keeps glibc's `malloc` from giving memory back to the kernel and taking it
/// again on every page. A page's buffers (its text, the escaped forms, the
/// message: a few hundred KB) are freed at the top of the heap once it is
/// sent; past glibc's default trim threshold that top is returned (`brk`),
/// and the next page faults every page of it in again. A `read` of 1 GiB at
/// the largest page spent a fifth of its main thread so. Blocks from 4 MiB up
/// are still mapped on their own and returned when freed, and at most 8 MiB
/// of free heap is kept. A `GLIBC_TUNABLES` that sets `glibc.malloc.*` is
/// left to decide.
fn tune_allocator() {
    #[cfg(target_env = "gnu")]
    {
        let tuned = std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc."));
        if !tuned {
            // SAFETY: `mallopt` only sets allocator parameters; called before
            // any thread starts.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 8 << 20);
            }
        }
    }
}
