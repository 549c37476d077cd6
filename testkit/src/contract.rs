//! Writes `contract_exports.h` for `c_tests/contract.c` from the header's prototypes: for every
//! export that takes a pointer, a C function that calls it with an argument built from each
//! parameter's type and name, and a table saying what each parameter is (which decides the cases
//! the harness runs). The boundary checks come before any semantics, so a small table by type is
//! enough; the few places where the header documents something else are listed below, each with
//! its reason. A parameter no rule covers, or a listed exception that no longer matches the
//! header, is an error: a new export is covered by the type rules or the test fails.
use super::header::{Param, Prototype};
use std::fmt::Write as _;

/// Pointer parameters the header documents as optional. NULL there is valid: the call must give
/// what it gives with the argument present. A name ending in `*` matches every export it starts.
pub const OPTIONAL: &[(&str, &str, &str)] = &[
    ("bc_tensor_free", "t", "\"NULL is a no-op\""),
    (
        "bc_tensor_data",
        "nbytes",
        "\"`nbytes` and `writable` may be NULL when not wanted\"",
    ),
    (
        "bc_tensor_data",
        "writable",
        "\"`nbytes` and `writable` may be NULL when not wanted\"",
    ),
    (
        "bc_tensor_wrap",
        "strides",
        "\"`strides` NULL means row-major\"",
    ),
    (
        "bc_tensor_wrap",
        "release",
        "\"`release(user_data)`, when `release` is not NULL, runs\"",
    ),
    (
        "bc_tensor_wrap",
        "user_data",
        "only handed back to `release`, never read",
    ),
    (
        "bc_set_warning_handler",
        "handler",
        "\"`handler` NULL restores the default\"",
    ),
    (
        "bc_set_warning_handler",
        "user_data",
        "only handed back to the handler, never read",
    ),
    (
        "bc_argmax",
        "dim",
        "\"`dim` NULL: the index in the row-major flattened `t`\"",
    ),
    ("bc_argmin", "dim", "as bc_argmax"),
    (
        "bc_tensor_reshape",
        "copied",
        "\"`copied` NULL or valid for one write\"",
    ),
    (
        "bc_tensor_flatten",
        "copied",
        "\"`copied` NULL or valid for one write\"",
    ),
    (
        "bc_clamp*",
        "min",
        "\"either bound NULL for none\" (the other one is given)",
    ),
    (
        "bc_clamp*",
        "max",
        "\"either bound NULL for none\" (the other one is given)",
    ),
    (
        "bc_last_error_message",
        "buf",
        "\"Nothing is written when `buf` is NULL\"",
    ),
];

/// Out-parameters the header documents as written even when the call fails.
pub const WRITTEN_ON_FAILURE: &[(&str, &str, &str)] = &[
    (
        "bc_shape_broadcast",
        "out_ndim",
        "\"`*out_ndim` receives the result's number of dimensions ... as soon as both shapes are \
         read, whatever happens next\"",
    ),
    (
        "bc_shape_broadcast_n",
        "out_ndim",
        "\"`*out_ndim` receives the result's number of dimensions ... as soon as every shape is \
         read, whatever happens next\"",
    ),
];

/// Tensor positions whose valid tensor is bool rather than float32 (besides every `cond`).
pub const BOOL_TENSORS: &[(&str, &str, &str)] = &[
    (
        "bc_isnan_out",
        "out",
        "\"isnan does not support non-boolean outputs\"",
    ),
    (
        "bc_isinf_out",
        "out",
        "\"isinf does not support non-boolean outputs\"",
    ),
    (
        "bc_isfinite_out",
        "out",
        "\"isfinite does not support non-boolean outputs\"",
    ),
    (
        "bc_signbit_out",
        "out",
        "\"signbit does not support non-boolean outputs\"",
    ),
];

