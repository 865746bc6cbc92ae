//! Schema descriptions -> rustdoc lines that render as written and never run as doctests.
//!
//! Descriptions are Markdown-ish prose written for Go. Printed as `///` lines unchanged,
//! rustdoc would compile their code blocks as doctests, take `<name>` for an HTML tag,
//! `[x]` for an intra-doc link and warn about bare URLs. [`doc_lines`] rewrites them:
//!
//! - fenced blocks (```` ``` ```` or `~~~`, with or without a language) become
//!   ```` ```text ```` blocks, their content unchanged;
//! - indented code blocks (four spaces or a tab, after a blank line) become
//!   ```` ```text ```` blocks with the indent removed;
//! - outside code, `<`, `>`, `[` and `]` are escaped with a backslash, and bare
//!   `http(s)://` URLs are wrapped in `<...>` so rustdoc links them;
//! - inline code spans (`` `...` ``) are left as they are;
//! - tabs become four spaces and trailing whitespace is trimmed.
//!
//! What it does not do: reflow text or fix Markdown the author got wrong. Generated files
//! carry a documented `#![allow(...)]` header for the lints such prose still trips.

/// Rewrites a description into doc-comment lines (without the leading `///`).
pub fn doc_lines(description: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    let mut indented = false;
    let mut previous_blank = true;
    for raw in description.replace("\r\n", "\n").split('\n') {
        // A bare CR cannot appear in a doc comment (rustc refuses it).
        let line = raw.replace('\t', "    ").replace('\r', "");
        let line = line.trim_end();
        let trimmed = line.trim_start();
        if let Some(marker) = &fence {
            if trimmed.starts_with(marker.as_str()) {
                out.push("```".to_owned());
                fence = None;
                previous_blank = false;
            } else {
                out.push(line.to_owned());
            }
            continue;
        }
        let leading = line.len() - trimmed.len();
        if indented {
            if trimmed.is_empty() || leading >= 4 {
                out.push(line.get(4..).unwrap_or(trimmed).to_owned());
                continue;
            }
            close_indented(&mut out);
            indented = false;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let marker = trimmed[..3].to_owned();
            out.push("```text".to_owned());
            fence = Some(marker);
            continue;
        }
        if leading >= 4 && previous_blank && !trimmed.is_empty() {
            out.push("```text".to_owned());
            out.push(line.get(4..).unwrap_or(trimmed).to_owned());
            indented = true;
            continue;
        }
        previous_blank = trimmed.is_empty();
        out.push(escape_line(line));
    }
    if indented {
        close_indented(&mut out);
    }
    if fence.is_some() {
        out.push("```".to_owned());
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.is_empty()) {
        out.remove(0);
    }
    out
}

fn close_indented(out: &mut Vec<String>) {
    let mut trailing_blank = 0;
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
        trailing_blank += 1;
    }
    out.push("```".to_owned());
    out.extend(std::iter::repeat_n(String::new(), trailing_blank));
}

/// Escapes one prose line, leaving inline code spans alone; a line that would read as a
/// marker (`+name`) gets its `+` escaped.
fn escape_line(line: &str) -> String {
    let escaped = escape_spans(line);
    let trimmed = escaped.trim_start();
    if trimmed
        .strip_prefix('+')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic()))
    {
        let indent = escaped.len() - trimmed.len();
        return format!("{}\\{}", &escaped[..indent], trimmed);
    }
    escaped
}

fn escape_spans(line: &str) -> String {
    if !line.matches('`').count().is_multiple_of(2) {
        return escape_text(line);
    }
    let mut out = String::with_capacity(line.len() + 8);
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 1 {
            out.push('`');
            out.push_str(part);
            out.push('`');
        } else {
            out.push_str(&escape_text(part));
        }
    }
    out
}

fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(start) = find_url(rest) {
        escape_chars(&rest[..start], &mut out);
        let url_len = rest[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '`' | '\\'))
            .unwrap_or(rest.len() - start);
        let mut url = &rest[start..start + url_len];
        while url.ends_with(['.', ',', ';', ':', ')', ']', '\'', '!', '?']) {
            url = &url[..url.len() - 1];
        }
        if url.len() <= "https://".len() {
            escape_chars(url, &mut out);
        } else {
            out.push('<');
            out.push_str(url);
            out.push('>');
        }
        rest = &rest[start + url.len()..];
    }
    escape_chars(rest, &mut out);
    out
}

