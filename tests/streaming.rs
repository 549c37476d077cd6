//! The streaming policy through the engine's operations: which calls stream their result (counted
//! per thread by `stream::streamed_count`), under each policy, against the cache size set here
//! (the measured one depends on the machine and its load).
use broadcast::engine::stream::{self, Streaming};
use broadcast::engine::{ops, parallel, BinaryOp, DType, Init, Options, Tensor};

const MIB: usize = 1 << 20;

fn full(shape: &[usize], v: f64) -> Tensor {
    Tensor::new(DType::F32, shape, Init::Fill(v)).unwrap()
}

/// Whether `f` streamed (the count moved by one) or not (it stayed).
fn streams(f: impl FnOnce()) -> bool {
    let before = stream::streamed_count();
    f();
    match stream::streamed_count() - before {
        0 => false,
        1 => true,
        n => panic!("{n} decisions for one call"),
    }
}

/// Eight in-place calls on `other`: the policy's memory of recent inputs holds only it then.
fn forget_out(other: &Tensor, b: &Tensor) {
    for _ in 0..8 {
        ops::binary_inplace(BinaryOp::Add, other, b, Options::default()).unwrap();
    }
}

/// One test, as the cache size and thread count are process-wide.
#[test]
fn which_results_stream() {
    parallel::set_num_threads(2);
    // (2048,1024) + (1024,): an 8 MiB result from 8 MiB of input.
    let a = full(&[2048, 1024], 1.5);
    let b = full(&[1024], 2.0);
    let out = full(&[2048, 1024], 0.0);
    let into_out = || {
        ops::binary_out(BinaryOp::Add, &a, &b, &out, Options::default()).unwrap();
    };
    let in_place = || {
        ops::binary_inplace(BinaryOp::Add, &out, &b, Options::default()).unwrap();
    };
    let other = full(&[2048, 1024], 3.0);
    let read_other = || {
        ops::binary_out(BinaryOp::Add, &other, &b, &out, Options::default()).unwrap();
    };

    // A cache that holds the call's 16 MiB: nothing streams.
    stream::set_effective_cache(64 * MIB);
    assert!(!streams(into_out));
    // One that does not: the call streams, and again into the same `out` (only written).
    stream::set_effective_cache(4 * MIB);
    read_other(); // `a` and `out` last read long ago, as far as the policy remembers
    forget_out(&other, &b);
    assert!(streams(into_out));
    assert!(streams(into_out));
    // In place: never streamed, and `out` was read: the next call into it keeps it cached.
    assert!(!streams(in_place));
    assert!(!streams(into_out));
    // A result below the threshold never streams under the automatic policy.
    parallel::set_stream_threshold(16 * MIB);
    forget_out(&other, &b);
    assert!(!streams(into_out));
    parallel::set_stream_threshold(0);

    // The thread's explicit policies.
    stream::set_streaming(Streaming::Never);
    assert!(!streams(read_other));
    stream::set_streaming(Streaming::Always);
    stream::set_effective_cache(usize::MAX);
    assert!(streams(read_other));
    assert!(!streams(in_place), "in place never streams");
    stream::set_streaming(Streaming::Auto);
    assert!(!streams(read_other));

    // Every policy writes the same values: 1.5 + 2.
    let mut bytes = vec![0u8; 2048 * 1024 * 4];
    for mode in [Streaming::Always, Streaming::Never, Streaming::Auto] {
        stream::set_streaming(mode);
        into_out();
        out.copy_to_bytes(&mut bytes).unwrap();
        assert!(bytes
            .chunks_exact(4)
            .all(|c| f32::from_ne_bytes(c.try_into().unwrap()) == 3.5));
    }
    stream::set_streaming(Streaming::Auto);
    stream::set_effective_cache(0);
    parallel::set_num_threads(0);
}
