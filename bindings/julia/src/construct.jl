# New tensors in the library's memory, the library's names of element types and statuses, and
# its broadcasting of sizes alone. Included by LibBroadcast.jl.

# The reversed (row-major) form of Julia sizes given as integers or one tuple.
rowmajor_sizes(dims::Tuple{Vararg{Integer}}) = Int64[reverse(dims)...]

# A new tensor from one of bc_tensor_empty, _zeros and _ones (dtype, shape, ndim, out).
function made(name::Symbol, ::Type{T}, dims) where {T<:Elem}
    s = rowmajor_sizes(dims)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve s ccall(fn(name), Int32, (Int32, Ptr{Int64}, Csize_t, Ref{Ptr{Cvoid}}),
                              dtype_code(T), pointer(s), length(s), out)
    check(st)
    return Tensor(Own(), out[], nothing)
end

"""
    Tensor(undef, T, dims...)
    LibBroadcast.zeros(T = Float64, dims...)
    LibBroadcast.ones(T = Float64, dims...)
    LibBroadcast.fill(x, dims...)

New tensors in the library's memory, of element type `T` (one of the ten; `fill` takes `x`'s
type) and Julia size `dims` (integers or one tuple), as `Array{T}(undef, dims)`, `zeros`,
`ones` and `fill` make arrays. `undef` leaves the elements unspecified (the library zeroes
them, but do not rely on it). These are not Base's `zeros`, `ones` and `fill`, which make
arrays: write `LibBroadcast.zeros`.
"""
Tensor(::UndefInitializer, ::Type{T}, dims::Integer...) where {T<:Elem} = made(:bc_tensor_empty, T, dims)
Tensor(::UndefInitializer, ::Type{T}, dims::Tuple{Vararg{Integer}}) where {T<:Elem} = made(:bc_tensor_empty, T, dims)

"A new Tensor of zeros in the library's memory: see [`Tensor(undef, T, dims...)`](@ref)."
zeros(::Type{T}, dims::Integer...) where {T<:Elem} = made(:bc_tensor_zeros, T, dims)
zeros(::Type{T}, dims::Tuple{Vararg{Integer}}) where {T<:Elem} = made(:bc_tensor_zeros, T, dims)
zeros(dims::Integer...) = zeros(Float64, dims...)
zeros(dims::Tuple{Vararg{Integer}}) = zeros(Float64, dims...)

"A new Tensor of ones in the library's memory: see [`Tensor(undef, T, dims...)`](@ref)."
ones(::Type{T}, dims::Integer...) where {T<:Elem} = made(:bc_tensor_ones, T, dims)
ones(::Type{T}, dims::Tuple{Vararg{Integer}}) where {T<:Elem} = made(:bc_tensor_ones, T, dims)
ones(dims::Integer...) = ones(Float64, dims...)
ones(dims::Tuple{Vararg{Integer}}) = ones(Float64, dims...)

"A new Tensor with every element `x`, in the library's memory: see [`Tensor(undef, T, dims...)`](@ref)."
function fill(x::Elem, dims::Integer...)
    T = typeof(x)
    # bc_tensor_full takes the value as a double: exact for every Bool and floating value, and
    # for integers up to 2^53. A larger integer is written exactly by the `.=` path instead.
    if x isa Integer && !(x isa Bool) && Float64(x) != x
        t = Tensor(undef, T, dims...)
        return assign!(t, x)
    end
    v = x isa BFloat16Bits ? Float64(Float32(x)) : Float64(x)
    s = rowmajor_sizes(dims)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve s ccall(fn(:bc_tensor_full), Int32, (Int32, Ptr{Int64}, Csize_t, Cdouble, Ref{Ptr{Cvoid}}),
                              dtype_code(T), pointer(s), length(s), v, out)
    check(st)
    return Tensor(Own(), out[], nothing)
end
fill(x::Elem, dims::Tuple{Vararg{Integer}}) = fill(x, dims...)

"""
    dtype_name(T)
    dtype_size(T)

The library's (PyTorch's) name of element type `T` (`"float32"` for `Float32`, `"bfloat16"`
for `BFloat16Bits`) and its size in bytes, which is `sizeof(T)`.
"""
dtype_name(::Type{T}) where {T<:Elem} = unsafe_string(ccall(fn(:bc_dtype_name), Cstring, (Int32,), dtype_code(T)))
"The size in bytes of element type `T`, as the library has it: see [`dtype_name`](@ref)."
dtype_size(::Type{T}) where {T<:Elem} = Int(ccall(fn(:bc_dtype_size), Csize_t, (Int32,), dtype_code(T)))

"""
    status_string(status::Integer)

The library's generic text of a status code (`BC_OK`, `BC_ERR_*`; `e.status` of a
[`BroadcastError`](@ref)), such as `"shapes do not broadcast"`; "unknown status" for another
number. A `BroadcastError`'s own message says more about its failure.
"""
status_string(status::Integer) = unsafe_string(ccall(fn(:bc_status_str), Cstring, (Int32,), status))

"""
    broadcast_shapes(sizes::Tuple...)
    isbroadcastable(a::Tuple, b::Tuple)

The size that Julia sizes broadcast to, computed by the library (PyTorch's `broadcast_shapes`
of the reversed sizes, which is Julia's rule: `broadcast_shapes((3, 1), (3,))` is `(3, 1)`),
or the library's `BroadcastError`; and whether two sizes broadcast, `true` or `false`.
"""
function broadcast_shapes(sizes::Tuple{Vararg{Integer}}...)
    rs = [rowmajor_sizes(s) for s in sizes]
    cap = Base.maximum(length, rs; init = 0) # (maximum here is the elementwise operation)
    out = Vector{Int64}(undef, cap)
    nd = Ref{Csize_t}(0)
    if length(rs) == 2
        a, b = rs
        st = GC.@preserve a b out ccall(fn(:bc_shape_broadcast), Int32,
                                        (Ptr{Int64}, Csize_t, Ptr{Int64}, Csize_t, Ptr{Int64}, Csize_t, Ref{Csize_t}),
                                        pointer(a), length(a), pointer(b), length(b), pointer(out), cap, nd)
    else
        ptrs = Ptr{Int64}[pointer(r) for r in rs]
        lens = Csize_t[length(r) for r in rs]
        st = GC.@preserve rs ptrs lens out ccall(fn(:bc_shape_broadcast_n), Int32,
                                                 (Ptr{Ptr{Int64}}, Ptr{Csize_t}, Csize_t, Ptr{Int64}, Csize_t, Ref{Csize_t}),
                                                 pointer(ptrs), pointer(lens), length(rs), pointer(out), cap, nd)
    end
    check(st)
    return Tuple(Int.(reverse(out[1:nd[]])))
end

"Whether two Julia sizes broadcast together, as the library decides: see [`broadcast_shapes`](@ref)."
function isbroadcastable(a::Tuple{Vararg{Integer}}, b::Tuple{Vararg{Integer}})
    ra, rb = rowmajor_sizes(a), rowmajor_sizes(b)
    r = Ref{Bool}(false)
    st = GC.@preserve ra rb ccall(fn(:bc_shape_is_broadcastable), Int32,
                                  (Ptr{Int64}, Csize_t, Ptr{Int64}, Csize_t, Ref{Bool}),
                                  pointer(ra), length(ra), pointer(rb), length(rb), r)
    check(st)
    return r[]
end
