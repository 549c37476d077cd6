# Tests of LibBroadcast. Run with the library on the path, from the repository root:
#   LIBBROADCAST_PATH=$PWD/target/release/libbroadcast.so julia --threads=4 --project=bindings/julia bindings/julia/test/runtests.jl
# BC_JULIA_SEED sets the seed of the random cases (printed).

using LibBroadcast
using Random
using Statistics
using Test

const LB = LibBroadcast

const SEED = parse(UInt64, get(ENV, "BC_JULIA_SEED", string(rand(UInt32))))
println("LibBroadcast tests: library $(LB.LIBPATH[]), seed $SEED (BC_JULIA_SEED), $(Threads.nthreads()) threads")
Random.seed!(SEED)

"The error `f()` throws, or `nothing`."
caught(f) =
    try
        f()
        nothing
    catch e
        e
    end

const MSG_ROW2 = "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 1"
const MSG_ROW4 = "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"
const MSG_ROW9 = "The expanded size of the tensor (1) must match the existing size (7) at non-singleton dimension 2."
const WARN_BROADCAST = "self and other do not have the same shape, but are broadcastable, and have the same number of elements.  Changing behavior in a backwards incompatible manner to broadcasting rather than viewing as 1-dimensional."
const WARN_FALLBACK = "self and other not broadcastable, but have the same number of elements.  Falling back to deprecated pointwise behavior."

# The documented examples of the broadcasting rules (row-major sizes in the comments), in
# Julia's order: every size reversed. Each result is compared with Julia's own broadcast.
@testset "documented examples, in Julia's order" begin
    # 1: (5,7,3) with (5,7,3)
    A, B = rand(Float32, 3, 7, 5), rand(Float32, 3, 7, 5)
    @test LB.add(A, B) == A .+ B

    # 2: (0,) with (2,2) does not broadcast (Julia refuses it too)
    e = caught(() -> LB.add(zeros(Float32, 0), zeros(Float32, 2, 2)))
    @test e isa BroadcastError && e.msg == MSG_ROW2 && e.status == LB.BC_ERR_SHAPE
    @test e.dim == 1 && e.size_a == 0 && e.size_b == 2 && e.shape_a == (0,) && e.shape_b == (2, 2)
    @test_throws DimensionMismatch zeros(0) .+ zeros(2, 2)

    # 3: (5,3,4,1) with (3,1,1)
    A, B = fill(1.5f0, 1, 4, 3, 5), fill(0.25f0, 1, 1, 3)
    @test LB.mul(A, B) == A .* B && size(LB.mul(A, B)) == (1, 4, 3, 5)
    @test LB.add(B, A) == B .+ A

    # 4 and 7: (5,2,4,1) with (3,1,1), for every operation
    A, B = ones(Float32, 1, 4, 2, 5), ones(Float32, 1, 1, 3)
    for op in (LB.add, LB.sub, LB.mul, LB.divide)
        e = caught(() -> op(A, B))
        @test e isa BroadcastError && e.msg == MSG_ROW4 && e.dim == 3 && e.size_a == 2 && e.size_b == 3
    end
    @test_throws DimensionMismatch A .+ B

    # 5: (5,1,4,1) + (3,1,1) -> (5,3,4,1)
    A, B = rand(Float32, 1, 4, 1, 5), Float32[100, 200, 300]
    B3 = reshape(B, 1, 1, 3)
    @test LB.add(A, B3) == A .+ B3 && size(A .+ B3) == (1, 4, 3, 5)

    # 6: (1,) + (3,1,7) -> (3,1,7)
    A, B = Float32[0.5], rand(Float32, 7, 1, 3)
    @test LB.add(A, B) == A .+ B

    # 8: in place, (5,3,4,1) += (3,1,1) is allowed, into the array's own memory
    A = reshape(Float32.(0:59), 1, 4, 3, 5)
    B = reshape(Float32[1000, 2000, 3000], 1, 1, 3)
    want = A .+ B
    @test LB.add!(A, B) === A && A == want
    LB.sub!(A, B)
    @test A == reshape(Float32.(0:59), 1, 4, 3, 5)

    # 9: in place, (1,3,1) += (3,1,7) is refused and A is unchanged
    A, B = reshape(Float32[1.25, -2.5, 3.75], 1, 3, 1), rand(Float32, 7, 1, 3)
    for op! in (LB.add!, LB.sub!, LB.mul!, LB.divide!)
        e = caught(() -> op!(A, B))
        @test e isa BroadcastError && e.msg == MSG_ROW9
        @test e.dim == 1 && e.size_a == 1 && e.size_b == 7 && e.shape_a == (1, 3, 1) && e.shape_b == (7, 1, 3)
    end
    @test A == reshape(Float32[1.25, -2.5, 3.75], 1, 3, 1)
    @test size(LB.add(A, B)) == (7, 3, 3)

    # 10: ones(4,1) + randn(4) -> (4,4)
    A, B = ones(Float32, 1, 4), randn(Float32, 4)
    @test LB.add(A, B) == A .+ B && size(A .+ B) == (4, 4)

    # 11 and 12: the two switches, and their warnings
    warnings = String[]
    LB.set_warning_handler(m -> push!(warnings, m))
    try
        @test !LB.broadcast_warning() && !LB.legacy_fallback()
        LB.set_broadcast_warning(true)
        @test LB.add(ones(Float32, 1, 4), ones(Float32, 4)) == fill(2.0f0, 4, 4)
        @test warnings == [WARN_BROADCAST]
        LB.set_broadcast_warning(false)
        LB.add(ones(Float32, 1, 4), ones(Float32, 4))
        @test length(warnings) == 1

        A, B = Float32[1, 2, 3, 4], Float32[10 30; 20 40]
        @test caught(() -> LB.add(A, B)) isa BroadcastError
        LB.set_legacy_fallback(true)
        @test LB.add(A, B) == Float32[11, 22, 33, 44] # element by element, A's size
        @test LB.add(B, A) == Float32[11 33; 22 44]
        @test warnings == [WARN_BROADCAST, WARN_FALLBACK, WARN_FALLBACK]
    finally
        LB.set_broadcast_warning(false)
        LB.set_legacy_fallback(false)
        LB.set_warning_handler(nothing)
    end
