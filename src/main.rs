use std::process::ExitCode;

fn main() -> ExitCode {
    kb::main()
}
