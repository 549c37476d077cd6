//! The C API as `include/broadcast.h` declares it: every exported function's prototype (return
//! type, name, parameters), read from cbindgen's output. One parser for every test that walks the
//! exports (fault injection, the export list, the boundary contract), so a new export is seen the
//! same way by all of them.
//!
//! The header is plain C: comments and preprocessor lines are dropped, the rest is split into
//! statements at `;`, and a statement of the form `<return type> bc_<name>(<parameters>)` is a
//! prototype (typedefs and struct fields are not, nor anything without the `bc_` prefix).

/// One parameter: its C type, spelled with single spaces (`const struct bc_tensor *const *`), and
/// its name.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub ty: String,
    pub name: String,
}

impl Param {
    /// Whether the parameter is a pointer (a `*` in its type; function-pointer typedefs such as
    /// `bc_release_fn` are named by [`function_pointer_types`]).
    pub fn is_pointer(&self) -> bool {
        self.ty.contains('*')
    }
}

/// One exported function.
#[derive(Clone, Debug, PartialEq)]
pub struct Prototype {
    /// The return type without `BC_MUST_USE` (`int32_t`, `void`, `const char *`).
    pub ret: String,
    pub name: String,
    /// Empty for `(void)`.
    pub params: Vec<Param>,
}

/// The text of `include/broadcast.h`.
pub fn header_text() -> String {
    std::fs::read_to_string(crate::repo_root().join("include/broadcast.h"))
        .expect("include/broadcast.h (cargo build generates it)")
}

/// The header without comments and preprocessor lines.
fn code_of(header: &str) -> String {
    let mut code = String::with_capacity(header.len());
    let mut rest = header;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                code.push_str(&rest[..b]);
                rest = rest[b..].find("*/").map_or("", |e| &rest[b + e + 2..]);
            }
            (_, Some(l)) => {
                code.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |e| &rest[l + e..]);
            }
            _ => {
                code.push_str(rest);
                break;
            }
        }
    }
    code.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Collapses runs of whitespace to one space and puts `*` against what follows it:
/// `const struct bc_tensor * const*` becomes `const struct bc_tensor *const *`.
fn normalize(s: &str) -> String {
    let spaced = s.replace('*', " * ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 && !words[i - 1].ends_with('*') {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

fn parse_param(text: &str) -> Param {
    let text = normalize(text);
    let split = text
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let (ty, name) = text.split_at(split);
    Param {
        ty: ty.trim_end().to_owned(),
        name: name.to_owned(),
    }
}

/// Every `bc_` function the header declares, in header order.
pub fn parse(header: &str) -> Vec<Prototype> {
    let code = code_of(header);
    let mut protos = Vec::new();
    for statement in code.split(';') {
        // What follows the last brace: a struct's or `extern "C"`'s opening is not part of it.
        let statement = statement
            .rfind(['{', '}'])
            .map_or(statement, |i| &statement[i + 1..])
            .trim();
        if statement.starts_with("typedef") || !statement.ends_with(')') {
            continue;
        }
        let Some(open) = statement.find('(') else {
            continue;
        };
        let head = normalize(&statement[..open]);
        let name_at = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &head[name_at..];
        if !name.starts_with("bc_") {
            continue;
        }
        let ret = head[..name_at]
            .trim_end()
            .trim_start_matches("BC_MUST_USE")
            .trim()
            .to_owned();
        let inner = &statement[open + 1..statement.len() - 1];
        assert!(
            !inner.contains('('),
            "{name}: a parameter of function-pointer type written out in the prototype; cbindgen \
             writes them as typedefs, which this parser expects: {statement}"
        );
        let params = if inner.trim() == "void" {
            Vec::new()
        } else {
            inner.split(',').map(parse_param).collect()
        };
        protos.push(Prototype {
            ret,
            name: name.to_owned(),
            params,
        });
    }
    protos
}

/// The prototypes of `include/broadcast.h`.
pub fn prototypes() -> Vec<Prototype> {
    parse(&header_text())
}

/// The names of the exported functions, sorted.
pub fn exported_functions() -> Vec<String> {
    let mut names: Vec<String> = prototypes().into_iter().map(|p| p.name).collect();
    names.sort();
    names.dedup();
    names
}

/// The function-pointer types the header defines (`typedef void (*bc_release_fn)(...)`).
pub fn function_pointer_types(header: &str) -> Vec<String> {
    code_of(header)
        .split(';')
        .filter_map(|s| {
            let s = s.trim();
            let rest = s.strip_prefix("typedef")?;
            let star = rest.find("(*")?;
            let close = rest[star..].find(')')?;
            Some(rest[star + 2..star + close].trim().to_owned())
        })
        .collect()
}
