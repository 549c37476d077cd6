//! Regenerates `include/broadcast.h` from `src/ffi` with cbindgen on every build, so the committed
//! header always matches the code; CI fails when a build leaves `include/` changed (header drift).
use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=Cargo.toml");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is valid");
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let mut config = config;
    let mut parts = version.split('.');
    let (major, minor, patch) = (
        parts.next().unwrap_or("0"),
        parts.next().unwrap_or("0"),
        parts.next().unwrap_or("0"),
    );
    // The version macros, then cbindgen.toml's own text (the DLPack guard).
    config.after_includes = Some(format!(
        "\n#define BC_VERSION_MAJOR {major}\n#define BC_VERSION_MINOR {minor}\n#define BC_VERSION_PATCH {patch}\n#define BC_VERSION_STRING \"{version}\"\n{}",
        config.after_includes.as_deref().unwrap_or("")
    ));
    let out = crate_dir.join("include").join("broadcast.h");
    let bindings = cbindgen::Builder::new()
        // Only the FFI layer is the C API: parse it alone, not the engine.
        .with_src(crate_dir.join("src").join("ffi").join("mod.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    // Write only when the text changed, so builds do not touch the file's mtime needlessly.
    let mut text = Vec::new();
    bindings.write(&mut text);
    if std::fs::read(&out).ok().as_deref() != Some(&text[..]) {
        std::fs::write(&out, &text).expect("cannot write include/broadcast.h");
    }
}
