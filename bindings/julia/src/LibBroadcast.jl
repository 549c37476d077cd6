"""
    LibBroadcast

Julia binding of libbroadcast, a C library with PyTorch's broadcasting rules. A Julia array is
column-major and broadcasts on its *leading* dimensions; the library is row-major and broadcasts
on *trailing* ones. Passing an array's size and strides reversed (the same bytes, seen row-major)
turns one rule into the other, so `LibBroadcast.add(A, B)` has the shape and values of `A .+ B`.

    A = rand(Float32, 3, 4); B = rand(Float32, 3)
    LibBroadcast.add(A, B) == A .+ B        # true, and the same for sub, mul, divide
    t = Tensor(A)                           # a view of A's memory, no copy
    t .+ B == A .+ B                        # dot syntax with a Tensor runs the library (TensorStyle)
    sqrt.(abs.(t)), ifelse.(t .> 0.5f0, 0f0, t), clamp.(t, 0, 1), t .^ 2
    t .+= B; Array(t)                       # in place (copyto!): A itself is updated
    LibBroadcast.lt(A, B) == (A .< B)       # and the C API's other operations (OPS below)
    LibBroadcast.select(A .> 0, A, B)       # ifelse.(A .> 0, A, B), torch.where
    Array(t .* 2.5), Array(1 .- t)          # numbers, promoted as PyTorch promotes Python's
    t[2, 3], size(t, 3), t == A             # reads, Julia's size rule, equality by value
    LibBroadcast.plan(+, A, B)              # what A .+ B would do, from types and sizes alone
    sum(t; dims = 2), mean(t), maximum(t)   # reductions over Julia's dimensions (Statistics.mean)
    LibBroadcast.sum_to_size(*, t, Tensor(B), 3)  # sum(A .* B; dims = 2), without making A .* B
    argmax(t), LibBroadcast.nansum(t; dims = 1)  # Julia's CartesianIndex; PyTorch's nansum
    LibBroadcast.lerp(t, Tensor(B), 0.25)   # and addcmul, addcdiv, clamp!(t, 0, 1), with ! forms
    LibBroadcast.@fused t .* B .+ sqrt.(t)  # one pass over memory; also dest .= ..., sum(...; dims)
    LibBroadcast.zeros(Float32, 3), LibBroadcast.swapdims(t, 1, 2), LibBroadcast.unsqueeze(t, 1)
    LibBroadcast.broadcast_shapes((3, 1), (3,)), LibBroadcast.from_dlpack(LibBroadcast.to_dlpack(t))

Element types follow PyTorch's promotion, not Julia's: integer division gives `Float32`,
`Bool .- Bool` is an error, `Bool .+ Bool` stays `Bool`. Error messages are the library's,
written in row-major terms; the fields of a [`BroadcastError`](@ref) are in Julia's order.

The library is found at `ENV["LIBBROADCAST_PATH"]` (a file path), else as `libbroadcast.so.0`
(installed; `libbroadcast.0.dylib` on macOS, `broadcast.dll` on Windows), else as `libbroadcast`
on the loader's search path.

Julia cannot be installed where this package is developed: its tests (test/runtests.jl) have not
run there. What runs is test/symbols_check.py (every C function named is exported, every export
wrapped or listed with a reason) and test/colmajor_proxy.py (the package's C calls replayed from
Python against Julia's rules).
"""
module LibBroadcast

using Libdl
# mean, var and std of a Tensor are methods of Statistics' functions (LibBroadcast.mean is
# Statistics.mean).
using Statistics: Statistics, mean, var, std

export Tensor, BroadcastError, BFloat16Bits

# The C API's codes under their C names (BC_OK, BC_ERR_*, BC_DTYPE_*, BC_OP_*, ...), generated
# from include/broadcast.h by scripts/gen_codes.py.
include("codes.jl")

# ---------------------------------------------------------------------------------------------
# The library and its functions
# ---------------------------------------------------------------------------------------------

const LIBPATH = Ref{String}("")
const FN = Dict{Symbol,Ptr{Cvoid}}()

# Every C function the package calls, resolved once in __init__.
const FUNCTIONS = (
    :bc_version, :bc_last_error_message, :bc_last_error_info, :bc_last_error_shape,
    :bc_binary, :bc_binary_inplace, :bc_binary_out,
    :bc_set_broadcast_warning, :bc_get_broadcast_warning, :bc_set_legacy_fallback,
    :bc_get_legacy_fallback, :bc_set_warning_handler, :bc_set_num_threads, :bc_get_num_threads,
    :bc_tensor_wrap, :bc_tensor_free, :bc_tensor_live_count, :bc_tensor_clone,
    :bc_tensor_dtype, :bc_tensor_ndim, :bc_tensor_shape, :bc_tensor_strides, :bc_tensor_copy_to,
    :bc_tensor_expand, :bc_tensor_permute, :bc_tensor_slice,
    :bc_where, :bc_where_out, :bc_reduce, :bc_tensor_sum_to_size, :bc_binary_sum_to,
    :bc_binary_scalar, :bc_binary_rscalar, :bc_binary_scalar_inplace,
    :bc_plan_binary, :bc_plan_binary_inplace, :bc_plan_binary_out, :bc_plan_binary_scalar,
    :bc_plan_binary_rscalar, :bc_plan_binary_scalar_inplace, :bc_plan_where, :bc_plan_where_out,
    :bc_plan_reduce, :bc_plan_sum_to_size, :bc_plan_binary_sum_to,
    :bc_unary, :bc_unary_inplace, :bc_unary_out, :bc_var, :bc_std,
    :bc_tensor_numel, :bc_tensor_format, :bc_tensor_data, :bc_all, :bc_any, :bc_clamp, :bc_clamp_scalar,
    :bc_tensor_reshape, :bc_lerp, :bc_lerp_inplace, :bc_lerp_out, :bc_lerp_scalar,
    :bc_lerp_scalar_inplace, :bc_lerp_scalar_out, :bc_addcmul, :bc_addcmul_inplace, :bc_addcmul_out,
    :bc_addcdiv, :bc_addcdiv_inplace, :bc_addcdiv_out, :bc_clamp_inplace, :bc_clamp_out,
    :bc_clamp_scalar_inplace, :bc_clamp_scalar_out, :bc_nansum, :bc_nanmean, :bc_logsumexp,
    :bc_argmax, :bc_argmin, :bc_tensor_squeeze, :bc_tensor_squeeze_all, :bc_tensor_broadcast_tensors,
    :bc_tensor_is_contiguous, :bc_tensor_to_dtype, :bc_set_parallel_threshold,
    :bc_tensor_empty, :bc_tensor_zeros, :bc_tensor_ones, :bc_tensor_full, :bc_tensor_from_data,
    :bc_tensor_is_live, :bc_tensor_contiguous, :bc_tensor_offset, :bc_tensor_broadcast_to,
    :bc_tensor_expand_as, :bc_tensor_transpose, :bc_tensor_as_strided, :bc_tensor_view,
    :bc_tensor_unsqueeze, :bc_tensor_flatten, :bc_dtype_size, :bc_dtype_name, :bc_status_str,
    :bc_shape_broadcast, :bc_shape_broadcast_n, :bc_shape_is_broadcastable,
    :bc_tensor_to_dlpack, :bc_tensor_to_dlpack_versioned, :bc_tensor_from_dlpack,
    :bc_tensor_from_dlpack_versioned, :bc_expr_eval, :bc_expr_eval_out, :bc_expr_reduce,
    :bc_plan_expr, :bc_plan_expr_out, :bc_plan_expr_reduce,
)

fn(name::Symbol) = FN[name]

# The C API this package was written against: the library must have the same major version and
# at least this minor version (0.x releases only add to the ABI).
const API_VERSION = v"0.2.0"

const WARNING_CALLBACK = Ref{Ptr{Cvoid}}(C_NULL)

# The names tried after ENV["LIBBROADCAST_PATH"]: the installed name (its soname), then the
# name cargo builds, on the loader's search path ("libbroadcast" gets the platform's suffix).
# On Windows cargo names the library broadcast.dll, without the lib prefix.
function library_names()
    Sys.iswindows() && return ["broadcast.dll", "libbroadcast"]
    Sys.isapple() && return ["libbroadcast.0.dylib", "libbroadcast"]
    return ["libbroadcast.so.0", "libbroadcast"]
end

function __init__()
    candidates = String[]
    haskey(ENV, "LIBBROADCAST_PATH") && push!(candidates, ENV["LIBBROADCAST_PATH"])
    append!(candidates, library_names())
    handle = nothing
    for c in candidates
        handle = Libdl.dlopen(c, Libdl.RTLD_NOW; throw_error = false)
        if handle !== nothing
            LIBPATH[] = c
            break
        end
    end
    handle === nothing && error("LibBroadcast: cannot load libbroadcast (tried $(join(candidates, ", "))); " *
                                "set ENV[\"LIBBROADCAST_PATH\"] to the library file, for example " *
                                "target/release/libbroadcast.so of a build of the repository")
    for name in FUNCTIONS
        FN[name] = Libdl.dlsym(handle, name)
    end
    v = VersionNumber(unsafe_string(ccall(fn(:bc_version), Cstring, ())))
    if v.major != API_VERSION.major || v < API_VERSION
        error("LibBroadcast: $(LIBPATH[]) is libbroadcast $v; this package needs $(API_VERSION.major).x, at least $API_VERSION")
    end
    WARNING_CALLBACK[] = @cfunction(warning_callback, Cvoid, (Ptr{Cvoid}, Cstring))
    ccall(fn(:bc_set_warning_handler), Int32, (Ptr{Cvoid}, Ptr{Cvoid}), WARNING_CALLBACK[], C_NULL)
    return nothing
end

# ---------------------------------------------------------------------------------------------
# Element types
# ---------------------------------------------------------------------------------------------

"""
    BFloat16Bits

A bfloat16 value held as its bits: the element type of bfloat16 tensors. `Float32(x)` widens it
exactly; `reinterpret(BFloat16s.BFloat16, x)` gives the BFloat16s.jl value.
"""
primitive type BFloat16Bits 16 end
Base.Float32(x::BFloat16Bits) = reinterpret(Float32, UInt32(reinterpret(UInt16, x)) << 16)

include("eltypes.jl") # ELTYPES, from the library's table of element types
const Elem = Union{ELTYPES...}

dtype_code(::Type{T}) where {T<:Elem} = Int32(findfirst(==(T), ELTYPES) - 1)

# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

# Mirrors struct bc_error_info.
struct ErrorInfo
    status::Int32
    kind::Int32
    dim::Int64
    size_a::Int64
    size_b::Int64
    arg::Int64
    dtype_a::Int32
    dtype_b::Int32
    ndim_a::Int64
    ndim_b::Int64
end

