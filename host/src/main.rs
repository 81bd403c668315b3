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
