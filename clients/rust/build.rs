//! Generates the `ziggurat.v1` messages and clients from `proto/` at build time.
//!
//! protoc comes from the `protoc-bin-vendored` crate on crates.io, so nobody installs it by
//! hand; `PROTOC` in the environment overrides it.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("PROTOC").is_none() {
        // SAFETY: build scripts are single-threaded; nothing else reads the environment now.
        unsafe { std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?) };
    }
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let files: Vec<PathBuf> = ["game", "match", "match_service", "bot_service"]
        .iter()
        .map(|name| root.join(format!("ziggurat/v1/{name}.proto")))
        .collect();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    tonic_prost_build::configure()
        .build_server(false)
        .compile_protos(&files, &[root])?;
    Ok(())
}