"""
    BroadcastError(status, kind, dim, size_a, size_b, arg, eltype_a, eltype_b, shape_a, shape_b, msg)

A failed library call: the status (`BC_ERR_*` code) and error kind (`BC_ERROR_KIND_*` code) of
`include/broadcast.h`, and what the kind says, in Julia's order: `dim` counts from 1 in Julia's
dimension order, `shape_a` and `shape_b` are Julia sizes, `arg` counts from 1; fields that do not
apply are `nothing`. `msg` is the library's message, exactly as PyTorch words it, in row-major
terms (its sizes and dimensions read right to left against Julia's).
"""
struct BroadcastError <: Exception
    status::Int32
    kind::Int32
    dim::Union{Int,Nothing}
    size_a::Union{Int,Nothing}
    size_b::Union{Int,Nothing}
    arg::Union{Int,Nothing}
    eltype_a::Union{DataType,Nothing}
    eltype_b::Union{DataType,Nothing}
    shape_a::Union{Tuple{Vararg{Int}},Nothing}
    shape_b::Union{Tuple{Vararg{Int}},Nothing}
    msg::String
end

Base.showerror(io::IO, e::BroadcastError) = print(io, "BroadcastError: ", e.msg)


# check(st) must follow its ccall with nothing in between that can yield: the last error is per
# OS thread, and a task may move to another thread at a yield point.
@inline check(st::Int32) = st == BC_OK ? nothing : throw(last_error(st))

function last_error(st::Int32)
    n = ccall(fn(:bc_last_error_message), Csize_t, (Ptr{UInt8}, Csize_t), C_NULL, 0)
    buf = Vector{UInt8}(undef, n + 1)
    GC.@preserve buf ccall(fn(:bc_last_error_message), Csize_t, (Ptr{UInt8}, Csize_t), pointer(buf), n + 1)
    msg = String(buf[1:n])
    r = Ref{ErrorInfo}()
    ccall(fn(:bc_last_error_info), Int32, (Ref{ErrorInfo},), r)
    info = r[]
    a, b = error_shape(0, info.ndim_a), error_shape(1, info.ndim_b)
    opt(x) = x < 0 ? nothing : Int(x)
    eltype_or_nothing(code) = 0 <= code < length(ELTYPES) ? ELTYPES[code+1] : nothing
    return BroadcastError(st, info.kind, julia_dim(info, a, b), opt(info.size_a), opt(info.size_b),
                          info.arg < 0 ? nothing : Int(info.arg) + 1,
                          eltype_or_nothing(info.dtype_a), eltype_or_nothing(info.dtype_b),
                          a === nothing ? nothing : Tuple(reverse(a)),
                          b === nothing ? nothing : Tuple(reverse(b)), msg)
end

function error_shape(which, ndim)
    ndim < 0 && return nothing
    buf = Vector{Int64}(undef, ndim)
    nd = Ref{Int64}(0)
    GC.@preserve buf ccall(fn(:bc_last_error_shape), Int32, (Int32, Ptr{Int64}, Csize_t, Ref{Int64}),
                           which, pointer(buf), ndim, nd)
    return Int.(buf)
end

# The error's dimension in Julia's order: row-major dimension d of an n-dimensional shape is
# Julia dimension n - d; n-shape broadcasting counts from the right already (-k is Julia's k).
function julia_dim(info::ErrorInfo, a, b)
    k = info.kind
    (a === nothing || b === nothing) && k != BC_ERROR_KIND_NARY_NOT_BROADCASTABLE && return nothing
    if k == BC_ERROR_KIND_NOT_BROADCASTABLE
        return max(length(a), length(b)) - Int(info.dim)
    elseif k == BC_ERROR_KIND_NARY_NOT_BROADCASTABLE
        return -Int(info.dim)
    elseif k == BC_ERROR_KIND_INPLACE_MISMATCH
        return length(a) - Int(info.dim)
    elseif k == BC_ERROR_KIND_EXPAND_MISMATCH || k == BC_ERROR_KIND_EXPAND_LEADING
        return length(b) - Int(info.dim)
    end
    return nothing
end

# ---------------------------------------------------------------------------------------------
# Tensors
# ---------------------------------------------------------------------------------------------

struct Own end

"""
    Tensor(A::AbstractArray)

A library tensor over `A`: a view of `A`'s memory without copying when `A` is a strided array of
one of the ten element types with no negative stride (`A` stays alive as long as the tensor or
any view of it), and otherwise a tensor over a copy of `A`. Free it with `close(t)` (or let the
finalizer do it); `Array(t)` copies it out. Julia sizes and strides are the library's reversed.
"""
mutable struct Tensor
    @atomic ptr::Ptr{Cvoid}
    root::Any # the Julia memory the tensor views (nothing when the library owns it)
    function Tensor(::Own, ptr::Ptr{Cvoid}, root)
        t = new(ptr, root)
        finalizer(close, t)
        return t
    end
end

"""
    close(t::Tensor)

Frees the tensor's handle now (it may be called any number of times, from any task).
"""
function Base.close(t::Tensor)
    p = @atomicswap t.ptr = C_NULL
    p == C_NULL || ccall(fn(:bc_tensor_free), Cvoid, (Ptr{Cvoid},), p)
    return nothing
end

"""
    LibBroadcast.with(f, t::Tensor)

`f(t)`, then `close(t)`, also when `f` throws.
"""
function with(f, t::Tensor)
    try
        return f(t)
    finally
        close(t)
    end
end

# Passing `t` itself to ccall keeps it rooted for the call.
function Base.unsafe_convert(::Type{Ptr{Cvoid}}, t::Tensor)
    p = @atomic t.ptr
    p == C_NULL && throw(ArgumentError("LibBroadcast.Tensor used after close"))
    return p
end

"""
    Tensor(A::AbstractArray; copy = false)

With `copy = true`, a tensor in the library's own memory holding a copy of `A`'s elements
(`bc_tensor_from_data`), which does not keep `A` alive and which later writes to `A` do not
change; otherwise a view of `A` as above.
"""
function Tensor(A::AbstractArray; copy::Bool = false)
    copy && return from_data(A)
    t = wrap(A)
    return t === nothing ? Tensor(collect(A)) : t
end

# A tensor in the library's memory holding A's elements: a dense column-major Array is the
# row-major bytes of the reversed size, which bc_tensor_from_data copies.
function from_data(A::AbstractArray{T}) where {T}
    T <: Elem || throw(ArgumentError("LibBroadcast has no element type for $T"))
    B = A isa Array{T} ? A : convert(Array{T}, A)
    shape = Int64[reverse(size(B))...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve B shape begin
        st = ccall(fn(:bc_tensor_from_data), Int32, (Int32, Ptr{Int64}, Csize_t, Ptr{Cvoid}, Csize_t, Ref{Ptr{Cvoid}}),
                   dtype_code(T), pointer(shape), length(shape), pointer(B), sizeof(B), out)
        check(st)
    end
    return Tensor(Own(), out[], nothing)
end

# A tensor viewing A's memory, or nothing when A cannot be viewed without a copy.
function wrap(A::AbstractArray{T}) where {T}
    T <: Elem || throw(ArgumentError("LibBroadcast has no element type for $T"))
    A isa StridedArray || return nothing
    st = strides(A)
    any(<(0), st) && return nothing
    sz = size(A)
    span = any(iszero, sz) ? 0 : 1 + sum((sz[i] - 1) * st[i] for i in 1:ndims(A); init = 0)
    shape = Int64[reverse(sz)...]
    rstrides = Int64[reverse(st)...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve A shape rstrides begin
        s = ccall(fn(:bc_tensor_wrap), Int32,
                  (Int32, Ptr{Cvoid}, Csize_t, Ptr{Int64}, Ptr{Int64}, Csize_t, Int64, Ptr{Cvoid}, Ptr{Cvoid}, Ref{Ptr{Cvoid}}),
                  dtype_code(T), pointer(A), span * sizeof(T), pointer(shape), pointer(rstrides),
                  ndims(A), 0, C_NULL, C_NULL, out)
        check(s)
    end
    # No release callback: the tensor (and every view of it) holds A in `root`, and Julia keeps
    # everything a pending finalizer can reach alive until that finalizer has freed the handle.
    return Tensor(Own(), out[], A)
end

function dtype(t::Tensor)
    r = Ref{Int32}(0)
    check(ccall(fn(:bc_tensor_dtype), Int32, (Ptr{Cvoid}, Ref{Int32}), t, r))
    return r[]
end

function ndim(t::Tensor)
    r = Ref{Csize_t}(0)
    check(ccall(fn(:bc_tensor_ndim), Int32, (Ptr{Cvoid}, Ref{Csize_t}), t, r))
    return Int(r[])
end

# The row-major sizes (strides = false) or strides of t.
function dims(t::Tensor, strides::Bool)
    n = ndim(t)
    buf = Vector{Int64}(undef, n)
    GC.@preserve buf check(ccall(fn(strides ? :bc_tensor_strides : :bc_tensor_shape), Int32,
                                 (Ptr{Cvoid}, Ptr{Int64}, Csize_t), t, pointer(buf), n))
    return buf
end

Base.eltype(t::Tensor) = ELTYPES[dtype(t)+1]
Base.ndims(t::Tensor) = ndim(t)
Base.size(t::Tensor) = Tuple(Int.(reverse(dims(t, false))))
# Past the last dimension a size is 1, as for Julia's arrays (size(A, 0) is a BoundsError).
function Base.size(t::Tensor, d::Integer)
    sz = size(t)
    return d <= length(sz) ? sz[d] : 1
end
Base.strides(t::Tensor) = Tuple(Int.(reverse(dims(t, true))))
function Base.length(t::Tensor)
    r = Ref{Int64}(0)
    check(ccall(fn(:bc_tensor_numel), Int32, (Ptr{Cvoid}, Ref{Int64}), t, r))
    return Int(r[])
end
"""
    isopen(t::Tensor)

Whether `t` still holds a live handle of the library (`close` has not run).
"""
function Base.isopen(t::Tensor)
    p = @atomic t.ptr
    # A handle is a checked token, so asking about one that another task has just freed is safe.
    return p != C_NULL && GC.@preserve(t, ccall(fn(:bc_tensor_is_live), Bool, (Ptr{Cvoid},), p))
end

# The library's text of t (PyTorch's repr, in row-major terms), sized first as the message is.
function formatted(t::Tensor)
    n = Ref{Csize_t}(0)
    check(ccall(fn(:bc_tensor_format), Int32, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t, Ref{Csize_t}), t, C_NULL, 0, n))
    buf = Vector{UInt8}(undef, n[] + 1)
    GC.@preserve buf check(ccall(fn(:bc_tensor_format), Int32, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t, Ref{Csize_t}),
                                 t, pointer(buf), length(buf), n))
    return String(buf[1:n[]])
end

