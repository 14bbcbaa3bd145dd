//! Compiles `proto/ember.proto` (inside this crate, so that it builds from its package) with protox (a pure-Rust protobuf compiler: no `protoc` on
//! the machine) into tonic services.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "grpc")]
    {
        let proto_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
        let file = proto_dir.join("ember.proto");
        println!("cargo:rerun-if-changed={}", file.display());
        let fds = protox::compile([&file], [&proto_dir])?;
        tonic_prost_build::configure()
            .build_client(true)
            .build_server(true)
            // The policy's weights: encoded once per version, shared by every answer.
            .bytes(".ember.v1.PolicyWeights.params")
            .compile_fds(fds)?;
    }
    Ok(())
}
