# Fused expressions: a dotted expression computed by the library in one pass over memory
# (bc_expr_eval), written into a destination (bc_expr_eval_out) or reduced without making its
# value (bc_expr_reduce), and the plans of the three. Included by LibBroadcast.jl.

# Mirrors struct bc_expr_step.
struct CExprStep
    kind::Int32
    arg::Int32
    int_value::Int64
    float_value::Float64
end

# A program: the postfix steps, and the operands its INPUT steps number from 0 (Tensors, arrays
# or, for the plans, Geometry values), each distinct operand (===) once.
struct Program
    steps::Vector{CExprStep}
    operands::Vector{Any}
end

function Program(bc::Broadcasted)
    p = Program(CExprStep[], Any[])
    push_node!(p, bc)
    return p
end

# A number is a constant: a 0-dimensional tensor of the number's own element type (an Int is
# Int64, 2.5 is Float64, 2.5f0 Float32); other integers are Int64, other reals Float64.
function constant_step(x::Real)
    T = x isa Elem ? typeof(x) : x isa Integer ? Int64 : Float64
    T <: Integer && return CExprStep(BC_EXPR_CONST, dtype_code(T), Int64(x), 0.0) # Bool too
    return CExprStep(BC_EXPR_CONST, dtype_code(T), 0, Float64(x))
end
constant_step(x::BFloat16Bits) = CExprStep(BC_EXPR_CONST, dtype_code(BFloat16Bits), 0, Float64(Float32(x)))

push_node!(p::Program, x::Union{Real,BFloat16Bits}) = push!(p.steps, constant_step(x))
push_node!(p::Program, r::Base.RefValue) = r[] isa Real ? push_node!(p, r[]) :
    throw(ArgumentError("a fused expression cannot take a Ref of a $(typeof(r[]))"))
function push_node!(p::Program, x::Union{Tensor,AbstractArray,Geometry})
    k = findfirst(y -> y === x, p.operands)
    if k === nothing
        push!(p.operands, x)
        k = length(p.operands)
    end
    push!(p.steps, CExprStep(BC_EXPR_INPUT, k - 1, 0, 0.0))
end
push_node!(p::Program, x) = throw(ArgumentError("a fused expression cannot take a $(typeof(x)): " *
                                                "its operands are Tensors, arrays and real numbers"))

# A dotted call: its operands' steps, then its own (one operand: a unary operation; two: an
# operation of OPS; three: ifelse, clamp, lerp, addcmul or addcdiv, value 1 for the last two).
function push_node!(p::Program, bc::Broadcasted)
    f, args = bc.f, bc.args
    n = length(args)
    if is_literal_pow(bc) # x .^ 2 as Julia lowers it
        push_node!(p, args[2])
        push_node!(p, literal_exponent(bc))
        return push!(p.steps, CExprStep(BC_EXPR_OP, BC_OP_POW, 0, 0.0))
    end
    n == 1 && f === identity && return push_node!(p, args[1])
    for a in args
        push_node!(p, a)
    end
    if n == 1
        push!(p.steps, CExprStep(BC_EXPR_UNARY, dotted_code(UNARY_OPS, f, "unary operations"), 0, 0.0))
    elseif n == 2
        push!(p.steps, CExprStep(BC_EXPR_OP, dotted_code(OPS, f, "operations"), 0, 0.0))
    elseif n == 3 && f === ifelse
        push!(p.steps, CExprStep(BC_EXPR_WHERE, 0, 0, 0.0))
    elseif n == 3 && (f === clamp || f === lerp || f === addcmul || f === addcdiv)
        code = f === clamp ? BC_TERNARY_CLAMP : f === lerp ? BC_TERNARY_LERP :
               f === addcmul ? BC_TERNARY_ADDCMUL : BC_TERNARY_ADDCDIV
        push!(p.steps, CExprStep(BC_EXPR_TERNARY, code, 1, 0.0))
    else
        throw(ArgumentError("a fused expression cannot compute $f of $n operands"))
    end
    return p
end

# f(steps, handles) with the program's operands as Tensors: an array gets a Tensor over it for
# the call; `given` is (array, its Tensor) for a destination that is also an operand.
function with_program_tensors(f, p::Program, given = nothing)
    made = Tensor[]
    try
        ts = Tensor[]
        for x in p.operands
            if given !== nothing && x === given[1]
                push!(ts, given[2])
            elseif x isa Tensor
                push!(ts, x)
            elseif x isa AbstractArray
                t = Tensor(x)
                push!(made, t)
                push!(ts, t)
            else
                throw(ArgumentError("a Geometry describes an operand to the plans only: evaluate with Tensors or arrays"))
            end
        end
        hs = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, t) for t in ts]
        return GC.@preserve ts f(p.steps, hs)
    finally
        foreach(close, made)
    end