"""
    show(io, t::Tensor)

The library's text of `t`, as PyTorch prints the tensor: row-major, so the nesting is Julia's
dimensions from the last to the first (a 2×3 Tensor prints as 3 rows of 2). The `text/plain`
form (the REPL's) puts the Julia size and element type first. A tensor the library will not
print (it would read more than 2^20 elements) shows its size and type only.
"""
function Base.show(io::IO, t::Tensor)
    isopen(t) || return print(io, "Tensor(closed)")
    text = try
        formatted(t)
    catch e
        e isa BroadcastError || rethrow()
        nothing
    end
    text === nothing ? print(io, "Tensor{", eltype(t), "}", size(t)) : print(io, text)
end

function Base.show(io::IO, ::MIME"text/plain", t::Tensor)
    isopen(t) || return print(io, "Tensor(closed)")
    n = ndims(t)
    print(io, n == 0 ? "0-dimensional" : n == 1 ? "$(length(t))-element" : join(size(t), "×"),
          " Tensor{", eltype(t), "}:\n")
    show(io, t)
end

"""
    t[i, j, ...]
    t[k]

An element of `t`, read from its memory: Julia indices (from 1, in Julia's dimension order; a
single index counts in Julia's column-major order; trailing indices may be 1, `t[]` reads a
0-dimensional tensor), a `BoundsError` outside. Tensors are read only this way: write with
`.=` (a broadcast, computed by the library).
"""
function Base.getindex(t::Tensor, I::Integer...)
    sz = size(t)
    if length(I) == 1 && length(sz) != 1
        1 <= I[1] <= prod(sz) || throw(BoundsError(t, I))
        idx = Tuple(CartesianIndices(sz)[I[1]])
    else
        length(I) >= length(sz) && all(isone, I[length(sz)+1:end]) || throw(BoundsError(t, I))
        all(k -> 1 <= I[k] <= sz[k], 1:length(sz)) || throw(BoundsError(t, I))
        idx = I[1:length(sz)]
    end
    T = eltype(t)
    st = strides(t)
    at = sum(((idx[k] - 1) * st[k] for k in 1:length(idx)); init = 0)
    data = Ref{Ptr{Cvoid}}(C_NULL)
    # The address is valid while t is open: t stays rooted, so its finalizer cannot free it.
    GC.@preserve t begin
        check(ccall(fn(:bc_tensor_data), Int32, (Ptr{Cvoid}, Ref{Ptr{Cvoid}}, Ptr{Csize_t}, Ptr{Bool}),
                    t, data, C_NULL, C_NULL))
        return unsafe_load(Ptr{T}(data[]) + at * sizeof(T))
    end
end

# Equality by value, as for arrays: the same size and equal elements (Julia's ==, so NaN is not
# equal to itself and isequal is Julia's too); hash agrees with the array's.
Base.:(==)(a::Tensor, b::Tensor) = Array(a) == Array(b)
Base.:(==)(a::Tensor, B::AbstractArray) = Array(a) == B
Base.:(==)(A::AbstractArray, b::Tensor) = A == Array(b)
Base.isequal(a::Tensor, b::Tensor) = isequal(Array(a), Array(b))
Base.isequal(a::Tensor, B::AbstractArray) = isequal(Array(a), B)
Base.isequal(A::AbstractArray, b::Tensor) = isequal(A, Array(b))
Base.hash(t::Tensor, h::UInt) = hash(Array(t), h)

"""
    Array(t::Tensor)

A new Julia array holding `t`'s elements (the library's row-major bytes are the column-major
array of the reversed size, so no transpose is needed).
"""
function Base.Array(t::Tensor)
    A = Array{eltype(t)}(undef, size(t))
    GC.@preserve A check(ccall(fn(:bc_tensor_copy_to), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Csize_t),
                               t, pointer(A), sizeof(A)))
    return A
end

"""
    copy(t::Tensor)

A deep copy in new storage.
"""
function Base.copy(t::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ccall(fn(:bc_tensor_clone), Int32, (Ptr{Cvoid}, Ref{Ptr{Cvoid}}), t, out))
    return Tensor(Own(), out[], nothing)
end

"""
    live_count()

The number of live tensor handles in the process (for leak checks).
"""
live_count() = Int(ccall(fn(:bc_tensor_live_count), Csize_t, ()))

# ---------------------------------------------------------------------------------------------
# Views: they share their parent's memory and root
# ---------------------------------------------------------------------------------------------

function view_of(t::Tensor, out::Ref{Ptr{Cvoid}}, st::Int32)
    check(st)
    return Tensor(Own(), out[], t.root)
end

"""
    expand(t::Tensor, sizes::Integer...)

A view of `t` broadcast to `sizes` (Julia's order: dimensions of size 1 repeat, new trailing
dimensions may be added, -1 keeps a size). No data is copied.
"""
function expand(t::Tensor, sizes::Integer...)
    s = Int64[reverse(sizes)...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve s ccall(fn(:bc_tensor_expand), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Ref{Ptr{Cvoid}}),
                              t, pointer(s), length(s), out)
    return view_of(t, out, st)
end

"""
    permutedims(t::Tensor, perm)

A view with dimension `i` of the result being dimension `perm[i]` of `t`, as `permutedims` does
for arrays, without copying.
"""
function Base.permutedims(t::Tensor, perm)
    n = length(perm)
    # Row-major dimension k of the result is Julia dimension n - k, whose source is Julia
    # dimension perm[n - k], which is row-major dimension n - perm[n - k].
    d = Int64[n - perm[n-k] for k in 0:n-1]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve d ccall(fn(:bc_tensor_permute), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Ref{Ptr{Cvoid}}),
                              t, pointer(d), n, out)
    return view_of(t, out, st)
end

"""
    reshape(t::Tensor, dims...; copy = true)
    vec(t::Tensor)

`t` with the Julia size `dims` (one of them may be `:`), its elements taken in Julia's
column-major order, as `reshape(A, dims...)` takes an array's: the library's row-major reshape of
the reversed sizes is exactly that. The result views `t`'s memory when the strides allow it,
and is otherwise (a slice with steps, a permuted view) a copy in new memory, as PyTorch's
reshape is (Julia's reshape of an array always shares). `vec(t)` is `reshape(t, :)`.
With `copy = false` the result is always a view (PyTorch's `view`), and strides that do not
allow one are the library's `BroadcastError` instead of a copy.
"""
function Base.reshape(t::Tensor, dims::Union{Integer,Colon}...; copy::Bool = true)
    s = Int64[d isa Colon ? -1 : d for d in reverse(dims)] # -1: the library infers the size
    out = Ref{Ptr{Cvoid}}(C_NULL)
    if !copy
        st = GC.@preserve s ccall(fn(:bc_tensor_view), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Ref{Ptr{Cvoid}}),
                                  t, pointer(s), length(s), out)
        return view_of(t, out, st)
    end
    copied = Ref{Bool}(false)
    st = GC.@preserve s ccall(fn(:bc_tensor_reshape), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Ref{Bool}, Ref{Ptr{Cvoid}}),
                              t, pointer(s), length(s), copied, out)
    check(st)
    return Tensor(Own(), out[], copied[] ? nothing : t.root)
end
Base.reshape(t::Tensor, dims::Tuple{Vararg{Union{Integer,Colon}}}; copy::Bool = true) = reshape(t, dims...; copy)
Base.vec(t::Tensor) = reshape(t, :)

"""
    slice(t::Tensor, dim::Integer, r::AbstractRange)

The view `t[:, ..., r, ..., :]` with `r` (a range of step at least 1) along dimension `dim`.
"""
function slice(t::Tensor, dim::Integer, r::AbstractRange{<:Integer})
    out = Ref{Ptr{Cvoid}}(C_NULL)
    start, stop = first(r) - 1, isempty(r) ? first(r) - 1 : last(r)
    st = ccall(fn(:bc_tensor_slice), Int32, (Ptr{Cvoid}, Int64, Int64, Int64, Int64, Ref{Ptr{Cvoid}}),
               t, ndims(t) - dim, start, stop, step(r), out)
    return view_of(t, out, st)
end

"""
    squeeze(t::Tensor)
    squeeze(t::Tensor, dim::Integer)

A view of `t` without its dimensions of size 1 (PyTorch's `squeeze`), or without Julia dimension
`dim` when its size is 1; unlike Julia's `dropdims`, a `dim` whose size is not 1 leaves `t`'s
size as it is, as in PyTorch.
"""
function squeeze(t::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    return view_of(t, out, ccall(fn(:bc_tensor_squeeze_all), Int32, (Ptr{Cvoid}, Ref{Ptr{Cvoid}}), t, out))
end
function squeeze(t::Tensor, dim::Integer)
    d = rowmajor_dims(ndims(t), (dim,))[1]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    return view_of(t, out, ccall(fn(:bc_tensor_squeeze), Int32, (Ptr{Cvoid}, Int64, Ref{Ptr{Cvoid}}), t, d, out))
end

"""
    broadcast_tensors(ts::Tensor...)

Views of the Tensors `ts` expanded to their common broadcast size, Julia's order (PyTorch's
`torch.broadcast_tensors`), as a tuple; sizes that do not broadcast are the library's
`BroadcastError`. No data is copied.
"""
function broadcast_tensors(ts::Tensor...)
    n = length(ts)
    ins = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, t) for t in ts]
    outs = Base.fill(C_NULL, n)
    st = GC.@preserve ts ins outs ccall(fn(:bc_tensor_broadcast_tensors), Int32, (Ptr{Ptr{Cvoid}}, Csize_t, Ptr{Ptr{Cvoid}}),
                                        pointer(ins), n, pointer(outs))
    check(st)
    return ntuple(k -> Tensor(Own(), outs[k], ts[k].root), n)
end

"""
    iscontiguous(t::Tensor)

Whether `t`'s elements are dense in Julia's column-major order (the library's row-major order of
the reversed sizes), as an `Array` is: a strided view with steps, or a permuted or expanded one,
is not.
"""
function iscontiguous(t::Tensor)
    r = Ref{Bool}(false)
    check(ccall(fn(:bc_tensor_is_contiguous), Int32, (Ptr{Cvoid}, Ref{Bool}), t, r))
    return r[]
end

"""
    cast(T::Type, t::Tensor)

A new Tensor of element type `T` (one of the ten) holding `t`'s elements converted as PyTorch's
`t.to(dtype)` converts them, which are C's casts: floating to integer truncates toward zero,
integers wrap, to `Bool` is `!= 0`, to `Float16` and `BFloat16Bits` rounds to nearest even.
Julia's `T.(A)` differs: it throws an `InexactError` where a value does not fit.
"""
function cast(::Type{T}, t::Tensor) where {T<:Elem}
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_tensor_to_dtype), Int32, (Ptr{Cvoid}, Int32, Ref{Ptr{Cvoid}}), t, dtype_code(T), out)
    check(st)
    return Tensor(Own(), out[], nothing)
end

