//! controller-gen's `+kubebuilder:metadata:annotations=...,labels=...`: the CRD's own
//! annotations and labels, each argument a list of `key=value` strings.

/// One argument: its name (`annotations`) and its list of `key=value` strings.
pub(super) type Arg = (String, Vec<String>);

/// The arguments of `+kubebuilder:metadata:` (`annotations=...,labels=...`), each a
/// list in controller-gen's syntax: one string, strings separated by `;`, or
/// `{"a", "b"}`; a string is quoted (`"..."`, JSON escapes), backquoted, or bare.
pub(super) fn metadata_args(text: &str) -> Result<Vec<Arg>, (String, String)> {
    let bad = |problem: String| {
        (
            problem,
            "write `+kubebuilder:metadata:annotations=\"key=value\"` (repeat the marker for more)"
                .to_owned(),
        )
    };
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            return Err(bad(format!("`{rest}` has no `=`")));
        };
        rest = after.trim_start();
        let braced = rest.starts_with('{');
        if braced {
            rest = &rest[1..];
        }
        let mut items = Vec::new();
        loop {
            rest = rest.trim_start();
            let (item, after) = list_item(rest).map_err(bad)?;
            items.push(item);
            rest = after.trim_start();
            match (braced, rest.chars().next()) {
                (true, Some(',')) | (false, Some(';')) => rest = &rest[1..],
                (true, Some('}')) => {
                    rest = rest[1..].trim_start();
                    break;
                }
                (true, _) => return Err(bad(format!("`{text}` opens `{{` and never closes it"))),
                (false, _) => break,
            }
        }
        out.push((key.trim().to_owned(), items));
        match rest.strip_prefix(',') {
            Some(r) => rest = r.trim_start(),
            None if rest.is_empty() => {}
            None => return Err(bad(format!("unexpected `{rest}` in `{text}`"))),
        }
    }
    Ok(out)
}

/// One string at the start of `s` and what follows it.
fn list_item(s: &str) -> Result<(String, &str), String> {
    if let Some(body) = s.strip_prefix('"') {
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => {
                    let quoted = &s[..i + 2];
                    let value = serde_json::from_str(quoted)
                        .map_err(|e| format!("`{quoted}` is not a valid quoted string: {e}"))?;
                    return Ok((value, &body[i + 1..]));
                }
                _ => escaped = false,
            }
        }
        return Err(format!("`{s}` opens a quote and never closes it"));
    }
    if let Some(body) = s.strip_prefix('`') {
        return match body.split_once('`') {
            Some((value, after)) => Ok((value.to_owned(), after)),
            None => Err(format!("`{s}` opens a backquote and never closes it")),
        };
    }
    let end = s.find([';', ',', '}']).unwrap_or(s.len());
    Ok((s[..end].trim().to_owned(), &s[end..]))
}