end

const ExprSteps = Ptr{CExprStep}
const Handles = Ptr{Ptr{Cvoid}}

"""
    LibBroadcast.@fused expr
    LibBroadcast.@fused dest .= expr
    LibBroadcast.@fused f(expr; dims = :)      # f one of sum, prod, maximum, minimum, mean

    fused(bc::Broadcast.Broadcasted)
    fused!(dest, bc::Broadcast.Broadcasted)
    fused(f, bc::Broadcast.Broadcasted; dims = :)

A dotted expression computed by the library in one pass over memory (`bc_expr_eval`), without
making its intermediate values: `@fused a .* b .+ sqrt.(c)` is `a .* b .+ sqrt.(c)` with the
same values and element types as the library's calls one by one, only faster on large operands.
`dest .= expr` writes into `dest` (a Tensor, or an array the library can view; `dest` may
appear in `expr`), and a reduction of the expression (`@fused sum(abs.(a .- b); dims = 2)`,
over Julia's dimensions as [`sum`](@ref)) never makes the expression's value at all. The
operands are Tensors, arrays of the ten element types and real numbers; the functions those of
dot syntax on Tensors (see [`TensorStyle`](@ref)): `OPS` (`a .+ b`, `max.(a, b)`, `a .^ 2`),
`UNARY_OPS` (`sqrt.(a)`, `.-a`), `ifelse`, `clamp`, `lerp`, and `addcmul`/`addcdiv` with value 1.

One difference from the calls one by one: a number is a constant, a 0-dimensional tensor of
the number's own Julia type (PyTorch's `torch.tensor(x)`), which promotes as such, so an `Int32`
array `.+ 2.5` is `Float64` here (as in Julia) and `Float32` call by call (as PyTorch does
with a Python number); write `2.5f0` for `Float32`. The functions take what the macro builds
without computing it: a `Broadcast.Broadcasted` tree (`Broadcast.Broadcasted(+, (a, b))`).
Programs have at most `BC_EXPR_MAX_STEPS` steps.
"""
macro fused(ex)
    if Meta.isexpr(ex, :(.=), 2)
        return Expr(:call, fused!, esc(ex.args[1]), lazy_broadcast(ex.args[2]))
    end
    if Meta.isexpr(ex, :call) && ex.args[1] in (:sum, :prod, :maximum, :minimum, :mean)
        args, kws = Any[], Any[]
        for a in ex.args[2:end]
            if Meta.isexpr(a, :parameters)
                append!(kws, a.args)
            elseif Meta.isexpr(a, :kw)
                push!(kws, a)
            else
                push!(args, a)
            end
        end
        length(args) == 1 || throw(ArgumentError("@fused $(ex.args[1])(expr; dims): one expression to reduce"))
        kw = map(kws) do k
            k === :dims && return Expr(:kw, :dims, esc(:dims)) # f(expr; dims)
            Meta.isexpr(k, :kw, 2) && k.args[1] === :dims ||
                throw(ArgumentError("@fused $(ex.args[1])(expr; dims): dims is the only keyword"))
            return Expr(:kw, :dims, esc(k.args[2]))
        end
        return Expr(:call, fused, Expr(:parameters, kw...), esc(ex.args[1]), lazy_broadcast(args[1]))
    end
    return Expr(:call, fused, lazy_broadcast(ex))
end

# The dotted calls of `ex` as nested Broadcasted objects (made, not computed); anything else is a
# leaf, evaluated in the caller's scope.
function lazy_broadcast(ex)
    if Meta.isexpr(ex, :call) && !isempty(ex.args)
        op = undotted(ex.args[1])
        op === nothing || return Expr(:call, Broadcasted, esc(op), Expr(:tuple, map(lazy_broadcast, ex.args[2:end])...))
    elseif Meta.isexpr(ex, :., 2) && Meta.isexpr(ex.args[2], :tuple) # f.(args...)
        return Expr(:call, Broadcasted, esc(ex.args[1]), Expr(:tuple, map(lazy_broadcast, ex.args[2].args)...))
    end
    return esc(ex)
end

# The operator of a dotted operator (:.+, or Expr(:., :+) as a newer parser may give it), or
# nothing for any other callee.
function undotted(f)
    if f isa Symbol
        s = string(f)
        length(s) > 1 && s[1] == '.' && Base.isoperator(Symbol(s[2:end])) && return Symbol(s[2:end])
    elseif Meta.isexpr(f, :., 1) && f.args[1] isa Symbol
        return f.args[1]
    end
    return nothing
end