"""
    broadcast_to(t::Tensor, sizes::Integer...)
    expand_as(t::Tensor, other::Tensor)

Views of `t` broadcast to `sizes` (Julia's order, as [`expand`](@ref), which is the same call
under PyTorch's other name) or to `other`'s size. No data is copied.
"""
function broadcast_to(t::Tensor, sizes::Integer...)
    s = Int64[reverse(sizes)...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve s ccall(fn(:bc_tensor_broadcast_to), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Ref{Ptr{Cvoid}}),
                              t, pointer(s), length(s), out)
    return view_of(t, out, st)
end
function expand_as(t::Tensor, other::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_tensor_expand_as), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ref{Ptr{Cvoid}}), t, other, out)
    return view_of(t, out, st)
end

"""
    swapdims(t::Tensor, i::Integer, j::Integer)
    permutedims(t::Tensor)          # a matrix or a vector

A view of `t` with Julia dimensions `i` and `j` exchanged (PyTorch's `transpose(dim0, dim1)`).
`permutedims(t)` of a 2-dimensional Tensor is `swapdims(t, 1, 2)` and of a vector the 1×n view,
as Julia's `permutedims` of a matrix or a vector. No data is copied.
"""
function swapdims(t::Tensor, i::Integer, j::Integer)
    n = ndims(t)
    d = rowmajor_dims(n, (i, j))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_tensor_transpose), Int32, (Ptr{Cvoid}, Int64, Int64, Ref{Ptr{Cvoid}}), t, d[1], d[2], out)
    return view_of(t, out, st)
end
function Base.permutedims(t::Tensor)
    n = ndims(t)
    n == 1 && return unsqueeze(t, 1)
    n == 2 && return swapdims(t, 1, 2)
    throw(ArgumentError("permutedims(t) of a $n-dimensional Tensor: give the permutation"))
end

"""
    unsqueeze(t::Tensor, dim::Integer)

A view of `t` with a dimension of size 1 inserted so that it is Julia dimension `dim` of the
result (1 to `ndims(t) + 1`; PyTorch's `unsqueeze`): `size(unsqueeze(t, 1)) == (1, size(t)...)`.
"""
function unsqueeze(t::Tensor, dim::Integer)
    n = ndims(t)
    1 <= dim <= n + 1 || throw(ArgumentError("unsqueeze: dimension $dim of a result of $(n + 1) dimensions"))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_tensor_unsqueeze), Int32, (Ptr{Cvoid}, Int64, Ref{Ptr{Cvoid}}), t, n + 1 - dim, out)
    return view_of(t, out, st)
end

"""
    flatten(t::Tensor, first = 1, last = ndims(t))

`t` with Julia dimensions `first` to `last` merged into one, its elements in Julia's column-major
order (PyTorch's `flatten` of the reversed dimensions): `flatten(t)` is `vec(t)`. A view when the
strides allow one, otherwise a copy, as [`reshape`](@ref). A 0-dimensional tensor becomes a
vector of one element.
"""
function flatten(t::Tensor, first::Integer = 1, last::Integer = max(ndims(t), 1))
    n = ndims(t)
    m = max(n, 1)
    1 <= first <= last <= m || throw(ArgumentError("flatten: dimensions $first to $last of a $n-dimensional Tensor"))
    copied = Ref{Bool}(false)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    # Julia dimensions first..last are row-major n - last .. n - first (-1 for a 0-d tensor).
    lo, hi = n == 0 ? (-1, -1) : (n - last, n - first)
    st = ccall(fn(:bc_tensor_flatten), Int32, (Ptr{Cvoid}, Int64, Int64, Ref{Bool}, Ref{Ptr{Cvoid}}),
               t, lo, hi, copied, out)
    check(st)
    return Tensor(Own(), out[], copied[] ? nothing : t.root)
end

"""
    as_strided(t::Tensor, size, strides; offset = storage_offset(t))

A view over `t`'s memory with the Julia `size` and `strides` (in elements, not negative) and
its first element `offset` elements from the start of `t`'s storage (PyTorch's `as_strided`).
Every element must lie inside the storage: the library checks this, not what the view means.
"""
function as_strided(t::Tensor, size, strides; offset::Integer = storage_offset(t))
    length(size) == length(strides) ||
        throw(ArgumentError("as_strided: $(length(size)) sizes and $(length(strides)) strides"))
    sz = Int64[reverse(Tuple(size))...]
    st_ = Int64[reverse(Tuple(strides))...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve sz st_ ccall(fn(:bc_tensor_as_strided), Int32,
                                   (Ptr{Cvoid}, Ptr{Int64}, Ptr{Int64}, Csize_t, Int64, Ref{Ptr{Cvoid}}),
                                   t, pointer(sz), pointer(st_), length(sz), offset, out)
    return view_of(t, out, st)
end

"""
    storage_offset(t::Tensor)

The offset of `t`'s first element in its storage, in elements (PyTorch's `storage_offset`).
"""
function storage_offset(t::Tensor)
    r = Ref{Int64}(0)
    check(ccall(fn(:bc_tensor_offset), Int32, (Ptr{Cvoid}, Ref{Int64}), t, r))
    return Int(r[])
end

"""
    contiguous(t::Tensor)

A copy of `t` in new memory, dense in Julia's column-major order (the library's row-major order
of the reversed size), whatever `t`'s strides: unlike PyTorch's `contiguous`, always a copy.
"""
function contiguous(t::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ccall(fn(:bc_tensor_contiguous), Int32, (Ptr{Cvoid}, Ref{Ptr{Cvoid}}), t, out))
    return Tensor(Own(), out[], nothing)
end

# ---------------------------------------------------------------------------------------------
# Operations: each is one line of OPS
# ---------------------------------------------------------------------------------------------

function binary(op::Int32, a::Tensor, b::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_binary), Int32, (Int32, Ptr{Cvoid}, Ptr{Cvoid}, Ref{Ptr{Cvoid}}), op, a, b, out)
    check(st)
    flush_warnings()
    return Tensor(Own(), out[], nothing)
end

function binary!(op::Int32, target::Tensor, other::Tensor)
    st = ccall(fn(:bc_binary_inplace), Int32, (Int32, Ptr{Cvoid}, Ptr{Cvoid}), op, target, other)
    check(st)
    flush_warnings()
    return target
end

function binary!(op::Int32, out::Tensor, a::Tensor, b::Tensor)
    st = ccall(fn(:bc_binary_out), Int32, (Int32, Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}), op, a, b, out)
    check(st)
    flush_warnings()
    return out
end

# On arrays: the tensors over them live for the call only.
function binary(op::Int32, A::AbstractArray, B::AbstractArray)
    with(Tensor(A)) do a
        with(Tensor(B)) do b
            with(r -> Array(r), binary(op, a, b))
        end
    end
end

# In place on arrays needs a view of the array's own memory.
function writable(A::AbstractArray)
    t = wrap(A)
    t === nothing && throw(ArgumentError("cannot write into a $(typeof(A)) without copying it"))
    return t
end

function binary!(op::Int32, A::AbstractArray, B::AbstractArray)
    with(writable(A)) do a
        with(b -> binary!(op, a, b), Tensor(B))
    end
    return A
end

function binary!(op::Int32, Out::AbstractArray, A::AbstractArray, B::AbstractArray)
    with(writable(Out)) do out
        with(Tensor(A)) do a
            with(b -> binary!(op, out, a, b), Tensor(B))
        end
    end
    return Out
end

# A number as an operand (docs/semantics.md, section 13): it takes part in type promotion by its
# category only, as a Python number does in PyTorch (an Int32 tensor .+ 2.5 is Float32, a UInt8
# tensor .+ 300 stays UInt8 and 300 wraps to 44). Mirrors struct bc_scalar.
struct CScalar
    kind::Int32 # BC_SCALAR_BOOL, _INT, _FLOAT
    b::Bool
    i::Int64
    f::Float64
end

cscalar(x::Bool) = CScalar(BC_SCALAR_BOOL, x, 0, 0.0)
cscalar(x::Integer) = CScalar(BC_SCALAR_INT, false, Int64(x), 0.0) # an InexactError beyond Int64
cscalar(x::Real) = CScalar(BC_SCALAR_FLOAT, false, 0, Float64(x))  # floats, and π, 1//3, ... as Python floats

function binary(op::Int32, t::Tensor, s::Number)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    c = cscalar(s)
    st = ccall(fn(:bc_binary_scalar), Int32, (Int32, Ptr{Cvoid}, CScalar, Ref{Ptr{Cvoid}}), op, t, c, out)
    check(st)
    flush_warnings()
    return Tensor(Own(), out[], nothing)
end

# s op t as PyTorch computes Python's s op t (2 .< t is t .> 2; 2 .- t is torch.sub(2, t)).
function binary(op::Int32, s::Number, t::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    c = cscalar(s)
    st = ccall(fn(:bc_binary_rscalar), Int32, (Int32, CScalar, Ptr{Cvoid}, Ref{Ptr{Cvoid}}), op, c, t, out)
    check(st)
    flush_warnings()
    return Tensor(Own(), out[], nothing)
end

function binary!(op::Int32, target::Tensor, s::Number)
    c = cscalar(s)
    st = ccall(fn(:bc_binary_scalar_inplace), Int32, (Int32, Ptr{Cvoid}, CScalar), op, target, c)
    check(st)
    flush_warnings()
    return target
end

binary(op::Int32, A::AbstractArray, s::Number) = with(a -> with(Array, binary(op, a, s)), Tensor(A))
binary(op::Int32, s::Number, A::AbstractArray) = with(a -> with(Array, binary(op, s, a)), Tensor(A))
binary!(op::Int32, A::AbstractArray, s::Number) = (with(a -> binary!(op, a, s), writable(A)); A)

include("ops.jl") # OPS and UNARY_OPS, from the library's operation tables

for (name, name!, code, f) in OPS
    what = f === nothing ? "The library's `$name` of `a` and `b`" : "`broadcast($f, a, b)`, computed by the library"
    doc = """
        $name(a, b)
        $name!(target, other)
        $name!(out, a, b)

    $what: on two Tensors a new Tensor, on two arrays a new Array; in place into `target`
    (which must have the broadcast shape), or into `out`. Either of `a` and `b` (and `other`) may
    be a number, promoted as PyTorch promotes a Python number (by category only); `maximum`,
    `minimum`, `atan2`, `hypot` and the logical operations refuse one, as PyTorch does.
    """
    @eval begin
        $name(a, b) = binary(Int32($code), a, b)
        $name!(target, other) = binary!(Int32($code), target, other)
        $name!(out, a, b) = binary!(Int32($code), out, a, b)
        @doc $doc $name
    end
end

function unary(op::Int32, t::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ccall(fn(:bc_unary), Int32, (Int32, Ptr{Cvoid}, Ref{Ptr{Cvoid}}), op, t, out))
    return Tensor(Own(), out[], nothing)
end

function unary!(op::Int32, t::Tensor)
    check(ccall(fn(:bc_unary_inplace), Int32, (Int32, Ptr{Cvoid}), op, t))
    return t
end

function unary!(op::Int32, out::Tensor, t::Tensor)
    check(ccall(fn(:bc_unary_out), Int32, (Int32, Ptr{Cvoid}, Ptr{Cvoid}), op, t, out))
    return out
end

for (name, name!, code, f) in UNARY_OPS
    doc = """
        LibBroadcast.$name(t)
        LibBroadcast.$name!(out, t)

    PyTorch's `torch.$name` of a Tensor, computed by the library (a new Tensor, or into `out`,
    which must have `t`'s size and a type the operation allows there)$(name! === nothing ? "" : "; `$name!(t)` in place")$(f === nothing ? "." : ". `$f.(t)` on a Tensor is this function.")
    """
    @eval begin
        $name(t::Tensor) = unary(Int32($code), t)
        @doc $doc $name
    end
    name! === nothing || @eval $name!(t::Tensor) = unary!(Int32($code), t)
    @eval $(name! === nothing ? Symbol(name, :!) : name!)(out::Tensor, t::Tensor) = unary!(Int32($code), out, t)
end

"""
    select(cond, a, b)
    select!(out, cond, a, b)

`ifelse.(cond, a, b)` computed by the library (PyTorch's `torch.where`; `where` is Julia syntax):
`a`'s element where `cond` is true, else `b`'s. The three broadcast together; the element type
promotes `a` and `b` only; `cond` is `Bool` (or `UInt8`, accepted with PyTorch's deprecation
warning). On Tensors a new Tensor, on arrays a new Array, or into `out` (which must have exactly
the broadcast size and the element type). `ifelse.(c, a, b)` on three Tensors is `select`.
"""
function select(cond::Tensor, a::Tensor, b::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_where), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ref{Ptr{Cvoid}}), cond, a, b, out)
    check(st)
    flush_warnings()
    return Tensor(Own(), out[], nothing)
