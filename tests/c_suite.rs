//! The C test suite: compiles each C program in `c_tests/` against `include/broadcast.h` and the
//! library cargo has just built (in this test binary's own target directory), runs it, and fails
//! with its output when it exits non-zero. One `#[test]` per C program, plus header hygiene
//! (C++17, two C translation units, an ignored status warns), the C++ interface
//! (`include/broadcast.hpp`, `c_tests/cpp_wrapper.cpp`), the examples the README shows, the tour
//! of the documented examples (`examples/tour.c`, their one C check), and a check that no file in
//! `c_tests/` is left out. `contract` first writes the calls of
//! `c_tests/contract.c` from the header (`contract_exports.h`, beside the binaries), so the
//! boundary contract of every export runs here too, under the sanitizer script's wrappers.
//!
//! The compiler is found with the `cc` crate (so `CC`/`CXX` are honoured). The library is taken
//! from `target/<profile>/deps`, where `cargo test` itself builds the cdylib and staticlib (only
//! `cargo build` copies them up to `target/<profile>`, so that copy may be stale), falling back to
//! `target/<profile>`. Binaries and their output (`<name>.log`) go to `target/c_suite/<profile>/`.
//! Each program prints `test <name> ... ok|FAILED` per C test; see them with `-- --nocapture`.
//!
//! Environment variables:
//!
//! * `BC_C_SUITE_WRAPPER`: a command prefix for running the binaries, e.g.
//!   `valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect`.
//! * `BC_C_SUITE_CFLAGS`: extra compiler/linker flags, e.g. `-fsanitize=address,undefined`.
//! * `BC_C_SUITE_LINK=static`: link `libbroadcast.a` instead of the shared library.
//! * `BC_C_SUITE_TIMEOUT`: seconds a program may run (default 600).
//!
//! Flags and wrapper are split on whitespace (no quoting).
#![cfg(unix)]

use testkit::contract;
use testkit::header;
use testkit::ops_table;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every source file in `c_tests/` and the test that builds it (checked by `every_c_test_file_is_built`).
const KNOWN_SOURCES: &[&str] = &[
    "bad_input.c",
    "contract.c",
    "ops.c",
    "thread_exit.c",
    "streaming.c",
    "ops_more.c",
    "expr.c",
    "reductions.c",
    "header_tu_main.c",
    "header_tu_other.c",
    "header_cxx.cpp",
    "views_data.c",
    "planner.c",
    "scalar.c",
    "dlpack.c",
    "dlpack_header_official_first.c",
    "dlpack_header_ours_first.c",
    "cpp_wrapper.cpp",
    "cpp_wrapper_other.cpp",
];

const C_FLAGS: &[&str] = &["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"];
const CXX_FLAGS: &[&str] = &["-std=c++17", "-Wall", "-Wextra", "-Werror", "-g"];

struct Paths {
    root: PathBuf,
    /// Where the library this test run was built with lives: target/<profile>/deps. `cargo test`
    /// builds the cdylib and staticlib there (all crate types come from one rustc run) but only
    /// `cargo build` copies them up to target/<profile>, so the copy there may be missing or stale.
    lib_dir: PathBuf,
    /// target/c_suite/<profile>: where the C binaries go.
    out_dir: PathBuf,
}

fn paths() -> Paths {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/c_suite-<hash>  ->  target/<profile>
    let deps = exe.parent().expect("test binary has a parent directory");
    let profile_dir = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps has a parent").to_path_buf()
    } else {
        deps.to_path_buf()
    };
    let wanted = if static_link() {
        "libbroadcast.a"
    } else {
        shared_lib_name()
    };
    let lib_dir = [deps.to_path_buf(), profile_dir.clone()]
        .into_iter()
        .find(|d| d.join(wanted).exists())
        .unwrap_or_else(|| {
            panic!(
                "{wanted} is in neither {} nor {}: cargo builds it with the library (try `cargo build`)",
                deps.display(),
                profile_dir.display()
            )
        });
    let profile = profile_dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "debug".into());
    let target_dir = profile_dir
        .parent()
        .expect("profile dir has a parent")
        .to_path_buf();
    let out_dir = target_dir.join("c_suite").join(profile);
    std::fs::create_dir_all(&out_dir).expect("create target/c_suite");
    Paths {
        root,
        lib_dir,
        out_dir,
    }
}