"A fused expression's value in a new Tensor: see [`@fused`](@ref)."
function fused(bc::Broadcasted)
    return with_program_tensors(Program(bc)) do steps, hs
        out = Ref{Ptr{Cvoid}}(C_NULL)
        st = ccall(fn(:bc_expr_eval), Int32, (ExprSteps, Csize_t, Handles, Csize_t, Ref{Ptr{Cvoid}}),
                   steps, length(steps), hs, length(hs), out)
        new_result(st, out)
    end
end

"A fused expression's value written into `dest`: see [`@fused`](@ref)."
function fused!(dest::Tensor, bc::Broadcasted)
    return fused_into!(dest, Program(bc), nothing)
end
function fused!(dest::AbstractArray, bc::Broadcasted)
    p = Program(bc)
    with(t -> fused_into!(t, p, (dest, t)), writable(dest))
    return dest
end

function fused_into!(dest::Tensor, p::Program, given)
    return with_program_tensors(p, given) do steps, hs
        st = ccall(fn(:bc_expr_eval_out), Int32, (ExprSteps, Csize_t, Handles, Csize_t, Ptr{Cvoid}),
                   steps, length(steps), hs, length(hs), dest)
        written(st, dest)
    end
end

# Julia dimension k of the value is row-major dimension n - k, which is -k counted from the end:
# the value's number of dimensions n is not known before the call.
function fused_dims(dims)
    dims isa Colon && return Int64[]
    for k in dims
        k >= 1 || throw(ArgumentError("dimension $k of a fused expression's value"))
    end
    return Int64[-k for k in dims]
end

"A reduction of a fused expression's value, without making the value: see [`@fused`](@ref)."
function fused(f, bc::Broadcasted; dims = :)
    code = reduction_code(f)
    d = fused_dims(dims)
    return with_program_tensors(Program(bc)) do steps, hs
        out = Ref{Ptr{Cvoid}}(C_NULL)
        st = GC.@preserve d ccall(fn(:bc_expr_reduce), Int32,
                                  (ExprSteps, Csize_t, Handles, Csize_t, Int32, Ptr{Int64}, Csize_t, Bool, Ref{Ptr{Cvoid}}),
                                  steps, length(steps), hs, length(hs), code,
                                  dims isa Colon ? Ptr{Int64}(C_NULL) : pointer(d), length(d), !(dims isa Colon), out)
        r = new_result(st, out)
        dims isa Colon ? with(x -> x[], r) : r
    end
end

# `call(steps, geometries, plan)` on the program's operands described by their geometry.
function planned_program(call, p::Program)
    keep = Any[]
    gs = CGeometry[cgeometry(geometry(x), keep) for x in p.operands]
    r = Ref{CPlan}()
    GC.@preserve keep gs begin
        st = call(p.steps, gs, r)
        check(st)
    end
    return Plan(r[])
end

"""
    plan_fused(bc::Broadcast.Broadcasted)
    plan_fused!(dest, bc::Broadcast.Broadcasted)
    plan_fused(f, bc::Broadcast.Broadcasted; dims = :)

What [`fused`](@ref), [`fused!`](@ref) and the fused reduction would do, from the operands'
element types, sizes and strides alone (the operands and `dest` may be [`Geometry`](@ref)
values), as [`plan`](@ref) reports it; `fused` says whether the call runs as one pass.
`Broadcast.Broadcasted(f, args)` builds the expression without computing it.
"""
plan_fused(bc::Broadcasted) = planned_program(Program(bc)) do steps, gs, r
    ccall(fn(:bc_plan_expr), Int32, (ExprSteps, Csize_t, Ptr{CGeometry}, Csize_t, Ref{CPlan}),
          steps, length(steps), gs, length(gs), r)
end
function plan_fused!(dest, bc::Broadcasted)
    keep = Any[]
    gd = Ref(cgeometry(geometry(dest), keep))
    call(steps, gs, r) = ccall(fn(:bc_plan_expr_out), Int32,
                               (ExprSteps, Csize_t, Ptr{CGeometry}, Csize_t, Ref{CGeometry}, Ref{CPlan}),
                               steps, length(steps), gs, length(gs), gd, r)
    return GC.@preserve keep planned_program(call, Program(bc))
end
function plan_fused(f, bc::Broadcasted; dims = :)
    code = reduction_code(f)
    d = fused_dims(dims)
    return planned_program(Program(bc)) do steps, gs, r
        ccall(fn(:bc_plan_expr_reduce), Int32,
              (ExprSteps, Csize_t, Ptr{CGeometry}, Csize_t, Int32, Ptr{Int64}, Csize_t, Bool, Ref{CPlan}),
              steps, length(steps), gs, length(gs), code, d, length(d), !(dims isa Colon), r)
    end
end