end

function select!(out::Tensor, cond::Tensor, a::Tensor, b::Tensor)
    st = ccall(fn(:bc_where_out), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}), cond, a, b, out)
    check(st)
    flush_warnings()
    return out
end

function select(C::AbstractArray, A::AbstractArray, B::AbstractArray)
    with(Tensor(C)) do c
        with(Tensor(A)) do a
            with(Tensor(B)) do b
                with(r -> Array(r), select(c, a, b))
            end
        end
    end
end

function select!(Out::AbstractArray, C::AbstractArray, A::AbstractArray, B::AbstractArray)
    with(writable(Out)) do out
        with(Tensor(C)) do c
            with(Tensor(A)) do a
                with(b -> select!(out, c, a, b), Tensor(B))
            end
        end
    end
    return Out
end

# ---------------------------------------------------------------------------------------------
# Dot syntax: a broadcast with a Tensor among its operands is computed by the library
# ---------------------------------------------------------------------------------------------

const Broadcasted = Base.Broadcast.Broadcasted

"""
    TensorStyle

The broadcast style of [`Tensor`](@ref): a dotted expression with a Tensor among its operands
(with arrays and numbers) is computed by the library, one call per dotted function, in Julia's
order of dimensions: `t .+ A`, `2 .* t`, `sqrt.(t)`, `t .^ 2`, `ifelse.(c, 0f0, t)`,
`clamp.(t, 0, 1)`, and nested forms such as `abs.(t .- A) .< 1e-3`, whose arrays in inner
calls are computed by the library too. The result is a new Tensor; `dest .= ...` and
`dest .+= ...` write into `dest`, a Tensor or an array whose memory the library can view
(`copyto!`). The functions are those of `OPS` (two operands), `UNARY_OPS` (one), `ifelse`,
`clamp` and `lerp` (three), or their names here (`LibBroadcast.add.(t, A)`); any other function, and an
operand that is not a Tensor, an array of one of the ten element types or a real number, is an
`ArgumentError` (nothing is computed element by element in Julia). Promotion is PyTorch's
(numbers by category, as Python numbers), so an element type may differ from Julia's
broadcast's; sizes follow Julia's rule, and a mismatch is the library's `BroadcastError`.
"""
struct TensorStyle <: Base.Broadcast.BroadcastStyle end

Base.Broadcast.BroadcastStyle(::Type{Tensor}) = TensorStyle()
# A Tensor decides the style against arrays and numbers, and against tuples (then refused with
# an ArgumentError naming the tuple, not Julia's conflict message).
Base.Broadcast.BroadcastStyle(::TensorStyle, ::Base.Broadcast.AbstractArrayStyle) = TensorStyle()
Base.Broadcast.BroadcastStyle(::TensorStyle, ::Base.Broadcast.Style{Tuple}) = TensorStyle()
# A Tensor is an operand as itself: without this, broadcasting would collect it.
Base.Broadcast.broadcastable(t::Tensor) = t
# The library checks the sizes, with PyTorch's messages; Julia's axes are not computed.
Base.Broadcast.instantiate(bc::Broadcasted{TensorStyle}) = bc
Base.copy(bc::Broadcasted{TensorStyle}) = evaluate(bc)
# dest .= bc (and dest .op= x): straight to copyto!, without Julia's check of dest's axes.
Base.Broadcast.materialize!(::TensorStyle, dest, bc::Broadcasted) = copyto!(dest, bc)

# What an operand of a dotted expression is to the library: a Tensor or a number, and whether it
# was made here (a Tensor over an array, or an inner result), to be closed once used.
operand(t::Tensor) = (t, false)
operand(x::Real) = (x, false)
operand(A::AbstractArray) = (Tensor(A), true)
operand(r::Base.RefValue) = r[] isa Real ? (r[], false) :
    throw(ArgumentError("LibBroadcast cannot broadcast a Ref of a $(typeof(r[])) with a Tensor"))
function operand(bc::Broadcasted)
    v = evaluate(bc)
    return (v, v isa Tensor)
end
operand(x) = throw(ArgumentError("LibBroadcast cannot broadcast a $(typeof(x)) with a Tensor: " *
                                 "the operands are Tensors, arrays and real numbers"))

# f(values...) with the operands of `args`, closing the Tensors made for the call.
function with_operands(f, args::Tuple)
    made = Tensor[]
    try
        values = map(args) do a
            v, owned = operand(a)
            owned && push!(made, v)
            v
        end
        return f(values...)
    finally
        foreach(close, made)
    end
end

# t .^ 2 is lowered to literal_pow(^, t, Val(2)), its function and exponent wrapped in Refs.
is_literal_pow(bc::Broadcasted) = bc.f === Base.literal_pow && length(bc.args) == 3
literal_exponent(bc::Broadcasted) = exponent_of(bc.args[3] isa Ref ? bc.args[3][] : bc.args[3])
exponent_of(::Val{p}) where {p} = p

# The value of a dotted expression: a new Tensor, or a number when every operand is one.
function evaluate(bc::Broadcasted)
    if is_literal_pow(bc)
        p = literal_exponent(bc)
        return with_operands(x -> x isa Real ? x^p : pow(x, p), (bc.args[2],))
    end
    return with_operands((values...) -> apply(bc.f, values...), bc.args)
end

# The BC_OP_* or BC_UNARY_* code of a dotted function, or an ArgumentError naming it.
function dotted_code(table, f, what)
    for (name, _, code, g) in table
        (getfield(@__MODULE__, name) === f || g isa Symbol && getfield(Base, g) === f) && return Int32(code)
    end
    throw(ArgumentError("LibBroadcast cannot broadcast $f with a Tensor: it is not one of the library's " *
                        "$what (LibBroadcast.$(table === OPS ? "OPS" : "UNARY_OPS"))"))
end

# A number where the library takes a tensor (where, clamp with a tensor bound): a 0-dimensional
# Tensor, which promotes by category as a number does against the dimensioned operands.
function zero_dim(x::Real)
    v = x isa Elem ? x : x isa Integer ? Int64(x) : Float64(x)
    return Tensor(Base.fill(v))
end

# f(values...) by the library, each value a Tensor or a number, one at least a Tensor.
function apply(f, values...)
    all(v -> v isa Real, values) && return f(values...) # a broadcast of numbers is a number
    n = length(values)
    n == 1 && f === identity && return copy(values[1])
    n == 1 && return unary(dotted_code(UNARY_OPS, f, "unary operations"), values[1])
    n == 2 && return binary(dotted_code(OPS, f, "operations"), values[1], values[2])
    n == 3 && f === ifelse && return as_tensors(select, values...)
    n == 3 && f === clamp && return clamped(values...)
    n == 3 && f === lerp && return lerp_values(values...)
    throw(ArgumentError("LibBroadcast cannot broadcast $f with $n operands over a Tensor"))
end

# f(tensors...) with the numbers among `values` made 0-dimensional Tensors for the call.
function as_tensors(f, values...)
    made = Tensor[]
    try
        ts = map(v -> v isa Tensor ? v : (z = zero_dim(v); push!(made, z); z), values)
        return f(ts...)
    finally
        foreach(close, made)
    end
end

# clamp.(x, lo, hi): PyTorch's clamp, with number bounds (bc_clamp_scalar) or tensor bounds.
function clamped(x, lo, hi)
    if x isa Tensor && lo isa Real && hi isa Real
        out = Ref{Ptr{Cvoid}}(C_NULL)
        st = ccall(fn(:bc_clamp_scalar), Int32, (Ptr{Cvoid}, Ref{CScalar}, Ref{CScalar}, Ref{Ptr{Cvoid}}),
                   x, cscalar(lo), cscalar(hi), out)
        check(st)
        flush_warnings()
        return Tensor(Own(), out[], nothing)
    end
    return as_tensors(x, lo, hi) do tx, tlo, thi
        out = Ref{Ptr{Cvoid}}(C_NULL)
        st = ccall(fn(:bc_clamp), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ref{Ptr{Cvoid}}), tx, tlo, thi, out)
        check(st)
        flush_warnings()
        Tensor(Own(), out[], nothing)
    end
end

# A new Tensor from a call that wrote its handle into `out`, or the call's BroadcastError.
function new_result(st::Int32, out::Ref{Ptr{Cvoid}})
    check(st)
    flush_warnings()
    return Tensor(Own(), out[], nothing)
end

# `x` after a call that wrote into it, or the call's BroadcastError.
function written(st::Int32, x)
    check(st)
    flush_warnings()
    return x
end

"""
    lerp(input, stop, weight)
    lerp!(input, stop, weight)
    lerp!(out, input, stop, weight)

PyTorch's `torch.lerp`, `input + weight * (stop - input)`, computed by the library on Tensors;
the three broadcast together in Julia's order, floating element types only. `weight` is a Tensor
or a number, read in the computation's type as PyTorch reads a Python number. A new Tensor, or in
place into `input` (whose size must be the broadcast size), or into `out` (exactly the broadcast
size, a type the result can be cast to). `lerp.(a, b, w)` with a Tensor among the operands
(arrays and numbers beside it) is this function.
"""
function lerp(input::Tensor, stop::Tensor, weight::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_lerp), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ref{Ptr{Cvoid}}), input, stop, weight, out)
    return new_result(st, out)
