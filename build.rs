//! With the `tch` feature, embeds libtorch's library folder as an rpath in this package's
//! tests, examples and benches, so they run without `LD_LIBRARY_PATH`; with `mujoco`, the
//! MuJoCo library's folder (`MUJOCO_DYNAMIC_LINK_DIR`, from scripts/setup-mujoco.sh).
fn main() {
    println!("cargo:rerun-if-env-changed=MUJOCO_DYNAMIC_LINK_DIR");
    if std::env::var_os("CARGO_FEATURE_MUJOCO").is_some()
        && let Ok(dir) = std::env::var("MUJOCO_DYNAMIC_LINK_DIR")
    {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(dir) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
