fn main() -> std::process::ExitCode {
    cordon::cli::main()
}