end
function lerp(input::Tensor, stop::Tensor, weight::Real)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_lerp_scalar), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, CScalar, Ref{Ptr{Cvoid}}),
               input, stop, cscalar(weight), out)
    return new_result(st, out)
end
lerp!(input::Tensor, stop::Tensor, weight::Tensor) =
    written(ccall(fn(:bc_lerp_inplace), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}), input, stop, weight), input)
lerp!(input::Tensor, stop::Tensor, weight::Real) =
    written(ccall(fn(:bc_lerp_scalar_inplace), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, CScalar), input, stop, cscalar(weight)), input)
lerp!(out::Tensor, input::Tensor, stop::Tensor, weight::Tensor) =
    written(ccall(fn(:bc_lerp_out), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}), input, stop, weight, out), out)
lerp!(out::Tensor, input::Tensor, stop::Tensor, weight::Real) =
    written(ccall(fn(:bc_lerp_scalar_out), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, CScalar, Ptr{Cvoid}),
                  input, stop, cscalar(weight), out), out)

"""
    addcmul(input, t1, t2; value = 1)
    addcmul!(input, t1, t2; value = 1)
    addcmul!(out, input, t1, t2; value = 1)

PyTorch's `torch.addcmul`, `input + value * t1 * t2`, computed by the library on Tensors, the
three broadcast together in Julia's order; `value` a number (read as PyTorch reads a Python
number). A new Tensor, in place into `input`, or into `out`, as [`lerp`](@ref).
"""
function addcmul(input::Tensor, t1::Tensor, t2::Tensor; value::Real = 1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_addcmul), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, CScalar, Ref{Ptr{Cvoid}}),
               input, t1, t2, cscalar(value), out)
    return new_result(st, out)
end
addcmul!(input::Tensor, t1::Tensor, t2::Tensor; value::Real = 1) =
    written(ccall(fn(:bc_addcmul_inplace), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, CScalar),
                  input, t1, t2, cscalar(value)), input)
addcmul!(out::Tensor, input::Tensor, t1::Tensor, t2::Tensor; value::Real = 1) =
    written(ccall(fn(:bc_addcmul_out), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, CScalar, Ptr{Cvoid}),
                  input, t1, t2, cscalar(value), out), out)

"""
    addcdiv(input, t1, t2; value = 1)
    addcdiv!(input, t1, t2; value = 1)
    addcdiv!(out, input, t1, t2; value = 1)

PyTorch's `torch.addcdiv`, `input + value * t1 / t2` (true division; two integer tensors are
refused, as PyTorch refuses them), computed by the library as [`addcmul`](@ref).
"""
function addcdiv(input::Tensor, t1::Tensor, t2::Tensor; value::Real = 1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ccall(fn(:bc_addcdiv), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, CScalar, Ref{Ptr{Cvoid}}),
               input, t1, t2, cscalar(value), out)
    return new_result(st, out)
end
addcdiv!(input::Tensor, t1::Tensor, t2::Tensor; value::Real = 1) =
    written(ccall(fn(:bc_addcdiv_inplace), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, CScalar),
                  input, t1, t2, cscalar(value)), input)
addcdiv!(out::Tensor, input::Tensor, t1::Tensor, t2::Tensor; value::Real = 1) =
    written(ccall(fn(:bc_addcdiv_out), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, CScalar, Ptr{Cvoid}),
                  input, t1, t2, cscalar(value), out), out)

# lerp.(a, b, w): a and b made Tensors for the call when they are numbers; w stays a number.
lerp_values(a, b, w::Real) = as_tensors((ta, tb) -> lerp(ta, tb, w), a, b)
lerp_values(a, b, w) = as_tensors(lerp, a, b, w)

"""
    clamp!(t::Tensor, lo, hi)

PyTorch's `t.clamp_(lo, hi)`, computed by the library in place: the bounds are numbers (read as
PyTorch reads Python numbers) or Tensors (numbers beside a Tensor bound become 0-dimensional
Tensors), broadcast to `t`'s size. `t .= clamp.(t, lo, hi)` is this call; `dest .= clamp.(x, lo,
hi)` with a Tensor `x` writes into `dest` with the library's out form.
"""
function Base.clamp!(t::Tensor, lo, hi)
    if lo isa Real && hi isa Real
        st = ccall(fn(:bc_clamp_scalar_inplace), Int32, (Ptr{Cvoid}, Ref{CScalar}, Ref{CScalar}),
                   t, cscalar(lo), cscalar(hi))
        return written(st, t)
    end
    return as_tensors(lo, hi) do tlo, thi
        written(ccall(fn(:bc_clamp_inplace), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}), t, tlo, thi), t)
    end
end

# dest .= clamp.(x, lo, hi) for a Tensor x: the library's out forms.
function clamp_into!(dest::Tensor, x::Tensor, lo, hi)
    if lo isa Real && hi isa Real
        st = ccall(fn(:bc_clamp_scalar_out), Int32, (Ptr{Cvoid}, Ref{CScalar}, Ref{CScalar}, Ptr{Cvoid}),
                   x, cscalar(lo), cscalar(hi), dest)
        return written(st, dest)
    end
    return as_tensors(lo, hi) do tlo, thi
        written(ccall(fn(:bc_clamp_out), Int32, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}), x, tlo, thi, dest), dest)
    end
end

"""
    copyto!(dest::Tensor, bc::Broadcasted)
    copyto!(dest::AbstractArray, bc::Broadcasted{TensorStyle})

`dest .= bc`, computed by the library. `dest .op= x` (the target the first operand) is the
library's in-place form, with PyTorch's rule: the broadcast size must be `dest`'s own. The last
operation writes into `dest` with its `out` form when its operands are Tensors and arrays (the
result cast to `dest`'s element type as PyTorch casts into `out`); otherwise the value is made
first and copied, broadcast to `dest`'s size. An array `dest` must be one the library can view
(a strided array of one of the ten element types).
"""
Base.copyto!(dest::Tensor, bc::Broadcasted) = write_into!(dest, bc, dest)

function Base.copyto!(dest::AbstractArray, bc::Broadcasted{TensorStyle})
    with(t -> write_into!(t, bc, dest), writable(dest))
    return dest
end

# `target .= bc` into `dest`, the Tensor over `target` (`target` itself when it is a Tensor), so
# that `target .+= x` (where the first operand is `target`) is the in-place form.
function write_into!(dest::Tensor, bc::Broadcasted, target)
    f, args = bc.f, bc.args
    n = length(args)
    is_op(table) = any(e -> e[4] isa Symbol && getfield(Base, e[4]) === f || getfield(@__MODULE__, e[1]) === f, table)
    if n == 1 && f === identity
        with_operands(x -> assign!(dest, x), args)
    elseif n == 2 && args[1] === target && is_op(OPS)
        with_operands(x -> binary!(dotted_code(OPS, f, "operations"), dest, x), (args[2],))
    elseif n == 2 && is_op(OPS)
        with_operands(args) do a, b
            code = dotted_code(OPS, f, "operations")
            a isa Tensor && b isa Tensor ? binary!(code, dest, a, b) : assign_made!(dest, binary(code, a, b))
        end
    elseif n == 1 && is_op(UNARY_OPS)
        code = dotted_code(UNARY_OPS, f, "unary operations")
        if args[1] === target
            unary!(code, dest) # t .= sqrt.(t): in place
        else
            with_operands(x -> x isa Tensor ? unary!(code, dest, x) : assign!(dest, f(x)), args)
        end
    elseif n == 3 && f === clamp && args[1] === target
        with_operands((lo, hi) -> clamp!(dest, lo, hi), (args[2], args[3])) # t .= clamp.(t, lo, hi)
    elseif n == 3 && f === clamp
        with_operands(args) do x, lo, hi
            x isa Tensor ? clamp_into!(dest, x, lo, hi) : assign_made!(dest, clamped(x, lo, hi))
        end
    elseif n == 3 && f === ifelse
        with_operands(args) do c, a, b
            as_tensors((tc, ta, tb) -> select!(dest, tc, ta, tb), c, a, b)
        end
    else
        assign_made!(dest, evaluate(bc))
    end
    return dest
end

# dest .= x for an x made here, closed afterwards (a number is assigned as it is).
assign_made!(dest::Tensor, x) = x isa Tensor ? with(v -> assign!(dest, v), x) : assign!(dest, x)

# dest .= x (a Tensor or a number). The library has no broadcasting copy: x, expanded to dest's
# size, times true is written into dest (bc_binary_out). x * true is x exactly in every element
# type (x & true for Bool), and the out form casts it to dest's type as PyTorch's out= does.
function assign!(dest::Tensor, x)
    as_tensors(x, true) do tx, one
        with(e -> binary!(Int32(BC_OP_MUL), dest, e, one), expand(tx, size(dest)...))
    end
    return dest
end

# ---------------------------------------------------------------------------------------------
# The planner: what a call would do, from element types, sizes and strides alone
# ---------------------------------------------------------------------------------------------

"""
    Geometry(T, size; strides = nothing)
    Geometry(A::AbstractArray)
    Geometry(t::Tensor)

An operand described without memory, for the planner: element type `T`, Julia size and strides
(in elements; `nothing` for a dense column-major array). `Geometry(A)` describes `A` as `Tensor(A)`
would see it.
"""
struct Geometry
    eltype::DataType
    size::Tuple{Vararg{Int}}
    strides::Union{Tuple{Vararg{Int}},Nothing}
end

Geometry(T::Type, sz; strides = nothing) =
    Geometry(T, Tuple(Int.(sz)), strides === nothing ? nothing : Tuple(Int.(strides)))
Geometry(A::AbstractArray) =
    Geometry(eltype(A), size(A); strides = A isa StridedArray && all(>=(0), Base.strides(A)) ? Base.strides(A) : nothing)
Geometry(t::Tensor) = Geometry(eltype(t), size(t); strides = Base.strides(t))

geometry(g::Geometry) = g
geometry(x::Union{AbstractArray,Tensor}) = Geometry(x)

# Mirrors struct bc_geometry.
struct CGeometry
    dtype::Int32
    ndim::Csize_t
    shape::Ptr{Int64}
    strides::Ptr{Int64}
end

const MAX_NDIM = BC_MAX_NDIM

# Mirrors struct bc_plan.
struct CPlan
    dtype::Int32
    compute_dtype::Int32
    flags::UInt32
    loop_kind::Int32
    ndim::Csize_t
    shape::NTuple{MAX_NDIM,Int64}
    strides::NTuple{MAX_NDIM,Int64}
    loop_ndim::Csize_t
    loop_shape::NTuple{MAX_NDIM,Int64}
    threads::Csize_t
    alloc_bytes::Csize_t
end

