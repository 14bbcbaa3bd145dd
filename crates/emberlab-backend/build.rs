//! With the `tch` feature, embeds libtorch's library folder as an rpath in this package's
//! tests, examples and benches, so they run without `LD_LIBRARY_PATH`.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(dir) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
