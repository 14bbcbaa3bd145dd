//! The `ember` command: train an agent with a tuned preset, resume it exactly, evaluate it,
//! plot runs, print presets, measure the machine (`ember --help`). The whole program is
//! [`emberlab_cli::app::main`].

// The allocator is the library's (its default `mimalloc` feature).
fn main() -> std::process::ExitCode {
    emberlab_cli::app::main()
}