end

# Julia sizes that broadcast together (most of the time): b takes a's leading sizes, each kept
# or set to 1, and may be longer or shorter.
function random_sizes()
    a = Tuple(rand(1:4, rand(0:5)))
    b = Int[]
    for k in 1:rand(0:5)
        push!(b, k <= length(a) ? (rand() < 0.6 ? a[k] : 1) : rand(1:3))
    end
    rand(Bool) ? (a, Tuple(b)) : (Tuple(b), a)
end

# A strided view with the given size: every other element of a larger array along dimension 1.
function strided(T, sz)
    isempty(sz) && return fill(rand(T))
    P = random_values(T, (2 * sz[1], sz[2:end]...))
    return view(P, 1:2:2*sz[1], (Colon() for _ in 2:length(sz))...)
end

random_values(::Type{T}, sz) where {T<:AbstractFloat} = T.(rand(-40:40, sz) ./ 8)
random_values(::Type{T}, sz) where {T<:Integer} = rand(T(-100):T(100), sz)

@testset "random arrays of up to 5 dimensions against Julia's broadcasting" begin
    for _ in 1:400
        sa, sb = random_sizes()
        T = rand((Float64, Float32, Int32, Int64))
        A = rand(Bool) ? strided(T, sa) : random_values(T, sa)
        B = rand(Bool) ? strided(T, sb) : random_values(T, sb)
        ops = [(LB.add, +), (LB.sub, -), (LB.mul, *), (LB.eq, ==), (LB.ne, !=), (LB.lt, <),
               (LB.le, <=), (LB.gt, >), (LB.ge, >=), (LB.maximum, max), (LB.minimum, min)]
        T <: AbstractFloat && push!(ops, (LB.divide, /))
        T <: Integer && append!(ops, [(LB.bitwise_and, &), (LB.bitwise_or, |), (LB.bitwise_xor, xor)])
        for (op, f) in ops
            want = f.(A, B)
            want isa AbstractArray || (want = fill(want)) # Julia gives a number for 0-d operands
            got = op(A, B)
            @test size(got) == size(want) && eltype(got) == eltype(want) && isequal(got, want)
            # The same through Tensors and Julia's dot syntax.
            @test isequal(Array(broadcast(f, Tensor(A), Tensor(B))), want)
        end
        C = rand(Bool, size(A))
        want = ifelse.(C, A, B)
        want isa AbstractArray || (want = fill(want))
        @test isequal(LB.select(C, A, B), want)
        @test isequal(Array(ifelse.(Tensor(C), Tensor(A), Tensor(B))), want)
    end
end

@testset "zero copy, views and lifetimes" begin
    # In place writes into the Julia array, also through a strided view of it.
    P = zeros(6, 4)
    V = view(P, 1:2:5, :)
    LB.add!(V, [1.0, 2.0, 3.0])
    @test P[1:2:5, :] == repeat([1.0, 2.0, 3.0], 1, 4) && all(iszero, P[2:2:6, :])
    # Out into a Julia array.
    out = zeros(Float32, 3, 4)
    @test LB.mul!(out, fill(2.0f0, 3, 1), Float32[1 2 3 4]) === out && out == repeat(Float32[2 4 6 8], 3)
    # Arrays that cannot be viewed are copied; in place on them is refused.
    R = reverse(collect(1.0:3.0)) # a Vector: fine
    @test LB.add(view(R, 3:-1:1), [1.0]) == [2.0, 3.0, 4.0]
    @test_throws ArgumentError LB.add!(view(R, 3:-1:1), [1.0])
    @test LB.add(trues(3), falses(3)) == [true, true, true] # Bool + Bool stays Bool (PyTorch's rule)

    # Views of Tensors, against the same views of arrays.
    A = reshape(collect(1.0:24.0), 2, 3, 4)
    t = Tensor(A)
    @test size(t) == (2, 3, 4) && ndims(t) == 3 && eltype(t) == Float64 && strides(t) == strides(A)
    @test Array(permutedims(t, (3, 1, 2))) == permutedims(A, (3, 1, 2))
    @test Array(LB.slice(t, 2, 1:2:3)) == A[:, 1:2:3, :]
    @test Array(LB.expand(Tensor(reshape([1.0, 2.0], 2, 1)), 2, 5)) == repeat([1.0, 2.0], 1, 5)
    e = caught(() -> LB.expand(Tensor(ones(3)), 5, 2))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE
    c = copy(t)
    LB.add!(t, Tensor([100.0]))
    @test A[1] == 101.0 && Array(c)[1] == 1.0 # t views A; the copy does not
    close(t)

    # A view keeps the array it views alive after the array's binding and parent are gone.
    function view_of_dropped_array()
        A = collect(reshape(1.0:12.0, 3, 4))
        t = Tensor(A)
        v = LB.slice(t, 2, 2:3)
        close(t)
        return v
    end
    v = view_of_dropped_array()
    GC.gc(true); GC.gc(true)
    @test Array(v) == [4.0 7.0; 5.0 8.0; 6.0 9.0]
    close(v)

    # Finalizers free every handle; close is idempotent; use after close throws.
    GC.gc(true)
    base = LB.live_count()
    (function ()
        for _ in 1:200
            Tensor(rand(3)) .+ Tensor(rand(1, 2))
        end
    end)()
    for _ in 1:100
        GC.gc(true)
        LB.live_count() == base && break
        sleep(0.01)
    end
    @test LB.live_count() == base
    t = Tensor(ones(2))
    close(t)
    close(t)
    @test !isopen(t) && LB.live_count() == base
    @test_throws ArgumentError LB.add(t, t)
    @test sprint(show, t) == "Tensor(closed)"
