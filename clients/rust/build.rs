// Generates the gRPC stubs from proto/holdfast/v1 with protox, a protobuf compiler written in
// Rust, so that building needs no protoc on the machine, and puts the Redis fence store's script
// (clients/conformance/fence-record-1.lua) in OUT_DIR. In the repository both come from their one
// place; a packed crate carries the copies package.sh put in it.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when it runs, not compiled in: a build script built for a checkout elsewhere that shares
    // the target folder (same package, same hash) must not look there.
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let repo = crate_dir.join("../..");
    let in_repository = repo.join("clients/rust/Cargo.toml").is_file() && repo.join("proto/holdfast/v1").is_dir();
    let root = if in_repository {
        repo.join("proto")
    } else {
        crate_dir.join("proto")
    }
    .canonicalize()?;
    let script = if in_repository {
        repo.join("clients/conformance/fence-record-1.lua")
    } else {
        crate_dir.join("fence-record-1.lua")
    };
    println!("cargo:rerun-if-changed={}", script.display());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::copy(&script, out_dir.join("fence-record-1.lua"))?;
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
