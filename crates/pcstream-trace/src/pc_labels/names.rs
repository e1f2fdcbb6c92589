//! How a frame of a PC's call path reads in a label: a symbol without its C++ parameter list
//! (`ns::f(int) const` → `ns::f`), else `module+0xOFFSET` with the module's file name.

use super::Frame;

/// Whitespace as Python's `str.isspace` (and its `re` module's `\s`) has it: Unicode's, and the
/// four information separators U+001C–U+001F, which the labels' first version, written in Python,
/// stripped too — the labels stay byte for byte what they were.
fn space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Qualifiers after a C++ parameter list, dropped (up to three, `f() const &&` reads `f`).
const QUALIFIERS: [&str; 5] = ["const", "volatile", "noexcept", "&&", "&"];

/// `s` without a last ` [clone .suffix]` (a compiler's copy of a function) and the spaces before it.
fn without_clone(s: &str) -> &str {
    let Some(body) = s.strip_suffix(']') else {
        return s;
    };
    // The first "[clone " after the body's last ']': what a regular expression's leftmost
    // match of `\s*\[clone [^\]]*\]$` removes.
    let after = body.rfind(']').map_or(0, |r| r + 1);
    match body[after..].find("[clone ") {
        Some(i) => s[..after + i].trim_end_matches(space),
        None => s,
    }
}

/// `s` without a last qualifier word (`const`, `&&`, …) and the spaces before it.
fn without_qualifier(s: &str) -> &str {
    let Some((i, c)) = s.char_indices().rev().find(|&(_, c)| space(c)) else {
        return s;
    };
    if QUALIFIERS.contains(&&s[i + c.len_utf8()..]) {
        s[..i].trim_end_matches(space)
    } else {
        s
    }
}

/// A demangled C++ name without its parameter list and qualifiers:
/// `ns::f(int, std::string const&) const` → `ns::f`; other names unchanged.
pub fn short_symbol(symbol: &str) -> &str {
    let mut s = without_clone(symbol.trim_matches(space));
    for _ in 0..3 {
        s = without_qualifier(s);
    }
    if !s.ends_with(')') {
        return s;
    }
    let mut depth = 0usize;
    for (i, b) in s.bytes().enumerate().rev() {
        if b == b')' {
            depth += 1;
        } else if b == b'(' {
            depth -= 1;
            if depth == 0 {
                let head = s[..i].trim_end_matches(space);
                // "(anonymous namespace)" or "operator()" is part of the name, not its parameters.
                return if !head.is_empty() && !head.ends_with("operator") {
                    head
                } else {
                    s
                };
            }
        }
    }
    s
}

/// The file name of a module path (`/usr/lib/libc.so.6` → `libc.so.6`).
pub(super) fn base_name(module: &str) -> &str {
    module.rsplit('/').next().unwrap_or(module)
}

/// `module+0xOFFSET`, `?` for a module without a name.
fn module_offset(frame: &Frame) -> String {
    let module = if frame.module.is_empty() {
        "?"
    } else {
        base_name(frame.module)
    };
    format!("{module}+{:#x}", frame.offset)
}

/// The frame's short symbol when it has one, else `module+0xOFFSET`.
pub(super) fn frame_name(frame: &Frame) -> String {
    match frame.symbol {
        Some(symbol) => short_symbol(symbol).to_string(),
        None => module_offset(frame),
    }
}

/// The frame with its call site even when it has a symbol (two call sites in one function).
pub(super) fn exact_name(frame: &Frame) -> String {
    match frame.symbol {
        Some(symbol) => format!("{} ({})", short_symbol(symbol), module_offset(frame)),
        None => module_offset(frame),
    }
}

/// The label's frames at `depths` (innermost 0), outermost first: ` → ` between adjacent frames,
/// ` → … → ` over the ones left out; those in `exact` by their call site.
pub(super) fn render(path: &[Frame], depths: &[usize], exact: &[usize]) -> String {
    let mut ordered = depths.to_vec();
    ordered.sort_unstable_by(|a, b| b.cmp(a));
    ordered.dedup();
    let mut text = String::new();
    for (k, &depth) in ordered.iter().enumerate() {
        if k > 0 {
            text.push_str(if ordered[k - 1] == depth + 1 {
                " → "
            } else {
                " → … → "
            });
        }
        let frame = &path[depth];
        text.push_str(&if exact.contains(&depth) {
            exact_name(frame)
        } else {
            frame_name(frame)
        });
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_symbols_drop_parameters_qualifiers_and_clones() {
        let cases = [
            (
                "rocksdb::BuildTable(std::string const&, int) const",
                "rocksdb::BuildTable",
            ),
            ("(anonymous namespace)::f(int)", "(anonymous namespace)::f"),
            (
                "std::function<void ()>::operator()() const",
                "std::function<void ()>::operator()",
            ),
            ("main", "main"),
            ("f [clone .a[clone .b]", "f"),
            ("g(int) [clone .isra.0]", "g"),
            ("u(int) const [clone .constprop.0]", "u"),
            ("t [clone .cold] [clone .x]", "t [clone .cold]"),
            ("h(int) &&", "h"),
            ("x  volatile", "x"),
            ("  spaced  ", "spaced"),
            ("operator()", "operator()"),
            ("v\u{1c}", "v"),
            ("const", "const"),
        ];
        for (symbol, short) in cases {
            assert_eq!(short_symbol(symbol), short, "{symbol}");
        }
    }

    #[test]
    fn frames_without_symbols_read_as_module_and_offset() {
        let frame = |module: &'static str, symbol: Option<&'static str>| Frame {
            module,
            offset: 0x11a0,
            symbol,
        };
        assert_eq!(
            frame_name(&frame("/usr/lib/libc.so.6", None)),
            "libc.so.6+0x11a0"
        );
        assert_eq!(frame_name(&frame("", None)), "?+0x11a0");
        assert_eq!(
            exact_name(&frame("/bin/app", Some("f(int)"))),
            "f (app+0x11a0)"
        );
        let path = [
            frame("/bin/app", Some("a")),
            frame("/bin/app", Some("b")),
            frame("/bin/app", Some("c")),
        ];
        assert_eq!(render(&path, &[0, 2, 0], &[]), "c → … → a");
        assert_eq!(render(&path, &[1, 2], &[1]), "c → b (app+0x11a0)");
    }
}