end

@testset "each task gets its own errors ($(Threads.nthreads()) threads)" begin
    mixed = Threads.Atomic{Int}(0)
    @sync for g in 1:16
        Threads.@spawn begin
            a, b = Tensor(ones(Float32, g + 1)), Tensor(ones(Float32, g + 2))
            want = "The size of tensor a ($(g + 1)) must match the size of tensor b ($(g + 2)) at non-singleton dimension 0"
            for _ in 1:2000
                e = caught(() -> a .+ b)
                ok = e isa BroadcastError && e.msg == want && e.size_a == g + 1 && e.shape_b == (g + 2,)
                ok || Threads.atomic_add!(mixed, 1)
                yield()
            end
            close(a)
            close(b)
        end
    end
    @test mixed[] == 0
end

@testset "further operations: PyTorch's values where Julia's differ" begin
    # An integer zero divisor: status BC_ERR_VALUE (11), PyTorch's text.
    e = caught(() -> LB.remainder(Int32[7, 1], Int32[0, 1]))
    @test e isa BroadcastError && e.status == 11 && e.msg == "ZeroDivisionError"
    # Shifts by a negative amount or the bit width give 0 (or -1 to the right).
    @test LB.bitwise_left_shift(Int32[6, 6, -6], Int32[-1, 32, 1]) == Int32[0, 0, -12]
    @test LB.bitwise_right_shift(Int32[-6, 6], Int32[40, -1]) == Int32[-1, 0]
    # Comparisons give Bool, in place 0 or 1 in the target's type.
    A = [1.0, 5.0]
    @test LB.lt!(A, [2.0, 2.0]) === A && A == [1.0, 0.0]
end

@testset "README quick start" begin
    readme = read(joinpath(@__DIR__, "..", "..", "..", "README.md"), String)
    section = split(readme, "\n### Julia\n")[2]
    code = split(split(section, "```julia\n")[2], "```")[1]
    printed = mktemp() do path, io
        redirect_stdout(io) do
            include_string(Module(), code)
        end
        close(io)
        read(path, String)
    end
    @test printed == split(split(section, "```text\n")[2], "```")[1]
end

# Reductions over Julia's dimensions (reversed for the library), compared with Julia's own.
@testset "reductions and sum_to_size, in Julia's order" begin
    A = Float32[1 2 3; 4 5 6] # size (2, 3)
    t = Tensor(A)
    @test Array(sum(t; dims = 1)) == sum(A; dims = 1)
    @test Array(sum(t; dims = 2)) == sum(A; dims = 2)
    # Without dims, the value, as sum(A) gives a number.
    @test sum(t) === sum(A) === 21.0f0
    @test Array(prod(t; dims = 2)) == prod(A; dims = 2)
    @test Array(maximum(t; dims = 1)) == maximum(A; dims = 1)
    @test maximum(t) === 6.0f0 && minimum(t) === 1.0f0 && prod(t) === 720.0f0
    @test Array(minimum(t; dims = 2)) == minimum(A; dims = 2)
    # Statistics' functions, Statistics.mean itself (LB.mean is the same function).
    @test LB.mean === Statistics.mean && LB.var === Statistics.var && LB.std === Statistics.std
    @test mean(t) === 3.5f0
    @test Array(mean(t; dims = (1, 2))) == fill(3.5f0, 1, 1)
    @test Array(mean(t; dims = 2)) == mean(A; dims = 2)
    @test Array(var(t; dims = 1)) ≈ var(A; dims = 1)
    @test Array(std(t; dims = 2, corrected = false)) ≈ std(A; dims = 2, corrected = false)
    @test var(t) ≈ var(A)
    s = sum(Tensor(Int32[1, 2, 3]))
    @test s === Int64(6) # PyTorch's sum of integers is Int64
    e = caught(() -> mean(Tensor(Int32[1, 2, 3])))
    @test e isa BroadcastError && e.status == LB.BC_ERR_DTYPE
    @test_throws ArgumentError sum(t; dims = 3)
    @test_throws ArgumentError sum(t; dims = 0)
    # dims over a 3-dimensional array: Julia dimension d is the library's n - d.
    C = reshape(Float64.(1:24), 2, 3, 4)
    c = Tensor(C)
    for d in (1, 2, 3, (1, 3), (2, 3), (1, 2, 3))
        @test Array(sum(c; dims = d)) == sum(C; dims = d)
        @test Array(maximum(c; dims = d)) == maximum(C; dims = d)
        @test Array(minimum(c; dims = d)) == minimum(C; dims = d)
        @test Array(prod(c; dims = d)) ≈ prod(C; dims = d)
        @test Array(mean(c; dims = d)) ≈ mean(C; dims = d)
    end
    # all and any: Bool, nonzero is true.
    M = Bool[1 0 1; 1 1 1]
    m = Tensor(M)
    @test all(m) === false && any(m) === true
    @test Array(all(m; dims = 1)) == all(M; dims = 1) && Array(any(m; dims = 2)) == any(M; dims = 2)
    @test all(Tensor([1.0, 2.0])) === true && any(Tensor([0.0, 0.0])) === false
    close(m)
    close(c)

    @test Array(LB.sum_to_size(t, 1, 3)) == sum(A; dims = 1)
    @test Array(LB.sum_to_size(t, 2)) == vec(sum(A; dims = 2))
    B = Float32[10, 20] # broadcasts along Julia's first dimension
    @test Array(LB.sum_to_size(*, t, Tensor(B), 2)) == vec(sum(A .* B; dims = 2))
    @test Array(LB.sum_to_size(LB.mul, t, Tensor(B), 2)) == vec(sum(A .* B; dims = 2))
    e = caught(() -> LB.sum_to_size(t, 4))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE
