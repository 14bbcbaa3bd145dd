//! With the `mujoco` feature, embeds the folder of the MuJoCo library it links
//! (`MUJOCO_DYNAMIC_LINK_DIR`, from scripts/setup-mujoco.sh) as an rpath in this package's
//! tests (the MuJoCo learning test), so they run without `LD_LIBRARY_PATH`.
fn main() {
    println!("cargo:rerun-if-env-changed=MUJOCO_DYNAMIC_LINK_DIR");
    if std::env::var_os("CARGO_FEATURE_MUJOCO").is_some()
        && let Ok(dir) = std::env::var("MUJOCO_DYNAMIC_LINK_DIR")
    {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
