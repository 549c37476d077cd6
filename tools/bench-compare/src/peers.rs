//! The peers, as child processes answering one timing command at a time: the C limit (built here
//! from `limit.c` with `cc -O3 -march=native -fopenmp`), NumPy and PyTorch (`peer_py.py`), so that
//! their measurements interleave with the library's in one run.
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

const LIMIT_C: &str = include_str!("limit.c");
const PEER_PY: &str = include_str!("peer_py.py");

pub struct Peer {
    pub name: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// One answer: median ms per call and the variant that gave it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub ms: f64,
    pub variant: String,
}

impl Peer {
    fn start(name: &'static str, mut cmd: Command) -> Result<Peer, String> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Peer {
            name,
            child,
            stdin,
            stdout,
        })
    }

    /// The peer's process id, which also names its main thread.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `cmd` and waits for its answer.
    pub fn ask(&mut self, cmd: &str) -> Result<Answer, String> {
        writeln!(self.stdin, "{cmd}").map_err(|e| format!("{}: {e}", self.name))?;
        self.stdin
            .flush()
            .map_err(|e| format!("{}: {e}", self.name))?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("{}: {e}", self.name))?;
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next(), parts.next()) {
            (Some("ok"), Some(ms), Some(v)) => Ok(Answer {
                ms: ms
                    .parse()
                    .map_err(|_| format!("{}: bad answer {line:?}", self.name))?,
                variant: v.to_string(),
            }),
            _ => Err(format!(
                "{}: answer {:?} to {cmd:?}",
                self.name,
                line.trim()
            )),
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

/// Where generated files go: next to this executable (target/release/).
fn work_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
}

/// Builds and starts the C limit with `threads` OpenMP threads.
pub fn start_limit(threads: usize) -> Result<Peer, String> {
    let dir = work_dir();
    let src = dir.join("bench-compare-limit.c");
    let exe = dir.join("bench-compare-limit");
    std::fs::write(&src, LIMIT_C).map_err(|e| format!("writing {}: {e}", src.display()))?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args([
            "-O3",
            "-march=native",
            "-fopenmp",
            "-Wno-aggressive-loop-optimizations",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-lm")
        .output()
        .map_err(|e| format!("cannot run {cc}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cc} failed on limit.c:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut cmd = Command::new(exe);
    cmd.env("OMP_NUM_THREADS", threads.to_string())
        .env("OMP_PROC_BIND", "false");
    Peer::start("limit", cmd)
}

/// Starts the NumPy peer when `$PYTHON -c 'import numpy'` works; returns its version too.
pub fn start_numpy() -> Result<(Peer, String), String> {
    start_python("numpy", &[])
}

/// Starts the PyTorch peer (`threads` threads) when `$PYTHON -c 'import torch'` works; returns its
/// version too.
pub fn start_torch(threads: usize) -> Result<(Peer, String), String> {
    start_python("torch", &["torch", &threads.to_string()])
}

/// `peer_py.py` with `args`, if `$PYTHON` (default `python3`) imports `module`.
fn start_python(module: &'static str, args: &[&str]) -> Result<(Peer, String), String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    let probe = Command::new(&python)
        .args([
            "-c",
            &format!("import {module}; print({module}.__version__)"),
        ])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !probe.status.success() {
        return Err(format!(
            "{module} is not importable by {python} (set PYTHON)"
        ));
    }
    let version = String::from_utf8_lossy(&probe.stdout).trim().to_string();
    let script = work_dir().join("bench-compare-peer.py");
    std::fs::write(&script, PEER_PY).map_err(|e| format!("{e}"))?;
    let mut cmd = Command::new(python);
    cmd.arg("-u").arg(script).args(args);
    // NumPy's elementwise operations are single-threaded; keep any BLAS threads out of the way
    // (PyTorch sets its own thread count).
    cmd.env("OPENBLAS_NUM_THREADS", "1")
        .env("OMP_NUM_THREADS", "1");
    Ok((Peer::start(module, cmd)?, version))
}