end

# Numbers as operands: promoted as PyTorch promotes a Python number (by category only), compared
# with Julia's own values where the types agree.
@testset "numbers as operands" begin
    A = Int32[1 2 3; 4 5 6]
    t = Tensor(A)
    r = t .+ 2.5 # int32 + a float: Float32 (Julia would give Float64)
    @test eltype(r) == Float32 && Array(r) == Float32.(A) .+ 2.5f0
    @test eltype(2 .* t) == Int32 && Array(2 .* t) == 2 .* A
    @test Array(t .- 1) == A .- 1
    @test Array(10 .- t) == 10 .- A # torch.sub(10, t)
    @test Array(2 .< t) == (2 .< A) # t > 2
    @test Array(t .^ 2) == A .^ 2   # a literal exponent (literal_pow)
    p = 3
    @test Array(t .^ p) == A .^ p
    @test Array(LB.divide(t, 2)) == A ./ 2f0
    u = Tensor(UInt8[250, 1])
    @test eltype(u .+ 300) == UInt8 && Array(u .+ 300) == UInt8[38, 45] # 300 wraps to 44
    @test LB.add(A, true) == A .+ 1
    @test LB.sub(1.5, Float64[1, 2]) == [0.5, -0.5]
    B = Float64[1, 2]
    @test LB.mul!(B, 3) === B && B == [3.0, 6.0]
    e = caught(() -> LB.add!(copy(A), 2.5))
    @test e isa BroadcastError && e.status == LB.BC_ERR_DTYPE &&
          e.msg == "result type Float can't be cast to the desired output type Int"
    e = caught(() -> max.(t, 2)) # PyTorch's maximum takes no number
    @test e isa BroadcastError && e.msg == "maximum(): argument 'other' (position 2) must be Tensor, not int"
    close(t)
    close(u)
end

# The planner: what a call would do, in Julia's order, against the call itself.
@testset "the planner" begin
    A = rand(Float32, 3, 4)
    B = rand(Float32, 3)
    p = LB.plan(+, A, B)
    r = LB.add(Tensor(A), Tensor(B))
    @test p.size == size(A .+ B) == size(r) && p.strides == strides(r)
    @test p.eltype == Float32 && p.compute_eltype == Float32 && p.alloc_bytes == sizeof(A)
    @test p.loop_kind in (:contiguous, :broadcast) && p.threads >= 1 && !p.broadcast_warning
    @test LB.plan(LB.add, LB.Geometry(Float32, (3, 4)), LB.Geometry(B)) == p
    e = caught(() -> LB.plan(+, LB.Geometry(Float32, (2, 3)), LB.Geometry(Float32, (3,))))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE &&
          e.msg == caught(() -> LB.add(zeros(Float32, 2, 3), zeros(Float32, 3))).msg
    # In place and into out: the target's own strides.
    p = LB.plan!(*, A, B)
    @test p.size == size(A) && p.strides == strides(A) && p.alloc_bytes == 0
    @test LB.plan!(*, zeros(Float32, 3, 4), A, B).alloc_bytes == 0
    # Numbers: the number itself is held in 8 bytes, converted to Float32 in 4 more.
    p = LB.plan!(*, A, 2)
    @test p.strides == strides(A) && p.alloc_bytes == 12
    p = LB.plan(+, LB.Geometry(Int32, (2, 3)), 2.5)
    @test p.eltype == Float32 && p.size == (2, 3)
    @test LB.plan(-, 10, LB.Geometry(Int32, (2, 3))).eltype == Int32
    e = caught(() -> LB.plan!(+, LB.Geometry(Int32, (2, 3)), 2.5))
    @test e isa BroadcastError && e.status == LB.BC_ERR_DTYPE
    p = LB.plan(/, LB.Geometry(Int32, (4,)), 0)
    @test p.eltype == Float32 && !p.checks_divisor # true division: no zero check
    @test LB.plan(fld, LB.Geometry(Int32, (4,)), 0).checks_divisor
    # select (torch.where).
    C = A .> 0.5f0
    p = LB.plan_select(C, A, B)
    @test p.size == size(LB.select(C, A, B)) && p.eltype == Float32 && p.alloc_bytes == sizeof(A)
    @test LB.plan_select!(A, C, A, B).alloc_bytes == 0
    e = caught(() -> LB.plan_select(LB.Geometry(Int32, (3,)), A, B))
    @test e isa BroadcastError && e.status == LB.BC_ERR_DTYPE
    @test_throws ArgumentError LB.plan(+, LB.Geometry(Float32, (2,); strides = (1, 1)), B)
    # Reductions: sum(A; dims = 2) is 3 outputs of 4 elements each.
    p = LB.plan_reduce(sum, A; dims = 2)
    r = sum(Tensor(A); dims = 2)
    @test p.size == size(r) == (3, 1) && p.strides == strides(r) && p.eltype == Float32
    @test p.compute_eltype == Float32 && p.loop_size == (4, 3) && p.alloc_bytes == 12
    @test LB.plan_reduce(sum, LB.Geometry(Int8, (2, 3))).eltype == Int64
    # Base's maximum (the reduction), not the package's elementwise LibBroadcast.maximum.
    @test LB.plan_reduce(maximum, A; dims = 1).size == (1, 4)
    @test_throws ArgumentError LB.plan_reduce(LB.maximum, A; dims = 1)
    e = caught(() -> LB.plan_reduce(mean, LB.Geometry(Int32, (2,))))
    @test e isa BroadcastError && e.status == LB.BC_ERR_DTYPE
    p = LB.plan_sum_to_size(A, 3)
    @test p.size == (3,) && p.alloc_bytes == 12 && p.loop_size == (4, 3)
    p = LB.plan_sum_to_size(A, 3, 4) # nothing summed: a view of A
    @test p.loop_kind == :none && p.alloc_bytes == 0 && p.strides == strides(A)
    p = LB.plan_sum_to_size(*, A, B, 3)
    @test p.size == size(LB.sum_to_size(*, Tensor(A), Tensor(B), 3)) && p.eltype == Float32
    e = caught(() -> LB.plan_sum_to_size(*, A, B, 2))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE
end

# Julia's conventions: dot syntax through the library (TensorStyle), .= and .op= (copyto!),
# show, size past ndims, reads, equality, and the library's file names.
@testset "dot syntax computed by the library" begin
    A = Float32[1 2 3; 4 5 6] # size (2, 3)
    B = Float32[10, 20]       # broadcasts along Julia's second dimension
    t = Tensor(A)
    # A Tensor with an array, a number, nested calls: a Tensor, with Julia's values here.
    r = t .+ B
    @test r isa Tensor && Array(r) == A .+ B
    @test (B .+ t) isa Tensor && Array(B .+ t) == B .+ A
    @test Array(t .* 2 .- B) == A .* 2 .- B
    @test Array(abs.(t .- B) .< 10) == (abs.(A .- B) .< 10)
    @test Array(sqrt.(t)) ≈ sqrt.(A)
    @test Array(exp.(t ./ 10)) ≈ exp.(A ./ 10)
    @test Array(.-t) == .-A && Array(round.(t ./ 4)) == round.(A ./ 4)
    @test Array(max.(t, Tensor(B))) == max.(A, B)
    @test Array(atan.(t, B)) ≈ atan.(A, B) # atan with two operands is atan2
    @test Array(t .^ 2) == A .^ 2 && Array(t .^ 2 .+ 1) == A .^ 2 .+ 1
    @test Array(LB.add.(t, B)) == A .+ B # the package's own functions dot too
    @test Array(.!(t .> 2)) == .!(A .> 2)
    # Inner calls on arrays alone are the library's too: PyTorch's promotion, not Julia's.
    I = Int32[1 2 3; 4 5 6]
    @test eltype(t .+ (I .* 2)) == Float32 && eltype(Tensor(I) .+ (I .+ 2.5)) == Float32
    # ifelse with numbers among the operands, and the condition an array.
    @test Array(ifelse.(t .> 2.5f0, 0f0, t)) == ifelse.(A .> 2.5f0, 0f0, A)
    @test Array(ifelse.(A .> 2.5f0, t, -1f0)) == ifelse.(A .> 2.5f0, A, -1f0)
    # clamp with number bounds and with tensor bounds.
    @test Array(clamp.(t, 2, 5)) == clamp.(A, 2, 5)
    @test Array(clamp.(t, B ./ 10, 4f0)) == clamp.(A, B ./ 10, 4f0)
    # identity.(t) is a copy in new memory.
    c = identity.(t)
    @test Array(c) == A
    LB.add!(c, 1)
    @test A == Float32[1 2 3; 4 5 6]
    # Numbers alone broadcast to a number, with a Tensor elsewhere in the expression.
    @test Array(t .+ sqrt.(4.0)) == A .+ 2
    # What the library cannot do is an error, never a silent element-by-element loop.
    @test_throws ArgumentError (x -> x + 1).(t)
    @test_throws ArgumentError t .+ (1, 2)
    @test_throws ArgumentError t .+ ["a", "b"]
    @test_throws ArgumentError t .+ Ref([1, 2])
    @test_throws ArgumentError (+).(t, t, t)
    @test_throws ArgumentError t .+ (1 + 2im) # complex numbers: no dtype in the library
    e = caught(() -> t .+ Float32[1, 2, 3]) # sizes (2, 3) and (3,): Julia's rule refuses too
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE
    @test_throws DimensionMismatch A .+ Float32[1, 2, 3]
    close(t)
end