fn find_url(text: &str) -> Option<usize> {
    let http = text.find("http://");
    let https = text.find("https://");
    match (http, https) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn escape_chars(text: &str, out: &mut String) {
    for c in text.chars() {
        if matches!(c, '<' | '>' | '[' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The description a doc comment written by [`doc_lines`] reads back as: the inverse of
/// the escaping (`\\<` -> `<`, `<https://...>` -> `https://...`, an added ```` ```text ````
/// fence -> ```` ``` ````). Exact for most prose; where it is not (tabs, trailing spaces,
/// indented code, fences with a language), callers compare and carry the exact text.
pub fn read_back(description: &str) -> String {
    unescape_lines(&doc_lines(description))
}

/// Doc comment lines (one leading space already removed) -> the description they carry.
pub fn unescape_lines<S: AsRef<str>>(lines: &[S]) -> String {
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut fence = false;
    for line in lines {
        let line = line.as_ref();
        if fence {
            if line.trim_start().starts_with("```") {
                fence = false;
                out.push(line.trim_start().to_owned());
            } else {
                out.push(line.to_owned());
            }
            continue;
        }
        if line.trim_start().starts_with("```") {
            fence = true;
            let trimmed = line.trim_start();
            let indent = &line[..line.len() - trimmed.len()];
            out.push(if trimmed == "```text" {
                format!("{indent}```")
            } else {
                line.to_owned()
            });
            continue;
        }
        out.push(unescape_line(line));
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.trim().is_empty()) {
        out.remove(0);
    }
    out.join("\n")
}

fn unescape_line(line: &str) -> String {
    if !line.matches('`').count().is_multiple_of(2) {
        return unescape_text(line);
    }
    let mut out = String::with_capacity(line.len());
    for (i, part) in line.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(part);
        } else {
            out.push_str(&unescape_text(part));
        }
    }
    out
}

fn unescape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\\' {
            if let Some(next) = rest[1..].chars().next() {
                if matches!(next, '<' | '>' | '[' | ']' | '+') {
                    out.push(next);
                    rest = &rest[1 + next.len_utf8()..];
                    continue;
                }
            }
        }
        if c == '<' && (rest[1..].starts_with("http://") || rest[1..].starts_with("https://")) {
            if let Some(end) = rest.find('>') {
                out.push_str(&rest[1..end]);
                rest = &rest[end + 1..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{doc_lines, read_back};

    #[test]
    fn escaped_prose_reads_back_exactly() {
        for d in [
            "Use <name> see https://example.com/a. and `<keep>` [x] \\[y\\]",
            "<https://x> and a\\<b",
            "+marker-looking line\n  +indented",
            "Example:\n```\nkey: <value>\n```\nafter [x]",
            "odd ` backtick <a>",
        ] {
            assert_eq!(read_back(d), d, "{:?}", doc_lines(d));
        }
        assert!(doc_lines("+optional").iter().all(|l| !l.starts_with('+')));
    }

    #[test]
    fn fenced_blocks_become_text() {
        let lines = doc_lines("Example:\n```yaml\nkey: <value>\n```\nafter [x]");
        assert_eq!(
            lines,
            [
                "Example:",
                "```text",
                "key: <value>",
                "```",
                "after \\[x\\]"
            ]
        );
    }

    #[test]
    fn indented_blocks_become_text_fences() {
        let lines = doc_lines("Run:\n\n    fn main() {}\n    more\n\nDone");
        assert_eq!(
            lines,
            [
                "Run:",
                "",
                "```text",
                "fn main() {}",
                "more",
                "```",
                "",
                "Done"
            ]
        );
    }

    #[test]
    fn placeholders_urls_and_inline_code() {
        let lines = doc_lines("Use <name> see https://example.com/a. and `<keep>`");
        assert_eq!(
            lines,
            ["Use \\<name\\> see <https://example.com/a>. and `<keep>`"]
        );
    }

    #[test]
    fn unicode_indentation_never_splits_a_character() {
        let lines = doc_lines("a\n\n\u{3000}\u{3000}x\n\n\u{a0}\u{a0}\u{a0}y");
        assert!(lines.iter().any(|l| l.contains('x')));
        assert!(lines.iter().any(|l| l.contains('y')));
    }

    #[test]
    fn unterminated_fence_is_closed() {
        assert_eq!(doc_lines("```\ncode"), ["```text", "code", "```"]);
    }
}
