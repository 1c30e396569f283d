// Generates the gRPC stubs from the crate's own copy of proto/holdfast/v1 with protox, a protobuf
// compiler written in Rust, so that building needs no protoc on the machine.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["proto/holdfast/v1/lock.proto", "proto/holdfast/v1/admin.proto"];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(descriptors)?;
    Ok(())
}