@testset ".= and .op= write through copyto!" begin
    A = zeros(Float32, 2, 3)
    t = Tensor(A)
    t .= 1.5f0 # a number, broadcast to t's size
    @test A == fill(1.5f0, 2, 3)
    t .= Float32[1, 2] # a column, broadcast along the second dimension
    @test A == Float32[1 1 1; 2 2 2]
    t .+= Float32[10 20 30] # in place: the library's in-place form
    @test A == Float32[11 21 31; 12 22 32]
    t .*= 2
    @test A == Float32[22 42 62; 24 44 64]
    u = Tensor(ones(Float32, 2, 3))
    t .= u .- Float32[1, 2] # the out form
    @test A == Float32[0 0 0; -1 -1 -1]
    t .= abs.(u .* -3)
    @test A == fill(3.0f0, 2, 3)
    t .= sqrt.(t) # in place
    @test A ≈ fill(sqrt(3.0f0), 2, 3)
    t .= ifelse.(u .> 0, 7f0, u)
    @test A == fill(7.0f0, 2, 3)
    t .= clamp.(u, 2, 3) # made, then copied in
    @test A == fill(2.0f0, 2, 3)
    t .= Float64[0.25, 0.5] # cast into t's Float32, as PyTorch's out= casts
    @test A == Float32[0.25 0.25 0.25; 0.5 0.5 0.5]
    # The in-place rule: the broadcast size must be t's own.
    e = caught(() -> t .+= ones(Float32, 2, 3, 2))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE
    @test A == Float32[0.25 0.25 0.25; 0.5 0.5 0.5]
    # An array written from an expression with a Tensor.
    D = zeros(Float32, 2, 3)
    D .= u .+ Float32[1, 2]
    @test D == Float32[2 2 2; 3 3 3]
    D .+= u
    @test D == Float32[3 3 3; 4 4 4]
    # A destination the library cannot view is refused.
    @test_throws ArgumentError (1:3) .= Tensor([1, 2, 3])
    close(t)
    close(u)
end

@testset "show, size, getindex, ==" begin
    A = Float32[1 2 3; 4 5 6]
    t = Tensor(A)
    # PyTorch's text: row-major, so Julia's 2×3 prints as 3 rows of 2.
    @test sprint(show, t) == "tensor([[1., 4.],\n        [2., 5.],\n        [3., 6.]])"
    @test sprint(show, Tensor(Int32[1, 2, 3])) == "tensor([1, 2, 3], dtype=torch.int32)"
    @test sprint(show, Tensor([1, 2, 3])) == "tensor([1, 2, 3])"
    @test sprint(show, MIME("text/plain"), t) ==
          "2×3 Tensor{Float32}:\ntensor([[1., 4.],\n        [2., 5.],\n        [3., 6.]])"
    @test startswith(sprint(show, MIME("text/plain"), Tensor([1.0])), "1-element Tensor{Float64}:\n")

    # size past the last dimension is 1, as for arrays.
    @test size(t, 1) == 2 && size(t, 2) == 3 && size(t, 3) == 1 && size(t, 7) == 1
    @test_throws BoundsError size(t, 0)
    @test length(t) == 6 && length(Tensor(zeros(0, 3))) == 0

    # Reads, in Julia's order and column-major linear order, also of views.
    @test t[2, 3] === 6.0f0 && t[1, 2] === 2.0f0 && t[2, 3, 1] === 6.0f0
    @test [t[k] for k in 1:6] == vec(A)
    @test_throws BoundsError t[3, 1]
    @test_throws BoundsError t[7]
    @test_throws BoundsError t[1, 1, 2]
    P = reshape(collect(1:24), 4, 6)
    v = Tensor(view(P, 2:2:4, 1:3:6)) # strided view: offset and strides in the address
    @test v[2, 2] == P[4, 4] && v[1, 1] == P[2, 1]
    @test LB.slice(Tensor(P), 2, 3:4)[1, 2] == P[1, 4]
    @test LB.expand(Tensor(reshape([5.0, 6.0], 2, 1)), 2, 4)[2, 4] == 6.0 # a stride-0 dimension
    @test sum(Tensor(Int32[1, 2, 3]))[] == 6 # a number: getindex of it is itself
    @test Tensor(fill(2.5))[] == 2.5

    # reshape in Julia's column-major order: a view of the memory where the strides allow one.
    R = reshape(collect(1.0:24.0), 4, 6)
    r = Tensor(R)
    @test Array(reshape(r, 3, 8)) == reshape(R, 3, 8) && Array(reshape(r, (2, :, 3))) == reshape(R, 2, 4, 3)
    @test Array(vec(r)) == vec(R) && size(vec(r)) == (24,)
    rv = reshape(r, 8, 3)
    LB.add!(rv, 100.0)
    @test R[1] == 101.0 # a view of R's memory, as Julia's reshape is
    sl = LB.slice(r, 1, 1:2:3) # rows 1 and 3: no view can flatten it
    @test Array(vec(sl)) == vec(R[1:2:3, :])
    e = caught(() -> reshape(r, 5, 5))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE

    # Equality by value, with Tensors and with arrays; hash agrees.
    @test t == Tensor(copy(A)) && t == A && A == t
    @test t != Tensor(Float32[1 2 3; 4 5 7]) && t != Float32[1 2 3] && t != permutedims(A)
    @test Tensor([NaN]) != Tensor([NaN]) && isequal(Tensor([NaN]), Tensor([NaN]))
    @test hash(t) == hash(A) && isequal(t, A)
    close(t)
end

@testset "library names" begin
    names = LB.library_names()
    if Sys.iswindows()
        @test names[1] == "broadcast.dll"
    elseif Sys.isapple()
        @test names[1] == "libbroadcast.0.dylib"
    else
        @test names[1] == "libbroadcast.so.0"
    end
    @test last(names) == "libbroadcast"
end

