// Generates the gRPC stubs from proto/holdfast/v1 with protox, a protobuf compiler written in
// Rust, so that building needs no protoc on the machine. In the repository the stubs come from
// its one proto/ folder; a packed crate carries the copy package.sh put in it.
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = crate_dir.join("../..");
    let in_repository = repo.join("clients/rust/Cargo.toml").is_file() && repo.join("proto/holdfast/v1").is_dir();
    let root = if in_repository {
        repo.join("proto")
    } else {
        crate_dir.join("proto")
    }
    .canonicalize()?;
    let files = ["holdfast/v1/lock.proto", "holdfast/v1/admin.proto"].map(|file| root.join(file));
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let descriptors = protox::compile(&files, [&root])?;
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(descriptors)?;
    Ok(())
}
