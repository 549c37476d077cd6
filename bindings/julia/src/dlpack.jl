# DLPack exchange with other libraries (NumPy, PyTorch, JAX, DLPack.jl, ...). Included by
# LibBroadcast.jl.

"""
    to_dlpack(t::Tensor; versioned = true) -> Ptr{Cvoid}

Shares `t`'s memory through DLPack without copying: a pointer to a `DLManagedTensorVersioned`
(DLPack 1.x; `versioned = false`: the older `DLManagedTensor`) that the caller now owns and
must hand to a consumer, which calls its deleter once (or release it with
[`free_dlpack`](@ref)). The memory stays alive until then, even after `close(t)`. The DLPack
tensor is row-major: its shape and strides are `t`'s Julia size and strides reversed, as
DLPack.jl's `share` gives them. A tensor that must not be written (memory shared read-only, a
broadcast view) is marked read-only (versioned) or refused (unversioned, which has no such
mark: the library's `BroadcastError`). The export holds the library's memory, not Julia's: when
`t` views a Julia array (`Tensor(A)`), keep `A` referenced until the consumer is done with it,
or export `copy(t)`.
"""
function to_dlpack(t::Tensor; versioned::Bool = true)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = versioned ? ccall(fn(:bc_tensor_to_dlpack_versioned), Int32, (Ptr{Cvoid}, Ref{Ptr{Cvoid}}), t, out) :
                     ccall(fn(:bc_tensor_to_dlpack), Int32, (Ptr{Cvoid}, Ref{Ptr{Cvoid}}), t, out)
    check(st)
    return out[]
end

"""
    from_dlpack(m::Ptr{Cvoid}; versioned = true) -> Tensor

A Tensor over the memory a DLPack producer shares, without copying: `m` points to a
`DLManagedTensorVersioned` (DLPack 1.x; `versioned = false`: a `DLManagedTensor`) of CPU memory
and one of the ten element types. On success the library owns `m` and calls its deleter when
the Tensor and its last view are freed; on failure (the library's `BroadcastError`) `m` is
still the caller's. A row-major producer's shape `(d1, ..., dn)` is the Julia size
`(dn, ..., d1)` (the same bytes, as DLPack.jl's `from_dlpack` reverses them); a read-only
versioned tensor refuses writes.
"""
function from_dlpack(m::Ptr{Cvoid}; versioned::Bool = true)
    m == C_NULL && throw(ArgumentError("from_dlpack: a NULL DLPack pointer"))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = versioned ? ccall(fn(:bc_tensor_from_dlpack_versioned), Int32, (Ptr{Cvoid}, Ref{Ptr{Cvoid}}), m, out) :
                     ccall(fn(:bc_tensor_from_dlpack), Int32, (Ptr{Cvoid}, Ref{Ptr{Cvoid}}), m, out)
    check(st)
    return Tensor(Own(), out[], nothing)
end

# Where the deleter sits: after `version` and `manager_ctx` in DLManagedTensorVersioned, after
# the 48-byte DLTensor and `manager_ctx` in DLManagedTensor.
const DLPACK_DELETER_OFFSET = (versioned = 16, unversioned = 56)

"""
    free_dlpack(m::Ptr{Cvoid}; versioned = true)

Calls the deleter of a DLPack struct from [`to_dlpack`](@ref) that no consumer took, as DLPack
asks of its owner (once; nothing for a NULL deleter).
"""
function free_dlpack(m::Ptr{Cvoid}; versioned::Bool = true)
    m == C_NULL && return nothing
    at = versioned ? DLPACK_DELETER_OFFSET.versioned : DLPACK_DELETER_OFFSET.unversioned
    deleter = unsafe_load(Ptr{Ptr{Cvoid}}(m + at))
    deleter == C_NULL || ccall(deleter, Cvoid, (Ptr{Cvoid},), m)
    return nothing
end
