/// The server's allocator: mimalloc. A call makes its chunks, items and
/// buffers on the thread that runs the tool and frees many of them on
/// another; glibc's `malloc` then took a sixth of a glob's first page in its
/// slow paths (`_int_malloc`, `malloc_consolidate`), where mimalloc frees a
/// block into the page it came from. It gives freed memory back to the
/// system only after a delay, so a page's buffers are not faulted in again
/// for the next page (what glibc's trimming did before `mallopt` was tuned).
/// Built not to ask for transparent huge pages (`no_thp`): when it did, a
/// server's peak RSS doubled (28 to 55 MiB).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // Under a file-size limit (`ulimit -f`, systemd's `LimitFSIZE=`), a write past
    // it raises SIGXFSZ, whose default action kills the whole server. Ignored, the
    // write fails with EFBIG instead, and that call gets an `io` error.
    // SAFETY: setting a signal's disposition to SIG_IGN, before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    cordon::cli::main()
}
