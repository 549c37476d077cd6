//! Regenerates `include/broadcast.h` from `src/ffi` with cbindgen on every build, so the committed
//! header always matches the code; CI fails when a build leaves `include/` changed (header drift).
//! Also gives the shared library its versioned name (soname on ELF systems, install name on macOS).
use std::env;
use std::path::{Path, PathBuf};

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
    set_library_name(major);
    probe_avx512();
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

/// Sets `cfg(bc_avx512)` on x86-64 when the compiler has stable AVX-512 intrinsics (Rust 1.89):
/// the 16-bit float kernels then get a 16-wide path, chosen at run time on CPUs with AVX-512 F.
/// Older compilers (the minimum is 1.85) build everything else the same.
fn probe_avx512() {
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("x86_64") {
        return;
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let minor = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| {
            v.split_whitespace()
                .nth(1)?
                .split('.')
                .nth(1)?
                .parse::<u32>()
                .ok()
        });
    if minor.is_some_and(|m| m >= 89) {
        println!("cargo:rustc-cfg=bc_avx512");
    }
}

/// The name the shared library records for itself, which programs linked against it look for at
/// run time: `libbroadcast.so.MAJOR` (`libbroadcast.MAJOR.dylib` on macOS), so that a program
/// built against one 0.x release loads any later 0.x (they only add to the ABI; CHANGELOG.md).
/// Windows DLLs have no such name.
fn set_library_name(major: &str) {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let (flag, name, file) = match os.as_str() {
        "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly" => (
            "-soname,",
            format!("libbroadcast.so.{major}"),
            "libbroadcast.so",
        ),
        "macos" | "ios" => (
            "-install_name,@rpath/",
            format!("libbroadcast.{major}.dylib"),
            "libbroadcast.dylib",
        ),
        _ => return,
    };
    println!("cargo:rustc-cdylib-link-arg=-Wl,{flag}{name}");
    link_in_build_dirs(&name, file);
}

/// A program linked against `target/<profile>/libbroadcast.so` asks for the versioned name at run
/// time, so that name must exist beside the library in the build directories too (an install
/// makes its own links): `target/<profile>/libbroadcast.so.0 -> libbroadcast.so`, and the same in
/// `deps/`, where `cargo test` leaves the library. Best effort: a layout that is not cargo's usual
/// `<profile>/build/<package>/out` is left alone.
#[cfg(unix)]
fn link_in_build_dirs(name: &str, file: &str) {
    let Some(out_dir) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    let Some(profile) = out_dir.ancestors().nth(3) else {
        return;
    };
    if out_dir.ancestors().nth(2).and_then(Path::file_name) != Some("build".as_ref()) {
        return;
    }
    for dir in [profile.to_path_buf(), profile.join("deps")] {
        let link = dir.join(name);
        if dir.is_dir() && std::fs::symlink_metadata(&link).is_err() {
            let _ = std::os::unix::fs::symlink(file, &link);
        }
    }
}

#[cfg(not(unix))]
fn link_in_build_dirs(_name: &str, _file: &str) {}
