//! `make test` names a missing tool, with the Debian package that provides it, before it builds
//! anything. Each case runs `make test` with a PATH that is this one's minus one tool (or, for
//! python3's venv module, with a python3 that cannot import it) and checks that the run stops at
//! the check, naming exactly what was hidden on top of whatever this machine already lacks.
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A directory holding a link to every command on this PATH except `hidden`.
fn path_without(dir: &Path, hidden: &str) {
    std::fs::create_dir_all(dir).expect("make the PATH directory");
    let path = std::env::var_os("PATH").expect("PATH");
    for d in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let link = dir.join(&name);
            if name != hidden && !link.exists() {
                let _ = symlink(e.path(), &link);
            }
        }
    }
}

/// `make test` with PATH set to `dir` only; a run that gets past the check is ended by `timeout`
/// (it must not start the whole suite from inside the suite).
fn make_test(dir: &Path) -> Output {
    Command::new("timeout")
        .args(["60", "make", "--no-print-directory", "test"])
        .current_dir(root())
        .env("PATH", dir)
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .env_remove("CC")
        .env_remove("CXX")
        .output()
        .expect("run make")
}

/// The `  - ...` lines the check printed.
fn missing(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("  - ").map(str::to_string))
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bc-prereqs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What the check reports on this machine with nothing hidden.
fn baseline() -> Vec<String> {
    let out = Command::new("bash")
        .args(["scripts/prereqs.sh", "test"])
        .current_dir(root())
        .env_remove("CC")
        .env_remove("CXX")
        .output()
        .expect("run scripts/prereqs.sh");
    missing(&out)
}

fn expect_stop(out: &Output, base: &[String], want: &str) {
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "make test went on:\n{said}");
    assert_ne!(
        out.status.code(),
        Some(124),
        "make test got past the check:\n{said}"
    );
    let mut named = missing(out);
    named.retain(|m| !base.contains(m));
    assert_eq!(named, [want.to_string()], "make test said:\n{said}");
    assert!(
        !said.contains("cargo ") && !said.contains("sha256sum"),
        "make test ran a step before the check stopped it:\n{said}"
    );
}

#[test]
fn a_hidden_tool_is_named_with_its_package() {
    let base = baseline();
    for (tool, want) in [
        ("go", "go (Debian package golang-go)"),
        ("cmake", "cmake (Debian package cmake)"),
        ("valgrind", "valgrind (Debian package valgrind)"),
        ("pkg-config", "pkg-config (Debian package pkg-config)"),
        ("c++", "c++ (Debian package g++)"),
    ] {
        if base.iter().any(|m| m.starts_with(&format!("{tool} "))) {
            continue; // already missing here: hiding it changes nothing to check
        }
        let dir = scratch(tool);
        path_without(&dir, tool);
        expect_stop(&make_test(&dir), &base, want);
        std::fs::remove_dir_all(&dir).expect("remove the PATH directory");
    }
}

#[test]
fn python_without_venv_is_named_with_its_package() {
    let base = baseline();
    let dir = scratch("venv");
    path_without(&dir, "python3");
    let real = Command::new("sh")
        .args(["-c", "command -v python3"])
        .output()
        .expect("find python3");
    let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
    assert!(!real.is_empty(), "python3 is not on this PATH");
    // A python3 like Debian's without python3-venv: ensurepip cannot be imported.
    let stand_in = dir.join("python3");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\ncase \"$*\" in *ensurepip*) echo \"No module named 'ensurepip'\" >&2; exit 1;; esac\nexec {real} \"$@\"\n"
        ),
    )
    .expect("write the stand-in python3");
    Command::new("chmod")
        .args(["+x"])
        .arg(&stand_in)
        .status()
        .expect("chmod");
    expect_stop(
        &make_test(&dir),
        &base,
        "python3's venv module (Debian package python3-venv)",
    );
    std::fs::remove_dir_all(&dir).expect("remove the PATH directory");
}