/// Exports that do not return a status, and how their answer is judged.
pub const RESULTS: &[(&str, &str, &str)] = &[
    (
        "bc_tensor_is_live",
        "RESULT_LIVE_QUERY",
        "a query, not a checked call: false for NULL and for every handle that is not live, \
         and no error recorded",
    ),
    (
        "bc_last_error_message",
        "RESULT_VALUE",
        "returns the message's length; its one pointer is optional",
    ),
];

/// Exports whose own failures are not recorded as the thread's last error.
pub const UNRECORDED: &[(&str, &str)] = &[
    (
        "bc_last_error_info",
        "\"this failure is not recorded, so the last error stays readable\"",
    ),
    (
        "bc_last_error_shape",
        "\"These failures are not recorded, so the last error stays readable\"",
    ),
];

/// A non-const handle that the call frees rather than writes: no read-only case.
pub const FREED: &[(&str, &str, &str)] = &[(
    "bc_tensor_free",
    "t",
    "it frees the handle and writes no element, so a read-only tensor is freed like any other",
)];

/// What [`generate`] made.
pub struct Generated {
    /// The text of contract_exports.h.
    pub source: String,
    /// Exports given to the harness (those with a pointer parameter).
    pub checked: Vec<String>,
    /// Exports without a pointer parameter: nothing to pass wrong at the boundary.
    pub no_pointer: Vec<String>,
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

fn is_optional(export: &str, param: &str) -> bool {
    OPTIONAL
        .iter()
        .any(|&(e, p, _)| matches(e, export) && p == param)
}

/// One argument: the role the harness knows it by, how many elements it has (arrays), and the C
/// expression that builds it.
struct Arg {
    role: &'static str,
    count: usize,
    expr: String,
}

/// The `size_t` parameter that counts the elements of pointer parameter `i`, if it is an array.
fn count_of(params: &[Param], i: usize) -> Option<usize> {
    let first_after = || {
        params[i + 1..]
            .iter()
            .position(|p| p.ty == "size_t")
            .map(|j| i + 1 + j)
    };
    let next = || (params.get(i + 1)?.ty == "size_t").then_some(i + 1);
    match params[i].ty.as_str() {
        // Arrays: counted by the first size_t after them (`shape, strides, ndim`).
        "const struct bc_tensor *const *"
        | "const int64_t *const *"
        | "const size_t *"
        | "const int64_t *"
        | "const void *"
        | "void *"
        | "char *"
        | "const struct bc_expr_step *" => first_after(),
        // Arrays only when a count follows (`inputs, ninputs`; `buf, cap` but not `*ndim`).
        "const struct bc_geometry *" | "int64_t *" => next(),
        // An array of out-slots (a plural name, `outs`) has one per input handle; `out` is one.
        "struct bc_tensor **" if params[i].name.ends_with('s') => params
            .iter()
            .position(|p| p.ty == "const struct bc_tensor *const *")
            .and_then(|a| count_of(params, a)),
        _ => None,
    }
}

/// The argument for pointer (or function-pointer) parameter `i`, or why there is no rule.
fn pointer_arg(
    proto: &Prototype,
    i: usize,
    fn_types: &[String],
    int_only: &[&str],
    counted: bool,
) -> Result<Arg, String> {
    let p = &proto.params[i];
    let arg = |role, count, expr: String| Ok(Arg { role, count, expr });
    let bool_tensor = BOOL_TENSORS
        .iter()
        .any(|&(e, n, _)| e == proto.name && n == p.name);
    let dtype = if p.name == "cond" || bool_tensor {
        "BC_DTYPE_BOOL"
    } else if int_only.contains(&proto.name.as_str()) {
        "BC_DTYPE_INT32"
    } else {
        "BC_DTYPE_FLOAT32"
    };
    match p.ty.as_str() {
        "const struct bc_tensor *" => arg("ROLE_TENSOR", 0, format!("arg_tensor({i}, {dtype})")),
        "struct bc_tensor *" => {
            let freed = FREED
                .iter()
                .any(|&(e, n, _)| e == proto.name && n == p.name);
            let role = if freed {
                "ROLE_TENSOR_FREED"
            } else {
                "ROLE_TENSOR_WRITTEN"
            };
            arg(role, 0, format!("arg_tensor({i}, {dtype})"))
        }
        "const struct bc_tensor *const *" => arg(
            "ROLE_TENSOR_ARRAY",
            2,
            format!("arg_tensor_array({i}, 2, {dtype})"),
        ),
        "struct bc_tensor **" => {
            let n = if counted { 2 } else { 1 };
            arg("ROLE_OUT_HANDLES", n, format!("arg_out_handles({i}, {n})"))
        }
        "struct DLManagedTensorVersioned **" => arg(
            "ROLE_OUT_DLPACK_VERSIONED",
            1,
            format!("arg_out_handles({i}, 1)"),
        ),
        "struct DLManagedTensor **" => {
            arg("ROLE_OUT_DLPACK", 1, format!("arg_out_handles({i}, 1)"))
        }
        "struct DLManagedTensorVersioned *" => {
            arg("ROLE_MEMORY", 0, format!("arg_dlpack_versioned({i})"))
        }
        "struct DLManagedTensor *" => arg("ROLE_MEMORY", 0, format!("arg_dlpack({i})")),
        "const int64_t *" => {
            // Shapes (2, 3) of the valid tensors, their row-major strides, or dimensions of them.
            let values: &[i64] = match (p.name.as_str(), counted) {
                ("strides", true) => &[3, 1],
                ("dims", true) => &[0, 1],
                (_, true) => &[2, 3],
                (_, false) => &[1],
            };
            let list = values
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let n = values.len();
            arg(
                "ROLE_MEMORY",
                if counted { n } else { 0 },
                format!("arg_in({i}, (const int64_t[]){{{list}}}, sizeof(int64_t[{n}]))"),
            )
        }
        "const int64_t *const *" => {
            arg("ROLE_POINTER_ARRAY", 2, format!("arg_shape_array({i}, 2)"))
        }
        "const size_t *" => arg(
            "ROLE_MEMORY",
            2,
            format!("arg_in({i}, (const size_t[]){{2, 2}}, sizeof(size_t[2]))"),
        ),
        "const struct bc_geometry *" => {
            let n = if counted { 2 } else { 1 };
            arg(
                "ROLE_MEMORY",
                if counted { n } else { 0 },
                format!("arg_geometries({i}, {n}, {dtype})"),
            )
        }
        "const struct bc_expr_step *" => arg(
            "ROLE_MEMORY",
            3,
            format!(
                "arg_in({i}, (const struct bc_expr_step[]){{{{BC_EXPR_INPUT, 0, 0, 0.0}}, \
                 {{BC_EXPR_INPUT, 1, 0, 0.0}}, {{BC_EXPR_OP, BC_OP_ADD, 0, 0.0}}}}, \
                 sizeof(struct bc_expr_step[3]))"
            ),
        ),
        "const struct bc_scalar *" => arg("ROLE_MEMORY", 0, format!("arg_scalar({i})")),
        "const void *" => arg("ROLE_MEMORY", 24, format!("arg_f32_data({i})")),
        "void *" if p.name == "user_data" => arg("ROLE_MEMORY", 0, format!("arg_user_data({i})")),
        // Memory to wrap holds the valid tensor's elements; a buffer to copy them into has room.
        "void *" if p.name == "data" => arg("ROLE_MEMORY", 24, format!("arg_f32_data({i})")),
        "void *" => arg("ROLE_MEMORY", 24, format!("arg_out({i})")),
        "char *" => arg("ROLE_MEMORY", 256, format!("arg_out({i})")),
        "int64_t *" => arg(
            "ROLE_MEMORY",
            if counted { 8 } else { 0 },
            format!("arg_out({i})"),
        ),
        "size_t *"
        | "bool *"
        | "int32_t *"
        | "void **"
        | "struct bc_error_info *"
        | "struct bc_plan *" => arg("ROLE_MEMORY", 0, format!("arg_out({i})")),
        "bc_release_fn" => arg("ROLE_MEMORY", 0, format!("arg_release({i})")),
        "bc_warning_fn" => arg("ROLE_MEMORY", 0, format!("arg_warning_handler({i})")),
        ty if fn_types.iter().any(|f| f == ty) => Err(format!(
            "{}: no rule for the callback type `{ty}` of `{}`",
            proto.name, p.name
        )),
        ty => Err(format!(
            "{}: no rule for the parameter type `{ty}` of `{}`",
            proto.name, p.name
        )),
    }
}

/// The valid value of a parameter that is not a pointer (counts are set from their arrays).
fn value_arg(proto: &Prototype, p: &Param) -> Result<String, String> {
    Ok(match (p.ty.as_str(), p.name.as_str()) {
        ("int32_t", "dtype") => "BC_DTYPE_FLOAT32".into(),
        // Code 0 is an operation of every kind (add, the first unary, sum) and shape a.
        ("int32_t", _) => "0".into(),
        ("int64_t", "dim1" | "stop" | "step") => "1".into(),
        ("int64_t", "end") => "-1".into(),
        ("int64_t", _) => "0".into(),
        ("bool", _) => "false".into(),
        ("double", _) => "1.0".into(),
        ("struct bc_scalar", _) => "bc_scalar_float(2.0)".into(),
        (ty, name) => {
            return Err(format!(
                "{}: no rule for the parameter type `{ty}` of `{name}`",
                proto.name
            ))
        }
    })
}

/// The C for one export, or why it cannot be made.
fn export_source(
    proto: &Prototype,
    fn_types: &[String],
    int_only: &[&str],
) -> Result<(String, String), String> {
    let params = &proto.params;
    let is_pointer = |p: &Param| p.is_pointer() || fn_types.contains(&p.ty);
    // Counts first: which size_t counts which array, and the count each array wants.
    let mut counts: Vec<Option<usize>> = vec![None; params.len()];
    let mut args: Vec<Option<Arg>> = Vec::new();
    for (i, p) in params.iter().enumerate() {
        if !is_pointer(p) {
            args.push(None);
            continue;
        }
        let counter = count_of(params, i);
        let counted = counter.is_some();
        let a = pointer_arg(proto, i, fn_types, int_only, counted)?;
        if counted {
            let c = counter.expect("counted");
            match counts[c] {
                Some(n) if n != a.count => {
                    return Err(format!(
                        "{}: `{}` counts arrays of {n} and {} elements",
                        proto.name, params[c].name, a.count
                    ))
                }
                _ => counts[c] = Some(a.count),
            }
        }
        args.push(Some(a));
    }

    let result = match (
        proto.ret.as_str(),
        RESULTS.iter().find(|r| r.0 == proto.name),
    ) {
        (_, Some(r)) => r.1,
        ("int32_t", None) => "RESULT_STATUS",
        ("void", None) => "RESULT_VOID",
        (ret, None) => {
            return Err(format!(
                "{}: returns `{ret}`, neither a status nor void; say how to judge it in RESULTS",
                proto.name
            ))
        }
    };
    let recorded = !UNRECORDED.iter().any(|u| u.0 == proto.name);

    let mut call = format!(
        "/* {} {}({}) */\nstatic int64_t call_{}(void) {{\n",
        proto.ret,
        proto.name,
        params
            .iter()
            .map(|p| format!(
                "{}{}{}",
                p.ty,
                if p.ty.ends_with('*') { "" } else { " " },
                p.name
            ))
            .collect::<Vec<_>>()
            .join(", "),
        proto.name
    );
    let mut table = format!(
        "    {{\"{}\", {result}, {recorded}, {}, {{",
        proto.name,
        params.len()
    );
    for (i, p) in params.iter().enumerate() {
        let (expr, role, count) = match &args[i] {
            Some(a) => (
                format!("contract_null_at({i}) ? NULL : ({})({})", p.ty, a.expr),
                a.role,
                a.count,
            ),
            None => match counts[i] {
                Some(n) => (n.to_string(), "ROLE_VALUE", 0),
                None => (value_arg(proto, p)?, "ROLE_VALUE", 0),
            },
        };
        writeln!(call, "    {} a{i} = {expr};", p.ty).unwrap();
        write!(
            table,
            "{}{{\"{}\", {role}, {count}, {}, {}}}",
            if i > 0 { ", " } else { "" },
            p.name,
            is_optional(&proto.name, &p.name),
            WRITTEN_ON_FAILURE
                .iter()
                .any(|&(e, n, _)| e == proto.name && n == p.name)
        )
        .unwrap();
    }
    call.push_str("    contract_before_call();\n");
    let actuals = (0..params.len())
        .map(|i| format!("a{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    if proto.ret == "void" {
        writeln!(
            call,
            "    {}({actuals});\n    return bc_last_error_status();\n}}",
            proto.name
        )
        .unwrap();
    } else {
        writeln!(call, "    return (int64_t){}({actuals});\n}}", proto.name).unwrap();
    }
    writeln!(table, "}}, call_{}}},", proto.name).unwrap();
    Ok((call, table))
}

/// The listed exceptions that no longer match the header (each must name what it excuses).
pub fn stale_exceptions(protos: &[Prototype]) -> Vec<String> {
    let mut errors = Vec::new();
    let declares = |e: &str, p: &str| {
        protos
            .iter()
            .any(|f| matches(e, &f.name) && f.params.iter().any(|q| q.name == p))
    };
    for &(e, p, _) in OPTIONAL
        .iter()
        .chain(FREED)
        .chain(WRITTEN_ON_FAILURE)
        .chain(BOOL_TENSORS)
    {
        if !declares(e, p) {
            errors.push(format!(
                "listed exception `{e}` `{p}` matches no parameter of the header"
            ));
        }
    }
    for name in RESULTS
        .iter()
        .map(|r| r.0)
        .chain(UNRECORDED.iter().map(|u| u.0))
    {
        if !protos.iter().any(|f| f.name == name) {
            errors.push(format!(
                "listed exception `{name}` is not an export of the header"
            ));
        }
    }
    errors
}

/// contract_exports.h for `protos`, or every reason it cannot be made. `int_only` names the
/// exports whose operation has no floating-point kernel (the operation tables say which): their
/// valid tensors are int32.
pub fn generate(
    protos: &[Prototype],
    fn_types: &[String],
    int_only: &[&str],
) -> Result<Generated, Vec<String>> {
    let mut errors = Vec::new();
    let mut calls = String::new();
    let mut table = String::new();
    let mut checked = Vec::new();
    let mut no_pointer = Vec::new();
    let max_params = protos.iter().map(|p| p.params.len()).max().unwrap_or(0);
    for proto in protos {
        if !proto
            .params
            .iter()
            .any(|p| p.is_pointer() || fn_types.contains(&p.ty))
        {
            no_pointer.push(proto.name.clone());
            continue;
        }
        match export_source(proto, fn_types, int_only) {
            Ok((c, t)) => {
                calls.push_str(&c);
                calls.push('\n');
                table.push_str(&t);
                checked.push(proto.name.clone());
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let source = format!(
        "/* Generated by testkit/src/contract.rs from include/broadcast.h for c_tests/contract.c, \
         each time the test runs. */\n\
         _Static_assert({max_params} <= CONTRACT_MAX_PARAMS, \"an export has more parameters than \
         contract.c holds\");\n\n{calls}\
         static const contract_export CONTRACT_EXPORTS[] = {{\n{table}}};\n"
    );
    Ok(Generated {
        source,
        checked,
        no_pointer,
    })
}