# The later wrappers (not run on this project's machines: Julia cannot be installed there; the
# column-major proxy test checks the same C calls from Python).
@testset "lerp, addcmul, addcdiv, clamp!, nan reductions, argmax, views, cast" begin
    A, B = Float64[1 2; 3 4], Float64[10 20]
    a, b = Tensor(A), Tensor(B)
    @test Array(LB.lerp(a, b, 0.5)) ≈ A .+ 0.5 .* (B .- A)
    @test Array(LB.lerp.(a, B, 0.25)) ≈ A .+ 0.25 .* (B .- A)
    @test Array(LB.lerp(a, b, Tensor(fill(0.5, 2, 2)))) ≈ A .+ 0.5 .* (B .- A)
    @test Array(LB.addcmul(a, b, b; value = 2)) ≈ A .+ 2 .* B .* B
    @test Array(LB.addcdiv(a, b, b; value = 3)) ≈ A .+ 3
    out = Tensor(zeros(2, 2))
    LB.lerp!(out, a, b, 1.0)
    @test Array(out) == repeat(B, 2)
    c = copy(a)
    LB.addcmul!(c, b, b)
    @test Array(c) ≈ A .+ B .* B
    @test_throws BroadcastError LB.lerp!(Tensor(copy(B)), a, 0.5) # B's size is not the broadcast size
    t = Tensor(Float64[-2, 0.5, 3])
    clamp!(t, -1, 1)
    @test Array(t) == [-1, 0.5, 1]
    dest = zeros(3)
    dest .= clamp.(Tensor(Float64[-2, 0.5, 3]), 0, 0.25)
    @test dest == [0, 0.25, 0.25]
    x = Tensor(Float64[1 NaN; 3 4])
    @test LB.nansum(x) == 8 && Array(LB.nansum(x; dims = 1)) == [4.0 4.0]
    @test LB.nanmean(x) ≈ 8 / 3
    @test LB.logsumexp(Tensor([0.0, 0.0])) ≈ log(2)
    M = [1 5 2; 7 0 7]
    @test argmax(Tensor(M)) == argmax(M) && argmin(Tensor(M)) == argmin(M)
    @test argmax(Tensor(M); dims = 2) == argmax(M; dims = 2)
    @test argmax(Tensor([3, 9, 9])) == 2
    @test_throws BroadcastError argmax(Tensor([true, false]))
    s = LB.squeeze(Tensor(zeros(2, 1, 3)))
    @test size(s) == (2, 3) && size(LB.squeeze(Tensor(zeros(2, 1, 3)), 1)) == (2, 1, 3)
    p, q = LB.broadcast_tensors(Tensor([1, 2]), Tensor([10 20 30]))
    @test size(p) == size(q) == (2, 3) && Array(p) == [1 1 1; 2 2 2]
    @test LB.iscontiguous(Tensor(zeros(2, 3))) && !LB.iscontiguous(Tensor(view(zeros(4, 3), 1:2:4, :)))
    @test Array(LB.cast(Int32, Tensor([1.9, -1.9]))) == Int32[1, -1]
    @test LB.set_parallel_threshold(0) === nothing
end

# The example of docs/languages.md (the program of the other languages' examples), checked against
# Statistics on the plain array.
@testset "standardise the columns and mask the outliers" begin
    X = Tensor(randn(Float32, 1000, 8))
    Z = (X .- mean(X; dims = 1)) ./ std(X; dims = 1)
    masked = ifelse.(Z .> 2, 0f0, Z)
    display(Array(masked)[1:3, :])
    A = Array(X)
    @test size(masked) == (1000, 8) && eltype(masked) == Float32
    @test isapprox(Array(Z), (A .- mean(A; dims = 1)) ./ std(A; dims = 1); rtol = 1e-4)
    @test Array(masked) == ifelse.(Array(Z) .> 2, 0f0, Array(Z))
end

@testset "new tensors, dtype and status names, broadcast_shapes" begin
    z = LB.zeros(Float32, 2, 3)
    @test z isa Tensor && size(z) == (2, 3) && eltype(z) == Float32 && Array(z) == zeros(Float32, 2, 3)
    @test Array(LB.ones(Int16, (3,))) == Int16[1, 1, 1] && eltype(LB.zeros(4)) == Float64
    @test size(Tensor(undef, Bool, 0, 2)) == (0, 2) && eltype(Tensor(undef, Int8, 2)) == Int8
    @test Array(LB.fill(2.5f0, 2, 2)) == fill(2.5f0, 2, 2)
    huge = 2^60 + 1 # beyond a double: written exactly through .=
    @test Array(LB.fill(huge, 3)) == [huge, huge, huge]
    @test_throws BroadcastError LB.zeros(Float32, -1)
    A = rand(Float64, 3, 2)
    c = Tensor(A; copy = true)
    A[1, 1] = 99.0
    @test c.root === nothing && c[1, 1] != 99.0 && Array(c)[2:end] == A[2:end]
    @test LB.dtype_name(Float32) == "float32" && LB.dtype_name(LB.BFloat16Bits) == "bfloat16"
    @test all(LB.dtype_size(T) == sizeof(T) for T in LB.ELTYPES)
    @test LB.status_string(LB.BC_OK) != LB.status_string(LB.BC_ERR_SHAPE)
    @test LB.status_string(12345) == "unknown status"
    @test LB.broadcast_shapes((3, 1), (3,)) == size(zeros(3, 1) .+ zeros(3)) == (3, 1)
    @test LB.broadcast_shapes((1, 4), (3,), (3, 1, 2)) == size(zeros(1, 4) .+ zeros(3) .+ zeros(3, 1, 2))
    @test LB.broadcast_shapes() == () && LB.broadcast_shapes((2, 0)) == (2, 0)
    e = caught(() -> LB.broadcast_shapes((2, 3), (4,)))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE
    @test LB.isbroadcastable((2, 1), (2, 5)) && !LB.isbroadcastable((2, 3), (4,))
