//! The first parallel computation of a process: the pool's workers start for it, and must join
//! it (a worker that waited for the job after the one it was started for left the first
//! computation of a short program to the calling thread alone). Its own test binary: the pool of
//! this process has not started before this test.
use broadcast::engine::iter::Iter;
use broadcast::engine::parallel;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[test]
fn workers_started_for_a_computation_join_it() {
    parallel::set_num_threads(2);
    parallel::set_threshold(1000);
    let n = 1usize << 18;
    let plan = Iter::new(&[n], [&[1isize][..], &[1isize][..]]).unwrap();
    let me = std::thread::current().id();
    let (calls, elsewhere) = (AtomicUsize::new(0), AtomicUsize::new(0));
    parallel::run(&plan, [std::ptr::null_mut(); 2], [1, 1], |_, _, _| {
        calls.fetch_add(1, Ordering::Relaxed);
        if std::thread::current().id() != me {
            elsewhere.fetch_add(1, Ordering::Relaxed);
        }
        // Slow chunks: a started worker has time to join.
        std::thread::sleep(Duration::from_millis(2));
    });
    assert!(calls.load(Ordering::Relaxed) > 1, "the run was not split");
    assert!(
        elsewhere.load(Ordering::Relaxed) > 0,
        "no pool thread computed any of {} chunks",
        calls.load(Ordering::Relaxed)
    );
}