"""
    Plan

What a call would do, as [`plan`](@ref) reports it, in Julia's order: `eltype` (the result's;
in place or into `out`, before the cast to the target's), `compute_eltype`, the result's `size`,
the written array's `strides` (a new result's layout, else the target's own), the warnings the
call would give (`broadcast_warning`, `fallback_warning`, `where_uint8_warning`),
`checks_divisor` (the call refuses a zero divisor, which only it can see), `loop_kind`
(`:none`, `:contiguous`, `:broadcast`, `:tiled`, `:strided`), `loop_size` (the sizes iterated
once dimensions are merged, innermost first), `threads`, `alloc_bytes` (the element memory
the call would allocate) and `fused` (a fused reduction, [`plan_fused`](@ref): the expression
and the reduction run as one pass, the expression's value never made).
"""
struct Plan
    eltype::DataType
    compute_eltype::DataType
    size::Tuple{Vararg{Int}}
    strides::Tuple{Vararg{Int}}
    broadcast_warning::Bool
    fallback_warning::Bool
    where_uint8_warning::Bool
    checks_divisor::Bool
    loop_kind::Symbol
    loop_size::Tuple{Vararg{Int}}
    threads::Int
    alloc_bytes::Int
    fused::Bool
end

const LOOP_KINDS = (:none, :contiguous, :broadcast, :tiled, :strided)

function Plan(p::CPlan)
    julia_order(t, n) = Tuple(Int.(reverse(t[1:Int(n)])))
    return Plan(ELTYPES[p.dtype+1], ELTYPES[p.compute_dtype+1], julia_order(p.shape, p.ndim),
                julia_order(p.strides, p.ndim), p.flags & BC_PLAN_WARNING_BROADCAST != 0,
                p.flags & BC_PLAN_WARNING_FALLBACK != 0, p.flags & BC_PLAN_WARNING_WHERE_UINT8 != 0,
                p.flags & BC_PLAN_CHECKS_DIVISOR != 0, LOOP_KINDS[p.loop_kind+1],
                julia_order(p.loop_shape, p.loop_ndim), Int(p.threads), Int(p.alloc_bytes),
                p.flags & BC_PLAN_FUSED != 0)
end

# The row-major CGeometry of `g`; its arrays are pushed to `keep`, which must stay rooted while
# the CGeometry is used.
function cgeometry(g::Geometry, keep::Vector{Any})
    g.eltype <: Elem || throw(ArgumentError("LibBroadcast has no element type for $(g.eltype)"))
    g.strides === nothing || length(g.strides) == length(g.size) ||
        throw(ArgumentError("a Geometry with $(length(g.size)) sizes and $(length(g.strides)) strides"))
    shape = Int64[reverse(g.size)...]
    st = g.strides === nothing ? nothing : Int64[reverse(g.strides)...]
    push!(keep, shape, st)
    return CGeometry(dtype_code(g.eltype), length(shape), pointer(shape),
                     st === nothing ? Ptr{Int64}(C_NULL) : pointer(st))
end

# `call(cgeometries..., plan)`, a ccall of a planner form, on the row-major form of `gs`.
function planned(call, gs::Geometry...)
    keep = Any[]
    cs = map(g -> cgeometry(g, keep), gs)
    p = Ref{CPlan}()
    GC.@preserve keep begin
        st = call(cs..., p)
        check(st)
    end
    return Plan(p[])
end

"""
    plan(f, a, b)
    plan!(f, target, other)
    plan!(f, out, a, b)
    plan_select(cond, a, b)
    plan_select!(out, cond, a, b)

What `broadcast(f, a, b)` (`f` one of the operations, as for [`sum_to_size`](@ref)), its
in-place and `out` forms, and [`select`](@ref) would do, from the operands' element types, sizes
and strides alone: a [`Plan`](@ref), or the `BroadcastError` the call would throw. Operands are
[`Geometry`](@ref) values, arrays or Tensors (only their geometry is read); `a` or `b` (or
`other`) may be a number. Only what needs memory is not foreseen: a read-only or partly
overlapping target, and a zero divisor.
"""
plan(f, a, b) = planned(geometry(a), geometry(b)) do ga, gb, p
    ccall(fn(:bc_plan_binary), Int32, (Int32, Ref{CGeometry}, Ref{CGeometry}, Ref{CPlan}), opcode(f), ga, gb, p)
end
plan(f, a, s::Number) = planned(geometry(a)) do ga, p
    ccall(fn(:bc_plan_binary_scalar), Int32, (Int32, Ref{CGeometry}, CScalar, Ref{CPlan}), opcode(f), ga, cscalar(s), p)
end
plan(f, s::Number, b) = planned(geometry(b)) do gb, p
    ccall(fn(:bc_plan_binary_rscalar), Int32, (Int32, CScalar, Ref{CGeometry}, Ref{CPlan}), opcode(f), cscalar(s), gb, p)
end
plan(f, ::Number, ::Number) = throw(ArgumentError("plan: one operand at least must be an array"))
plan!(f, target, other) = planned(geometry(target), geometry(other)) do gt, go, p
    ccall(fn(:bc_plan_binary_inplace), Int32, (Int32, Ref{CGeometry}, Ref{CGeometry}, Ref{CPlan}), opcode(f), gt, go, p)
end
plan!(f, target, s::Number) = planned(geometry(target)) do gt, p
    ccall(fn(:bc_plan_binary_scalar_inplace), Int32, (Int32, Ref{CGeometry}, CScalar, Ref{CPlan}), opcode(f), gt, cscalar(s), p)
end
plan!(f, out, a, b) = planned(geometry(out), geometry(a), geometry(b)) do go, ga, gb, p
    ccall(fn(:bc_plan_binary_out), Int32, (Int32, Ref{CGeometry}, Ref{CGeometry}, Ref{CGeometry}, Ref{CPlan}), opcode(f), ga, gb, go, p)
end
plan_select(cond, a, b) = planned(geometry(cond), geometry(a), geometry(b)) do gc, ga, gb, p
    ccall(fn(:bc_plan_where), Int32, (Ref{CGeometry}, Ref{CGeometry}, Ref{CGeometry}, Ref{CPlan}), gc, ga, gb, p)
end
plan_select!(out, cond, a, b) = planned(geometry(out), geometry(cond), geometry(a), geometry(b)) do go, gc, ga, gb, p
    ccall(fn(:bc_plan_where_out), Int32, (Ref{CGeometry}, Ref{CGeometry}, Ref{CGeometry}, Ref{CGeometry}, Ref{CPlan}), gc, ga, gb, go, p)
end

# ---------------------------------------------------------------------------------------------
# Reductions (docs/semantics.md, section 14), over Julia's dimensions
# ---------------------------------------------------------------------------------------------

# The row-major dimensions of Julia dimensions `dims` (`:` for every one) of an n-dimensional
# tensor: Julia dimension d is row-major dimension n - d.
rowmajor_dims(n, ::Colon) = Int64[]
function rowmajor_dims(n, dims)
    for d in dims
        1 <= d <= n || throw(ArgumentError("dimension $d of a $n-dimensional Tensor"))
    end
    return Int64[n - d for d in dims]
end

# A reduction of `t` over Julia's `dims`: `call(dims, ndims, keepdim, out)` makes the library
# call with the row-major dimensions, or (NULL, 0) for every dimension (`:`; bc_all and bc_any
# read an empty non-NULL list as no dimension). Over some dimensions a Tensor, where each stays
# as size 1 as Julia's reductions keep them; over every dimension the value, as `sum(A)` gives a
# number.
function reduced(call, t::Tensor, dims)
    d = rowmajor_dims(ndims(t), dims)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve d call(dims isa Colon ? Ptr{Int64}(C_NULL) : pointer(d), length(d), !(dims isa Colon), out)
    check(st)
    r = Tensor(Own(), out[], nothing)
    return dims isa Colon ? with(x -> x[], r) : r
end

# `code` (a BC_REDUCE_* code) of `t` over Julia's `dims`.
reduction(code::Int32, t::Tensor, dims) = reduced(t, dims) do d, n, keep, out
    ccall(fn(:bc_reduce), Int32, (Int32, Ptr{Cvoid}, Ptr{Int64}, Csize_t, Bool, Ref{Ptr{Cvoid}}), code, t, d, n, keep, out)
end

"""
    sum(t::Tensor; dims = :)
    prod(t::Tensor; dims = :)
    maximum(t::Tensor; dims = :)
    minimum(t::Tensor; dims = :)
    mean(t::Tensor; dims = :)      # Statistics.mean
    all(t::Tensor; dims = :)
    any(t::Tensor; dims = :)

Reductions computed by the library, over Julia's dimensions `dims` (an integer or a collection),
each of which stays as size 1, giving a Tensor as `sum(A; dims)` gives an array; without `dims`,
over everything, giving the value, as `sum(A)` does. The element types are PyTorch's: `sum` and
`prod` of `Bool` and integers give `Int64`, `mean` of them is an error, `maximum` and `minimum`
(PyTorch's amax and amin: NaN wins, nothing to reduce is an error) keep the type, `all` and
`any` give `Bool` (nonzero is true). Floating sums are pairwise, with the bound of
docs/semantics.md. These are Base's (and Statistics') reductions: the elementwise
`LibBroadcast.maximum(a, b)` is `max.(a, b)`, another function.
"""
Base.sum(t::Tensor; dims = :) = reduction(BC_REDUCE_SUM, t, dims)
Base.prod(t::Tensor; dims = :) = reduction(BC_REDUCE_PROD, t, dims)
Base.maximum(t::Tensor; dims = :) = reduction(BC_REDUCE_AMAX, t, dims)
Base.minimum(t::Tensor; dims = :) = reduction(BC_REDUCE_AMIN, t, dims)
Statistics.mean(t::Tensor; dims = :) = reduction(BC_REDUCE_MEAN, t, dims)
Base.all(t::Tensor; dims = :) = reduced(t, dims) do d, n, keep, out
    ccall(fn(:bc_all), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Bool, Ref{Ptr{Cvoid}}), t, d, n, keep, out)
end
Base.any(t::Tensor; dims = :) = reduced(t, dims) do d, n, keep, out
    ccall(fn(:bc_any), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Bool, Ref{Ptr{Cvoid}}), t, d, n, keep, out)
end

# PyTorch's var (std its square root) of `t` over Julia's `dims`.
var_std(f::Symbol, t::Tensor, dims, corrected::Bool) = reduced(t, dims) do d, n, keep, out
    ccall(fn(f), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Cdouble, Bool, Ref{Ptr{Cvoid}}),
          t, d, n, corrected ? 1.0 : 0.0, keep, out)
end

"""
    var(t::Tensor; dims = :, corrected = true)   # Statistics.var
    std(t::Tensor; dims = :, corrected = true)   # Statistics.std

The variance and standard deviation computed by the library (PyTorch's `var`/`std` with
`correction` 1, or 0 when `corrected` is false), over Julia's `dims`, kept as size 1 as in
`Statistics.var` (without `dims`, the value); floating element types only, computed in Float64
and rounded once. `mean`, the other keyword of `Statistics.var`, is not taken.
"""
Statistics.var(t::Tensor; dims = :, corrected::Bool = true) = var_std(:bc_var, t, dims, corrected)
Statistics.std(t::Tensor; dims = :, corrected::Bool = true) = var_std(:bc_std, t, dims, corrected)