end

@testset "more views" begin
    A = reshape(collect(1.0:24.0), 2, 3, 4)
    t = Tensor(A)
    @test Array(LB.broadcast_to(Tensor([1, 2]), 2, 3)) == [1 1 1; 2 2 2]
    @test size(LB.expand_as(Tensor(ones(2, 1)), Tensor(zeros(2, 5)))) == (2, 5)
    s = LB.swapdims(t, 1, 3)
    @test size(s) == (4, 3, 2) && Array(s) == permutedims(A, (3, 2, 1)) && s.root === A
    M = [1 2 3; 4 5 6]
    @test Array(permutedims(Tensor(M))) == permutedims(M)
    @test Array(permutedims(Tensor([1, 2, 3]))) == permutedims([1, 2, 3])
    @test size(LB.unsqueeze(t, 1)) == (1, 2, 3, 4) && size(LB.unsqueeze(t, 4)) == (2, 3, 4, 1)
    @test_throws ArgumentError LB.unsqueeze(t, 5)
    f = LB.flatten(t, 1, 2)
    @test size(f) == (6, 4) && Array(f) == reshape(A, 6, 4) && f.root === A
    @test Array(LB.flatten(t)) == vec(A) && size(LB.flatten(Tensor(fill(7.0)))) == (1,)
    v = reshape(t, 6, :; copy = false)
    @test Array(v) == reshape(A, 6, 4) && v.root === A
    e = caught(() -> reshape(LB.swapdims(t, 1, 2), 24; copy = false))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE
    @test Array(reshape(LB.swapdims(t, 1, 2), 24)) == vec(permutedims(A, (2, 1, 3))) # copy = true copies
    w = LB.as_strided(t, (2, 2), (1, 2); offset = 1)
    @test Array(w) == [A[2] A[4]; A[3] A[5]]
    sl = LB.slice(t, 3, 2:4)
    @test LB.storage_offset(sl) == 6 && LB.storage_offset(t) == 0
    c = LB.contiguous(s)
    @test Array(c) == Array(s) && LB.iscontiguous(c) && c.root === nothing
    x = copy(t)
    @test isopen(x)
    close(x)
    @test !isopen(x)
end

@testset "DLPack" begin
    A = rand(Float32, 3, 4)
    t = Tensor(A)
    m = LB.to_dlpack(t)
    close(t) # the export keeps the memory alive
    u = LB.from_dlpack(m)
    @test size(u) == (3, 4) && Array(u) == A
    m2 = LB.to_dlpack(u; versioned = false)
    @test Array(LB.from_dlpack(m2; versioned = false)) == A
    LB.free_dlpack(LB.to_dlpack(u)) # no consumer: released by its owner
    e = caught(() -> LB.to_dlpack(LB.expand(Tensor([1.0, 2.0]), 2, 3); versioned = false))
    @test e isa BroadcastError && e.status == LB.BC_ERR_READ_ONLY
    @test_throws ArgumentError LB.from_dlpack(C_NULL)
end

@testset "fused expressions" begin
    a, b, c = rand(Float32, 3, 4), rand(Float32, 3), rand(Float32, 1, 4)
    ta = Tensor(a)
    r = LB.@fused ta .* b .+ sqrt.(c)
    @test r isa Tensor && Array(r) == Array(ta .* b .+ sqrt.(c)) # the calls one by one
    @test Array(LB.@fused max.(ta, b) .- abs.(c)) == Array(max.(ta, b) .- abs.(c))
    @test Array(LB.@fused ifelse.(ta .> 0.5f0, ta, 0f0)) == ifelse.(a .> 0.5f0, a, 0f0)
    @test Array(LB.@fused clamp.(ta, 0.25f0, 0.75f0)) == clamp.(a, 0.25f0, 0.75f0)
    @test Array(LB.@fused ta .^ 2) ≈ a .^ 2
    d = zeros(Float32, 3, 4)
    LB.@fused d .= ta .* b
    @test d == a .* b
    x = copy(a)
    LB.@fused x .= x .* 2f0 .+ b # dest among the operands
    @test x == a .* 2f0 .+ b
    s = LB.@fused sum(ta .* b; dims = 2)
    @test size(s) == (3, 1) && Array(s) ≈ sum(a .* b; dims = 2)
    @test LB.@fused(sum(ta .- b)) ≈ sum(a .- b)
    @test (LB.@fused maximum(abs.(ta .- b); dims = (1, 2))) isa Tensor
    # A number is a 0-dimensional tensor of its type: Int32 .+ 2.5 is Float64 here.
    i = Tensor(Int32[1, 2])
    @test eltype(LB.@fused i .+ 2.5) == Float64 && eltype(i .+ 2.5) == Float32
    bc = Base.Broadcast.Broadcasted(+, (ta, b))
    p = LB.plan_fused(bc)
    @test p.size == (3, 4) && p.eltype == Float32 && p.alloc_bytes == sizeof(a)
    @test LB.plan_fused!(LB.Geometry(Float32, (3, 4)), bc).alloc_bytes == 0
    p = LB.plan_fused(sum, bc; dims = 1)
    @test p.size == (1, 4) && p.fused
    e = caught(() -> LB.@fused ta .+ zeros(Float32, 2))
    @test e isa BroadcastError && e.status == LB.BC_ERR_SHAPE
    @test_throws ArgumentError LB.fused(Base.Broadcast.Broadcasted(string, (ta,)))
end
