//! Single-threaded measurements on one CPU. On the shared virtual machines this runs on, one
//! virtual CPU can run at half the other's speed for minutes (its host core is busy elsewhere:
//! the same C loop took 145 ns pinned to CPU 1 and 78 ns pinned to CPU 0, alternating). Left to
//! the scheduler, the library (in this process) and a peer (in its own) may each land on a
//! different CPU, and their ratio measures the CPUs, not the code. So a measurement whose every
//! side runs on one thread pins this thread and the peers' main threads (which compute such
//! cases themselves) to the CPU this thread is on, and restores their CPU sets afterwards.
//! Nothing is spawned meanwhile, so no thread inherits the narrowed set.

/// The CPU sets to restore: (thread id, set); 0 is the calling thread.
pub struct OneCpu {
    saved: Vec<(libc::pid_t, libc::cpu_set_t)>,
}

impl OneCpu {
    /// Pins the calling thread and the threads `tids` (peers' main threads: a process id names
    /// its main thread) to the CPU the calling thread runs on. A thread whose set cannot be read
    /// or changed keeps its own (the measurement is then as unpinned).
    pub fn here(tids: &[u32]) -> OneCpu {
        let mut saved = Vec::new();
        // SAFETY: sched_getcpu takes no arguments.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu < 0 {
            return OneCpu { saved };
        }
        // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it.
        let one = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            set
        };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        for tid in std::iter::once(0).chain(tids.iter().map(|&t| t as libc::pid_t)) {
            // SAFETY: both sets are valid for `size` bytes.
            unsafe {
                let mut own: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(tid, size, &mut own) == 0
                    && libc::sched_setaffinity(tid, size, &one) == 0
                {
                    saved.push((tid, own));
                }
            }
        }
        OneCpu { saved }
    }
}

impl Drop for OneCpu {
    fn drop(&mut self) {
        for (tid, set) in &self.saved {
            // SAFETY: the set is valid for its size. A peer that exited meanwhile fails harmlessly.
            unsafe { libc::sched_setaffinity(*tid, std::mem::size_of::<libc::cpu_set_t>(), set) };
        }
    }
}