"""
    nansum(t::Tensor; dims = :)
    nanmean(t::Tensor; dims = :)
    logsumexp(t::Tensor; dims = :)

PyTorch's `nansum` (NaN counted as 0; `Bool` and integers give `Int64`), `nanmean` (the mean of
the elements that are not NaN, NaN where there are none; floating types only) and `logsumexp`
(`log(sum(exp.(t)))` without overflow, computed in Float64 and rounded once; `Bool` and integers
give `Float32`), computed by the library over Julia's `dims` as [`sum`](@ref) is: each stays as
size 1, and without `dims` the value.
"""
nansum(t::Tensor; dims = :) = reduced(t, dims) do d, n, keep, out
    ccall(fn(:bc_nansum), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Bool, Ref{Ptr{Cvoid}}), t, d, n, keep, out)
end
"PyTorch's `nanmean` over Julia's `dims`, computed by the library: see [`nansum`](@ref)."
nanmean(t::Tensor; dims = :) = reduced(t, dims) do d, n, keep, out
    ccall(fn(:bc_nanmean), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Bool, Ref{Ptr{Cvoid}}), t, d, n, keep, out)
end
"PyTorch's `logsumexp` over Julia's `dims`, computed by the library: see [`nansum`](@ref)."
logsumexp(t::Tensor; dims = :) = reduced(t, dims) do d, n, keep, out
    ccall(fn(:bc_logsumexp), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Bool, Ref{Ptr{Cvoid}}), t, d, n, keep, out)
end

# PyTorch's argmax or argmin (`f`) of `t`, as Julia's argmax gives it: over everything, the
# library's flat row-major index of the reversed sizes is Julia's column-major linear index, so
# the index is CartesianIndices(size(t)) at it (an Int for a vector, as for arrays); over Julia
# dimension `dims`, the library's indices along it (keepdim) placed into the positions of the
# result, an array of CartesianIndex as `argmax(A; dims)` gives.
function arg_extreme(f::Symbol, t::Tensor, dims)
    n = ndims(t)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    if dims isa Colon
        check(ccall(fn(f), Int32, (Ptr{Cvoid}, Ptr{Int64}, Bool, Ref{Ptr{Cvoid}}), t, Ptr{Int64}(C_NULL), false, out))
        i = Int(with(x -> x[], Tensor(Own(), out[], nothing))) + 1
        return n == 1 ? i : CartesianIndices(size(t))[i]
    end
    dims isa Integer || throw(ArgumentError("$(f === :bc_argmax ? "argmax" : "argmin"): dims is one dimension (PyTorch's dim)"))
    d = Ref{Int64}(rowmajor_dims(n, (dims,))[1])
    check(ccall(fn(f), Int32, (Ptr{Cvoid}, Ref{Int64}, Bool, Ref{Ptr{Cvoid}}), t, d, true, out))
    idx = with(Array, Tensor(Own(), out[], nothing))
    return [CartesianIndex(ntuple(k -> k == dims ? Int(idx[I]) + 1 : I[k], n)) for I in CartesianIndices(idx)]
end

"""
    argmax(t::Tensor; dims = :)
    argmin(t::Tensor; dims = :)

The index of the largest (smallest) element, computed by the library (PyTorch's `argmax` and
`argmin`) and given as Julia's `argmax` gives it: without `dims` a `CartesianIndex` (an `Int` for
a vector), with `dims` (one dimension, as PyTorch takes) an array of `CartesianIndex` of the
size `maximum(t; dims)` has. The first of several equal elements in Julia's column-major order,
the first NaN when there is one, as Julia's; unlike Julia's `isless`, 0.0 and -0.0 are equal.
`Bool` tensors and nothing to choose from are the library's `BroadcastError`.
"""
Base.argmax(t::Tensor; dims = :) = arg_extreme(:bc_argmax, t, dims)
Base.argmin(t::Tensor; dims = :) = arg_extreme(:bc_argmin, t, dims)

"""
    sum_to_size(t::Tensor, sz::Integer...)
    sum_to_size(f, a::Tensor, b::Tensor, sz::Integer...)

`t` summed to size `sz` (Julia's order), undoing a broadcast: the dimensions `t` has beyond `sz`,
and those where `sz` has 1, are summed (`sum(t; dims)` reshaped to `sz`; PyTorch's
`sum_to_size`). When nothing is summed the result is a view of `t`. With `f`, the Julia function
of one of the operations (such as `*`) or the operation's function here (such as
`LibBroadcast.mul`), it is `broadcast(f, a, b)` summed to `sz` without making `broadcast(f, a, b)`.
"""
function sum_to_size(t::Tensor, sz::Integer...)
    s = Int64[reverse(sz)...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve s ccall(fn(:bc_tensor_sum_to_size), Int32, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Ref{Ptr{Cvoid}}),
                              t, pointer(s), length(s), out)
    return view_of(t, out, st) # a view of t when nothing is summed
end

function sum_to_size(f, a::Tensor, b::Tensor, sz::Integer...)
    s = Int64[reverse(sz)...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve s ccall(fn(:bc_binary_sum_to), Int32, (Int32, Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Int64}, Csize_t, Ref{Ptr{Cvoid}}),
                              opcode(f), a, b, pointer(s), length(s), out)
    check(st)
    return Tensor(Own(), out[], nothing)
end

# What can describe an operand to the planner.
const Described = Union{Geometry,AbstractArray,Tensor}

# The BC_REDUCE_* code of one of the reductions.
function reduction_code(f)
    # Base's reductions: maximum and minimum here are the module's elementwise operations.
    for (g, code) in ((Base.sum, BC_REDUCE_SUM), (Statistics.mean, BC_REDUCE_MEAN), (Base.prod, BC_REDUCE_PROD),
                      (Base.maximum, BC_REDUCE_AMAX), (Base.minimum, BC_REDUCE_AMIN))
        g === f && return code
    end
    throw(ArgumentError("$f is not one of sum, mean, prod, maximum, minimum"))
end

"""
    plan_reduce(f, t; dims = :)
    plan_sum_to_size(t, sz::Integer...)
    plan_sum_to_size(f, a, b, sz::Integer...)

What `f(t; dims)` (`f` one of `sum`, `prod`, `maximum`, `minimum`, `mean`) and
[`sum_to_size`](@ref) would do, from the operands' element types, sizes and strides alone, as
[`plan`](@ref) reports it: for a reduction `compute_eltype` is the type it accumulates in and
`loop_size` is (elements each output reduces, outputs); when `sum_to_size` sums nothing, the call
gives a view (`loop_kind` `:none`, no bytes); when the fused form sums nothing, the plan is
`plan(f, a, b)`'s.
"""
function plan_reduce(f, t::Described; dims = :)
    g = geometry(t)
    d = rowmajor_dims(length(g.size), dims)
    code = reduction_code(f)
    return planned(g) do gt, p
        ccall(fn(:bc_plan_reduce), Int32, (Int32, Ref{CGeometry}, Ptr{Int64}, Csize_t, Bool, Ref{CPlan}),
              code, gt, d, length(d), !(dims isa Colon), p)
    end
end
function plan_sum_to_size(t::Described, sz::Integer...)
    s = Int64[reverse(sz)...]
    return planned(geometry(t)) do gt, p
        ccall(fn(:bc_plan_sum_to_size), Int32, (Ref{CGeometry}, Ptr{Int64}, Csize_t, Ref{CPlan}),
              gt, s, length(s), p)
    end
end
function plan_sum_to_size(f, a::Described, b::Described, sz::Integer...)
    s = Int64[reverse(sz)...]
    return planned(geometry(a), geometry(b)) do ga, gb, p
        ccall(fn(:bc_plan_binary_sum_to), Int32, (Int32, Ref{CGeometry}, Ref{CGeometry}, Ptr{Int64}, Csize_t, Ref{CPlan}),
              opcode(f), ga, gb, s, length(s), p)
    end
end

# The BC_OP_* code of f: the Julia function of an entry of OPS, or the entry's function here.
function opcode(f)
    for (name, _, code, g) in OPS
        (getfield(@__MODULE__, name) === f || g isa Symbol && getfield(Base, g) === f) && return Int32(code)
    end
    throw(ArgumentError("$f is not one of the operations of LibBroadcast.OPS"))
end

# ---------------------------------------------------------------------------------------------
# Settings and warnings
# ---------------------------------------------------------------------------------------------

"Turns the broadcast warning on or off (off by default)."
set_broadcast_warning(on::Bool) = (ccall(fn(:bc_set_broadcast_warning), Int32, (Bool,), on); nothing)
"Whether the broadcast warning is on."
broadcast_warning() = ccall(fn(:bc_get_broadcast_warning), Bool, ())
"Turns the legacy 1-D pointwise fallback on or off (off by default)."
set_legacy_fallback(on::Bool) = (ccall(fn(:bc_set_legacy_fallback), Int32, (Bool,), on); nothing)
"Whether the legacy 1-D fallback is on."
legacy_fallback() = ccall(fn(:bc_get_legacy_fallback), Bool, ())
"Sets the number of threads large operations use (0: all cores)."
set_num_threads(n::Integer) = (ccall(fn(:bc_set_num_threads), Int32, (Csize_t,), n); nothing)
"The number of threads large operations use."
num_threads() = Int(ccall(fn(:bc_get_num_threads), Csize_t, ()))
"Sets the number of result elements below which an operation stays on the calling thread (0: the default)."
set_parallel_threshold(n::Integer) = (ccall(fn(:bc_set_parallel_threshold), Int32, (Csize_t,), n); nothing)

const WARNING_HANDLER = Ref{Any}(nothing)

"""
    set_warning_handler(f)

Calls `f(message)` for each warning of the library, after the operation that warned has
returned, on its task. `nothing` restores the default, `@warn message`.
"""
set_warning_handler(f) = (WARNING_HANDLER[] = f; nothing)

# Called by the library, inside the ccall of the operation that warns: it only queues the text
# (no I/O, no yield, nothing thrown into C); flush_warnings hands it on after the call returns.
function warning_callback(::Ptr{Cvoid}, message::Cstring)
    try
        q = get!(() -> String[], task_local_storage(), :libbroadcast_warnings)::Vector{String}
        push!(q, unsafe_string(message))
    catch
    end
    return nothing
end

function flush_warnings()
    q = get(task_local_storage(), :libbroadcast_warnings, nothing)
    (q === nothing || isempty(q)) && return nothing
    msgs = copy(q)
    empty!(q)
    h = WARNING_HANDLER[]
    for m in msgs
        h === nothing ? (@warn m) : h(m)
    end
    return nothing
end

include("construct.jl") # new tensors, names of types and statuses, broadcasting of sizes
include("dlpack.jl")    # DLPack exchange
include("fused.jl")     # fused expressions (bc_expr_*) and their plans

end # module
