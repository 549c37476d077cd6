//! The shipped library's interface: every exported symbol carries the `bc_` prefix, the header
//! declares each of them, and the header's version macros agree with Cargo.toml.
use testkit::header;

use std::path::PathBuf;
use std::process::Command;

/// The shared library this test binary was built with: `cargo test` builds it in
/// target/<profile>/deps (only `cargo build` copies it one level up, so that copy may be stale).
fn shared_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("target/<profile>/deps/<test>");
    [
        deps.to_path_buf(),
        deps.parent().expect("target/<profile>").to_path_buf(),
    ]
    .into_iter()
    .map(|dir| dir.join("libbroadcast.so"))
    .find(|so| so.exists())
    .unwrap_or_else(|| panic!("libbroadcast.so is missing from {}", deps.display()))
}

fn exported_symbols() -> Vec<String> {
    let so = shared_library();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
        .expect("nm (binutils) must be installed");
    assert!(
        out.status.success(),
        "nm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_addr, kind, name) = (f.next()?, f.next()?, f.next()?);
            matches!(kind, "T" | "D" | "B" | "R" | "W" | "V").then(|| name.to_string())
        })
        .collect()
}

#[test]
fn every_exported_symbol_has_the_bc_prefix() {
    let symbols = exported_symbols();
    assert!(symbols.len() > 50, "suspiciously few exports: {symbols:?}");
    let stray: Vec<&String> = symbols.iter().filter(|s| !s.starts_with("bc_")).collect();
    assert!(
        stray.is_empty(),
        "exports without the bc_ prefix: {stray:?}"
    );
    println!("{} exported symbols, all prefixed bc_", symbols.len());
}

#[test]
fn header_declares_every_export() {
    let declared = header::exported_functions();
    let missing: Vec<String> = exported_symbols()
        .into_iter()
        .filter(|s| declared.binary_search(s).is_err())
        .collect();
    assert!(
        missing.is_empty(),
        "exported but not declared in the header: {missing:?}"
    );
}

#[test]
fn header_version_macros_match_cargo() {
    let header = header::header_text();
    let version = env!("CARGO_PKG_VERSION");
    let mut parts = version.split('.');
    for name in ["MAJOR", "MINOR", "PATCH"] {
        let line = format!("#define BC_VERSION_{name} {}", parts.next().unwrap());
        assert!(header.contains(&line), "header lacks `{line}`");
    }
    assert!(header.contains(&format!("#define BC_VERSION_STRING \"{version}\"")));
    // SAFETY: bc_version returns a static NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(broadcast::ffi::bc_version()) };
    assert_eq!(v.to_str().unwrap(), version);
}

/// The shared library names itself `libbroadcast.so.MAJOR` (its soname, which programs linked
/// against it ask for at run time), and build.rs puts that name beside it in the build directory
/// so that programs linked against the build tree run too.
#[test]
fn shared_library_soname_carries_the_major_version() {
    let so = shared_library();
    let out = Command::new("objdump")
        .arg("-p")
        .arg(&so)
        .output()
        .expect("objdump (binutils) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    let soname = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("SONAME"))
        .map(str::trim);
    let expected = format!("libbroadcast.so.{}", env!("CARGO_PKG_VERSION_MAJOR"));
    assert_eq!(
        soname,
        Some(expected.as_str()),
        "objdump -p {}",
        so.display()
    );
    let link = so.with_file_name(&expected);
    assert_eq!(
        std::fs::canonicalize(&link).ok(),
        std::fs::canonicalize(&so).ok(),
        "{} should lead to {}",
        link.display(),
        so.display()
    );
}
