//! With the `mujoco` feature:
//! - links NumPy's `libnpyrandom.a` (NumPy's own normal sampler, which the MuJoCo tasks' reset
//!   noise draws from) from the folder scripts/setup-mujoco.sh makes beside the MuJoCo
//!   library (`MUJOCO_DYNAMIC_LINK_DIR`; the archive comes from the NumPy wheel it installs);
//! - embeds that folder as an rpath in this package's tests, examples and benches, so they
//!   run without `LD_LIBRARY_PATH`.
fn main() {
    println!("cargo:rerun-if-env-changed=MUJOCO_DYNAMIC_LINK_DIR");
    if std::env::var_os("CARGO_FEATURE_MUJOCO").is_none() {
        return;
    }
    let Ok(dir) = std::env::var("MUJOCO_DYNAMIC_LINK_DIR") else {
        // mujoco-rs stops the build with its own message about the missing variable.
        return;
    };
    let archive = std::path::Path::new(&dir).join("libnpyrandom.a");
    println!("cargo:rerun-if-changed={}", archive.display());
    if !archive.is_file() {
        eprintln!(
            "error: {} is missing: the `mujoco` feature links NumPy's normal sampler from it; \
             run scripts/setup-mujoco.sh (it links the archive of the NumPy wheel it installs \
             into MUJOCO_DYNAMIC_LINK_DIR) and export what it prints",
            archive.display()
        );
        std::process::exit(1);
    }
    println!("cargo:rustc-link-search=native={dir}");
    println!("cargo:rustc-link-lib=static=npyrandom");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
}
