//! Text helpers of the importers: bounded line reading and the field splitters and integer
//! parser every format uses. Nothing here allocates per line.

use std::io::BufRead;

/// The longest line an importer accepts, in bytes (without its newline). Field traces have
/// lines of tens of bytes; a longer one means the input is not such a trace (a binary file, a
/// file of zeros), and reading it whole could exhaust memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line (possibly the last one, without a newline) is in the buffer.
    Text,
    /// The end of the input.
    End,
    /// The line is longer than the limit; the buffer holds its first bytes only.
    TooLong,
}

/// Read one line into `buf` (cleared first; the newline is not kept), stopping at `limit` bytes.
pub fn read_line(r: &mut dyn BufRead, buf: &mut Vec<u8>, limit: usize) -> std::io::Result<Line> {
    buf.clear();
    let mut any = false;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(if any { Line::Text } else { Line::End });
        }
        any = true;
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > limit {
            let room = limit - buf.len();
            buf.extend_from_slice(&chunk[..room]);
            r.consume(room);
            return Ok(Line::TooLong);
        }
        buf.extend_from_slice(&chunk[..take]);
        r.consume(take + done as usize);
        if done {
            return Ok(Line::Text);
        }
    }
}

/// Parse a field as an unsigned integer (surrounding blanks allowed), naming it in the error.
/// A byte loop rather than `str::parse`: this is the importers' innermost step.
pub(crate) fn num(field: &str, what: &str) -> Result<u64, String> {
    let t = field.trim_matches([' ', '\t']);
    let mut v = 0u64;
    let mut overflow = false;
    let ok = !t.is_empty()
        && t.bytes().all(|b| {
            let d = b.wrapping_sub(b'0');
            if d >= 10 {
                return false;
            }
            match v.checked_mul(10).and_then(|x| x.checked_add(d as u64)) {
                Some(x) => {
                    v = x;
                    true
                }
                None => {
                    overflow = true;
                    false
                }
            }
        });
    if ok {
        Ok(v)
    } else if overflow {
        Err(format!("{what} '{t:.40}' is larger than 2^64 - 1"))
    } else {
        Err(format!(
            "{what} '{:.40}' is not a non-negative integer",
            field.trim()
        ))
    }
}

/// `value × factor` for a field read as `what` in units `unit`: an error quoting the field as
/// written when the product does not fit 64 bits.
pub(crate) fn scaled(value: u64, factor: u64, what: &str, unit: &str) -> Result<u64, String> {
    value.checked_mul(factor).ok_or_else(|| {
        format!("{what} {value} ({unit}) overflows 64 bits once converted; fix the line")
    })
}

/// Split a CSV line into exactly `N` fields (no allocation; one pass over the bytes).
pub(crate) fn fields<'a, const N: usize>(
    line: &'a str,
    layout: &str,
) -> Result<[&'a str; N], String> {
    let mut out = [""; N];
    let mut n = 0;
    let mut from = 0;
    for (i, &b) in line.as_bytes().iter().enumerate() {
        if b == b',' {
            if n < N {
                // ',' is ASCII, so `from..i` lies on character boundaries.
                out[n] = &line[from..i];
            }
            n += 1;
            from = i + 1;
        }
    }
    if n < N {
        out[n] = &line[from..];
    }
    n += 1;
    if n != N {
        return Err(format!(
            "expected {N} comma-separated fields ({layout}), found {n}"
        ));
    }
    Ok(out)
}

/// Split a line at runs of whitespace into exactly `N` fields (no allocation).
pub(crate) fn words<'a, const N: usize>(
    line: &'a str,
    layout: &str,
) -> Result<[&'a str; N], String> {
    let mut out = [""; N];
    let mut it = line.split_ascii_whitespace();
    let mut n = 0;
    for f in it.by_ref() {
        if n == N {
            n += 1;
            break;
        }
        out[n] = f;
        n += 1;
    }
    if n != N {
        let found = n + it.count();
        return Err(format!(
            "expected {N} space-separated fields ({layout}), found {found}"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded() {
        let data = b"ab\ncdef\n\nlast".to_vec();
        let mut r = std::io::BufReader::with_capacity(3, &data[..]);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        loop {
            match read_line(&mut r, &mut buf, 3).unwrap() {
                Line::End => break,
                k => got.push((k, String::from_utf8(buf.clone()).unwrap())),
            }
            if got.last().unwrap().0 == Line::TooLong {
                break;
            }
        }
        assert_eq!(
            got,
            vec![
                (Line::Text, "ab".to_string()),
                (Line::TooLong, "cde".to_string())
            ]
        );
    }

    #[test]
    fn numbers_overflow_cleanly() {
        assert_eq!(num(" 42 ", "x"), Ok(42));
        assert_eq!(num("18446744073709551615", "x"), Ok(u64::MAX));
        let e = num("18446744073709551616", "Offset").unwrap_err();
        assert!(
            e.contains("Offset '18446744073709551616'") && e.contains("2^64"),
            "{e}"
        );
        assert!(num("-1", "x")
            .unwrap_err()
            .contains("not a non-negative integer"));
        let e = scaled(u64::MAX / 100, 512, "Offset", "sectors").unwrap_err();
        assert!(e.contains(&(u64::MAX / 100).to_string()), "{e}");
    }
}
