//! With the `mujoco` feature, embeds the folder of MuJoCo's library
//! (`MUJOCO_DYNAMIC_LINK_DIR`, made by scripts/setup-mujoco.sh) as the extension module's
//! rpath, so that `import emberlab` finds `libmujoco.so` without `LD_LIBRARY_PATH`. emberlab-env's
//! own build script cannot: a dependency's link arguments do not reach this `cdylib`.
fn main() {
    println!("cargo:rerun-if-env-changed=MUJOCO_DYNAMIC_LINK_DIR");
    if std::env::var_os("CARGO_FEATURE_MUJOCO").is_some()
        && let Ok(dir) = std::env::var("MUJOCO_DYNAMIC_LINK_DIR")
    {
        println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,{dir}");
    }
}