/// The target triple of this test binary (cc wants one; outside build scripts there is no TARGET).
fn target_triple() -> String {
    if let Ok(t) = std::env::var("TARGET") {
        return t;
    }
    let arch = std::env::consts::ARCH;
    if cfg!(target_os = "macos") {
        format!("{arch}-apple-darwin")
    } else if cfg!(target_os = "linux") {
        let env = if cfg!(target_env = "musl") {
            "musl"
        } else {
            "gnu"
        };
        format!("{arch}-unknown-linux-{env}")
    } else if cfg!(target_os = "freebsd") {
        format!("{arch}-unknown-freebsd")
    } else {
        format!("{arch}-unknown-{}", std::env::consts::OS)
    }
}

fn compiler(cpp: bool) -> PathBuf {
    let triple = target_triple();
    let tool = cc::Build::new()
        .cpp(cpp)
        .target(&triple)
        .host(&triple)
        .opt_level(0)
        .debug(true)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_get_compiler()
        .unwrap_or_else(|e| {
            panic!(
                "cc could not find a {} compiler: {e}",
                if cpp { "C++" } else { "C" }
            )
        });
    tool.path().to_path_buf()
}

fn env_words(name: &str) -> Vec<String> {
    std::env::var(name)
        .map(|v| v.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn shared_lib_name() -> &'static str {
    if cfg!(target_os = "macos") {
        "libbroadcast.dylib"
    } else {
        "libbroadcast.so"
    }
}

fn static_link() -> bool {
    std::env::var("BC_C_SUITE_LINK").is_ok_and(|v| v == "static")
}

/// Link arguments for the library, shared (default) or static (`BC_C_SUITE_LINK=static`).
fn link_args(p: &Paths) -> Vec<String> {
    if static_link() {
        let a = p.lib_dir.join("libbroadcast.a");
        let mut v = vec![a.display().to_string()];
        if cfg!(target_os = "linux") {
            for l in [
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ] {
                v.push(l.into());
            }
        } else {
            v.push("-lm".into());
        }
        v
    } else {
        vec![
            format!("-L{}", p.lib_dir.display()),
            "-lbroadcast".into(),
            format!("-Wl,-rpath,{}", p.lib_dir.display()),
            "-pthread".into(),
            "-lm".into(),
        ]
    }
}

/// Compile `sources` (relative to the repository root) into target/c_suite/<profile>/<name>;
/// panics with the compiler's output on failure.
fn build(p: &Paths, name: &str, sources: &[&str], cpp: bool, extra_flags: &[&str]) -> PathBuf {
    let header = p.root.join("include").join("broadcast.h");
    assert!(
        header.exists(),
        "{} is missing: cargo build generates it",
        header.display()
    );
    let exe = p.out_dir.join(name);
    let cc = compiler(cpp);
    let mut cmd = Command::new(&cc);
    cmd.args(if cpp { CXX_FLAGS } else { C_FLAGS })
        .args(extra_flags)
        .arg(format!("-I{}", p.root.join("include").display()))
        .arg(format!("-I{}", p.root.join("c_tests").display()))
        .args(env_words("BC_C_SUITE_CFLAGS"));
    for s in sources {
        cmd.arg(p.root.join(s));
    }
    cmd.arg("-o").arg(&exe).args(link_args(p));
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cc.display()));
    if !out.status.success() {
        panic!(
            "compiling {name} failed ({}):\n{shown}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    exe
}

/// Run a built program (behind `BC_C_SUITE_WRAPPER` if set) with stdout+stderr captured in order;
/// panics with that output if it exits non-zero, times out, or dies from a signal.
fn run(p: &Paths, exe: &Path) {
    let log_path = exe.with_extension("log");
    let log = File::create(&log_path).expect("create log file");
    let log_err = log.try_clone().expect("clone log file");
    let wrapper = env_words("BC_C_SUITE_WRAPPER");
    let mut cmd = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    cmd.current_dir(&p.root)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    // cargo test puts target/<profile> on LD_LIBRARY_PATH, which the linker's RUNPATH does not
    // override: a copy left there by an older `cargo build` would be loaded instead of the
    // library this run built. Put the right directory first.
    let mut search = vec![p.lib_dir.clone()];
    search.extend(
        std::env::var_os("LD_LIBRARY_PATH")
            .iter()
            .flat_map(std::env::split_paths),
    );
    cmd.env(
        "LD_LIBRARY_PATH",
        std::env::join_paths(search).expect("library paths hold no separator"),
    );
    if std::env::var_os("UBSAN_OPTIONS").is_none() {
        cmd.env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
    }
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    let timeout = Duration::from_secs(
        std::env::var("BC_C_SUITE_TIMEOUT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(600),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for the C program") {
            break Some(st);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    match status {
        Some(st) if st.success() => {
            // Visible with `cargo test -- --nocapture`.
            println!("{shown}\n{output}");
        }
        Some(st) => panic!("{shown} failed ({st}); its output:\n{output}"),
        None => panic!("{shown} did not finish within {timeout:?}; its output so far:\n{output}"),
    }
}

fn build_and_run(name: &str) {
    let p = paths();
    let exe = build(&p, name, &[&format!("c_tests/{name}.c")], false, &[]);
    run(&p, &exe);
}

#[test]
fn bad_input() {
    build_and_run("bad_input");
}

/// The boundary contract of every export (c_tests/contract.c), with the calls generated from the
/// header now (testkit/src/contract.rs): a new export is checked without a test of its own.
#[test]
fn contract() {
    let p = paths();
    let text = header::header_text();
    let protos = header::prototypes();
    let stale = contract::stale_exceptions(&protos);
    assert!(stale.is_empty(), "{}", stale.join("\n"));
    // The operations without a floating-point kernel get integer tensors.
    let int_only: Vec<&str> = ops_table::NAMED_OPS
        .iter()
        .filter(|op| !op.float)
        .flat_map(|op| op.exports)
        .chain(
            ops_table::NAMED_UNARY
                .iter()
                .filter(|op| !op.float)
                .flat_map(|op| op.exports.into_iter().chain(op.inplace.map(|i| i.0))),
        )
        .collect();
    let generated = contract::generate(&protos, &header::function_pointer_types(&text), &int_only)
        .unwrap_or_else(|errors| {
            panic!(
                "the contract test cannot cover every export:\n  {}",
                errors.join("\n  ")
            )
        });
    println!(
        "contract: {} exports in include/broadcast.h; {} checked at the boundary, {} without a \
         pointer parameter (nothing to pass wrong): {}",
        protos.len(),
        generated.checked.len(),
        generated.no_pointer.len(),
        generated.no_pointer.join(", ")
    );
    assert_eq!(
        generated.checked.len() + generated.no_pointer.len(),
        protos.len(),
        "every export is either checked or takes no pointer"
    );
    println!("exceptions, from the header's own words:");
    for (export, param, why) in contract::OPTIONAL {
        println!("  {export} `{param}` may be NULL: {why}");
    }
    for (export, param, why) in contract::FREED {
        println!("  {export} `{param}` is freed, not written: {why}");
    }
    for (export, param, why) in contract::WRITTEN_ON_FAILURE {
        println!("  {export} `{param}` is written also on failure: {why}");
    }
    for (export, param, why) in contract::BOOL_TENSORS {
        println!("  {export} `{param}` is a bool tensor: {why}");
    }
    for (export, how, why) in contract::RESULTS {
        println!("  {export} judged as {how}: {why}");
    }
    for (export, why) in contract::UNRECORDED {
        println!("  {export} does not record its failures: {why}");
    }
    std::fs::write(p.out_dir.join("contract_exports.h"), &generated.source)
        .expect("write contract_exports.h");
    let include = format!("-I{}", p.out_dir.display());
    let exe = build(&p, "contract", &["c_tests/contract.c"], false, &[&include]);
    run(&p, &exe);
}

/// The generator covers an export it has never seen from its parameter types alone, and refuses
/// one with a parameter type it has no rule for (so such an export cannot go unchecked).
#[test]
fn contract_covers_new_exports_by_type_and_refuses_unknown_types() {
    let fn_types = header::function_pointer_types(&header::header_text());
    let new = header::parse(
        "BC_MUST_USE int32_t bc_brand_new(const struct bc_tensor *t, const int64_t *sizes,\n\
         size_t ndim, struct bc_tensor **out);",
    );
    let generated = contract::generate(&new, &fn_types, &[]).map_err(|e| e.join("; "));
    let generated = generated.expect("a new export of known parameter types is covered");
    assert_eq!(generated.checked, ["bc_brand_new"]);
    assert!(
        generated.source.contains(
            "{\"bc_brand_new\", RESULT_STATUS, true, 4, {{\"t\", ROLE_TENSOR, 0, false, false}, \
         {\"sizes\", ROLE_MEMORY, 2, false, false}, {\"ndim\", ROLE_VALUE, 0, false, false}, \
         {\"out\", ROLE_OUT_HANDLES, 1, false, false}}, call_bc_brand_new},"
        ),
        "{}",
        generated.source
    );
    let unknown = header::parse("int32_t bc_odd(const struct bc_tensor *t, struct bc_mystery *m);");
    let errors = contract::generate(&unknown, &fn_types, &[])
        .err()
        .expect("an unknown parameter type is refused");
    assert!(
        errors
            .iter()
            .any(|e| e.contains("bc_odd") && e.contains("struct bc_mystery *")),
        "{errors:?}"
    );
}

#[test]
fn ops() {
    build_and_run("ops");
}

#[test]
fn views_data() {
    build_and_run("views_data");
}

#[test]
fn planner() {
    build_and_run("planner");
}

#[test]
fn scalar() {
    build_and_run("scalar");
}

#[test]
fn dlpack() {
    build_and_run("dlpack");
}

/// Builds `sources` into one program, with -Wpedantic too, and runs it.
fn build_and_run_pedantic(name: &str, sources: &[&str], cpp: bool) {
    let p = paths();
    let exe = build(&p, name, sources, cpp, &["-Wpedantic"]);
    run(&p, &exe);
}

/// include/broadcast.h and the official dlpack.h (c_tests/third_party) in one program, included
/// in both orders (-Wpedantic): the same layouts, and tensors crossing between the two.
#[test]
fn dlpack_headers() {
    build_and_run_pedantic(
        "dlpack_headers",
        &[
            "c_tests/dlpack_header_official_first.c",
            "c_tests/dlpack_header_ours_first.c",
        ],
        false,
    );
}

/// Failing calls from thread-exit destructors return their status.
#[test]
fn thread_exit() {
    build_and_run("thread_exit");
}

/// The per-thread streaming policy: set, refused, per thread, and the same results under each.
#[test]
fn streaming() {
    build_and_run("streaming");
}

#[test]
fn ops_more() {
    build_and_run("ops_more");
}

#[test]
fn expr() {
    build_and_run("expr");
}

#[test]
fn reductions() {
    build_and_run("reductions");
}

/// include/broadcast.h compiles as C++17 (twice included) and links.
#[test]
fn header_cxx() {
    build_and_run_pedantic("header_cxx", &["c_tests/header_cxx.cpp"], true);
}

/// include/broadcast.hpp, the C++ interface: c_tests/cpp_wrapper.cpp (with a second translation
/// unit including the header) built as C++17 with -Wpedantic, run.
#[test]
fn cpp_wrapper() {
    build_and_run_pedantic(
        "cpp_wrapper",
        &["c_tests/cpp_wrapper.cpp", "c_tests/cpp_wrapper_other.cpp"],
        true,
    );
}

/// c_tests/cpp_wrapper.cpp again as C++20, where comparison operators also meet rewritten
/// (reversed) candidates.
#[test]
fn cpp_wrapper_cxx20() {
    let p = paths();
    let exe = build(
        &p,
        "cpp_wrapper_cxx20",
        &["c_tests/cpp_wrapper.cpp", "c_tests/cpp_wrapper_other.cpp"],
        true,
        &["-Wpedantic", "-std=c++20"],
    );
    run(&p, &exe);
}

/// A bc::Tensor does not convert to bool, so `if (a == b)` (a bool tensor) and `if (t)` do not
/// compile; the same code with `defined()` does, so the refusals are the conversion's.
#[test]
fn cpp_tensor_is_not_a_bool() {
    let p = paths();
    let prefix = "#include \"broadcast.hpp\"\nbool f(const bc::Tensor &a, const bc::Tensor &b);\n";
    let (ok, said) = compile_only(
        &p,
        "cpp_not_bool_ok",
        &format!("{prefix}bool f(const bc::Tensor &a, const bc::Tensor &b) {{ return a.defined() && (a == b).defined(); }}\n"),
        true,
        &["-Wpedantic"],
    );
    assert!(ok, "the control does not compile:\n{said}");
    for body in [
        "if (a == b) return true; return false;",
        "return a ? true : b < a;",
    ] {
        let (ok, said) = compile_only(
            &p,
            "cpp_not_bool",
            &format!("{prefix}bool f(const bc::Tensor &a, const bc::Tensor &b) {{ {body} }}\n"),
            true,
            &["-Wpedantic"],
        );
        assert!(
            !ok && said.contains("deleted"),
            "a tensor converted to bool in `{body}`:\n{said}"
        );
    }
}

/// include/broadcast.hpp compiles alone, warning-free, in C++17 and C++20.
#[test]
fn cpp_header_compiles_alone() {
    let p = paths();
    let source = "#include \"broadcast.hpp\"\n";
    for std in ["-std=c++17", "-std=c++20"] {
        let (ok, said) = compile_only(&p, "cpp_header_alone", source, true, &[std, "-Wpedantic"]);
        assert!(ok, "broadcast.hpp alone, {std}:\n{said}");
    }
}

/// Two C translation units that both include the header compile (-Wpedantic) and link together.
#[test]
fn header_two_translation_units() {
    build_and_run_pedantic(
        "header_tu",
        &["c_tests/header_tu_main.c", "c_tests/header_tu_other.c"],
        false,
    );
}

/// examples/tour.c, the walk through the 12 documented examples of docs/semantics.md (section 3)
/// that `make demo` runs, and the suite's one check of them: it compiles warning-free (under the
/// sanitizers' flags too) and every example behaves as documented (shapes, elements, statuses,
/// messages, warnings, untouched targets).
#[test]
fn tour_example() {
    build_and_run_pedantic("tour", &["examples/tour.c"], false);
}

/// An example the README shows (verbatim) compiles warning-free and prints what the README says.
fn readme_example(name: &str, source: &str, cpp: bool, expected: &str) {
    let p = paths();
    let exe = build(&p, name, &[source], cpp, &["-Wpedantic"]);
    run(&p, &exe);
    let printed = std::fs::read_to_string(exe.with_extension("log")).expect("example's output");
    assert_eq!(printed.trim(), expected);
    let readme = std::fs::read_to_string(p.root.join("README.md")).expect("README.md");
    let code = std::fs::read_to_string(p.root.join(source)).expect("example source");
    assert!(
        readme.contains(code.trim()),
        "README's quick start differs from {source}"
    );
    for line in expected.lines() {
        assert!(
            readme.contains(line),
            "README does not show what {source} prints: {line}"
        );
    }
}

/// examples/quickstart.c, the README's C quick start.
#[test]
fn quickstart_example() {
    readme_example(
        "quickstart",
        "examples/quickstart.c",
        false,
        "(4,1) + (4,) -> (4,4); first row: 1.5 2.5 3.5 4.5",
    );
}

/// examples/quickstart.cpp, the README's C++ quick start (include/broadcast.hpp).
#[test]
fn quickstart_cpp_example() {
    readme_example(
        "quickstart_cpp",
        "examples/quickstart.cpp",
        true,
        "(4,1) + (4,) -> (4,4); first row: 1.5 2.5 3.5 4.5\n\
         error 3: The expanded size of the tensor (1) must match the existing size (4) at \
         non-singleton dimension 1.",
    );
}

/// examples/standardize.cpp (C++) compiles warning-free and runs; the count of values above 2 and
/// the first rows it prints are those computed here in f64 from the same matrix: columns
/// standardised with the population standard deviation, values above 2 set to 0.
#[test]
fn standardize_example() {
    let p = paths();
    let exe = build(
        &p,
        "standardize",
        &["examples/standardize.cpp"],
        true,
        &["-Wpedantic"],
    );
    run(&p, &exe);
    let printed = std::fs::read_to_string(exe.with_extension("log")).expect("example's output");

    let (rows, cols) = (1000usize, 8usize);
    let x = |i: usize, j: usize| {
        let u = ((53 * i + 13 * j) % 101) as f64 - 50.0;
        u * u * u / 512.0 * (j + 1) as f64 + j as f64
    };
    let mut z = vec![vec![0.0f64; cols]; rows];
    for j in 0..cols {
        let mean = (0..rows).map(|i| x(i, j)).sum::<f64>() / rows as f64;
        let var = (0..rows).map(|i| (x(i, j) - mean).powi(2)).sum::<f64>() / rows as f64;
        for (i, row) in z.iter_mut().enumerate() {
            row[j] = (x(i, j) - mean) / var.sqrt();
        }
    }
    let above = z.iter().flatten().filter(|&&v| v > 2.0).count();
    assert!(
        printed.contains(&format!(
            "standardised 1000x8 float32; values above 2 set to 0: {above}\n"
        )),
        "the count of values above 2 is not {above}:\n{printed}"
    );

    // The printed rows: PyTorch's text of masked[0:4], 4 digits (fixed or scientific).
    let text = printed
        .split_once("tensor(")
        .and_then(|(_, rest)| rest.rsplit_once(')'))
        .map(|(inside, _)| inside)
        .unwrap_or_else(|| panic!("no tensor printed:\n{printed}"));
    let shown: Vec<f64> = text
        .replace(['[', ']'], " ")
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .unwrap_or_else(|e| panic!("{v:?}: {e}"))
        })
        .collect();
    assert_eq!(shown.len(), 4 * cols, "{printed}");
    for (k, got) in shown.iter().enumerate() {
        let v = z[k / cols][k % cols];
        let want = if v > 2.0 { 0.0 } else { v };
        assert!(
            (got - want).abs() <= 6e-5 + 1e-4 * want.abs(),
            "row {} column {}: printed {got}, computed {want}\n{printed}",
            k / cols,
            k % cols
        );
    }
}

/// Compiles `source` (no linking) as C11 or C++17 with warnings as errors; returns whether it
/// compiled and what the compiler said.
fn compile_only(p: &Paths, name: &str, source: &str, cpp: bool, extra: &[&str]) -> (bool, String) {
    let src = p.out_dir.join(if cpp {
        format!("{name}.cpp")
    } else {
        format!("{name}.c")
    });
    std::fs::write(&src, source).expect("write the test source");
    let out = Command::new(compiler(cpp))
        .args(if cpp { CXX_FLAGS } else { C_FLAGS })
        .args(extra)
        .arg(format!("-I{}", p.root.join("include").display()))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(src.with_extension("o"))
        .output()
        .expect("run the compiler");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Ignoring a status is a warning (an error under -Werror) in C and in C++, through the header's
/// BC_MUST_USE; defining BC_MUST_USE empty before the include turns it off.
#[test]
fn ignored_status_warns() {
    let p = paths();
    let source =
        "#include \"broadcast.h\"\nvoid f(void);\nvoid f(void) { bc_set_num_threads(1); }\n";
    for cpp in [false, true] {
        let (ok, said) = compile_only(&p, "ignored_status", source, cpp, &[]);
        assert!(
            !ok && said.contains("unused"),
            "ignoring a status compiled without a warning (C++: {cpp}):\n{said}"
        );
        let (ok, said) = compile_only(&p, "ignored_status", source, cpp, &["-DBC_MUST_USE="]);
        assert!(ok, "with BC_MUST_USE defined empty (C++: {cpp}):\n{said}");
    }
}

/// A new C program dropped into c_tests/ must get a test here, not be silently skipped.
#[test]
fn every_c_test_file_is_built() {
    let p = paths();
    let mut unknown = Vec::new();
    for entry in std::fs::read_dir(p.root.join("c_tests")).expect("read c_tests/") {
        let name = entry
            .expect("dir entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        let is_source = name.ends_with(".c") || name.ends_with(".cpp") || name.ends_with(".cc");
        if is_source && !KNOWN_SOURCES.contains(&name.as_str()) {
            unknown.push(name);
        }
    }
    assert!(
        unknown.is_empty(),
        "c_tests/ has sources no test builds: {unknown:?} (add them to tests/c_suite.rs)"
    );
    for s in KNOWN_SOURCES {
        assert!(
            p.root.join("c_tests").join(s).exists(),
            "c_tests/{s} is listed but missing"
        );
    }
}
